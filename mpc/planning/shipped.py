"""The converged hopper-holes plan shipped with the package (mpc/planning/data/).

`python -m launch run hopper-holes` tracks runs/plans/hopper-holes/plan.npz when that file
exists (a plan the user made) and the shipped plan otherwise, after checking that the shipped
plan's model hash (`plan_hash.plan_hash`: the hopper, the task with its holes, the NLP's
options) is today's. The shipped file holds what the run reads (t, q, v, t_grid, u and the
holes), the NLP's primal vector w (a warm start, and what the verification checks), the task
and options it solves as JSON (`meta`) and its `model_hash`.

    path, source = resolve_plan("runs/plans/hopper-holes/plan.npz")    # source "file" or "shipped"
    make_shipped("runs/plans/hopper-holes")   # verify a made plan, write the shipped file (dev)
    plan, info = warm_start(HopperTask())     # re-converge from the shipped w (nosnoc)
"""
from __future__ import annotations

import dataclasses
import json
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np

from robots import get_robot

from .hopper_holes import HoleTerrain, HopperTask, hopper_options, terrain_arrays
from .ocp import PlannerOptions
from .plan_hash import plan_hash, task_dict

SHIPPED_PLAN = Path(__file__).parent / "data" / "hopper-holes-plan.npz"
DEFAULT_PLAN = Path("runs/plans/hopper-holes/plan.npz")  # where `plan hopper-holes` writes, relative to the working folder
FORMAT = 1
REMAKE = "python -m launch plan hopper-holes --warm-start"
FROM_SCRATCH = "python -m launch plan hopper-holes"
SHIP = "python -m launch plan hopper-holes --ship"
# the warm start runs the last, tightest NLPs of a terrain-scale step: sigma from WARM_SIGMA_0
# down to comp_tol (1e-6) by halving, 8 NLPs (a scale step starts at 1e-2: 14)
WARM_SIGMA_0 = 1e-4
# arrays of a plan.npz the shipped file keeps (the dense tau, interval and state_index are left out)
KEPT = ("t", "q", "v", "t_grid", "u", "q_grid", "v_grid", "s", "mode", "w")

Progress = Callable[[str], None]


@lru_cache(maxsize=None)
def expected_hash(task: HopperTask = HopperTask()) -> str:
    """Today's model hash of `task` (default: the hopper-holes task) on today's hopper, with the
    hopper-holes NLP options (`hopper_options()`; the terrain-scale steps and the warm start
    change only homotopy fields, which the hash leaves out)."""
    return plan_hash(get_robot("hopper"), task, hopper_options())


def read_meta(path: Path | str) -> tuple[str, dict]:
    """(model_hash, meta dict) of a shipped plan file; ValueError if it is not one."""
    with np.load(path) as d:
        if "model_hash" not in d or "meta" not in d:
            raise ValueError(f"{path} is not a shipped plan file (no model_hash/meta); write it with `{SHIP}`")
        return str(d["model_hash"]), json.loads(str(d["meta"]))


def check_shipped(path: Path | str = SHIPPED_PLAN) -> dict:
    """Raise ValueError unless the shipped plan file exists and was made for today's hopper,
    hopper-holes task and NLP options (its model hash equals `expected_hash()`); returns its meta."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"the shipped hopper-holes plan {str(path)!r} is missing (a damaged install?); make a "
                         f"plan with `{FROM_SCRATCH}` (about 1.5 h; it writes {DEFAULT_PLAN})")
    stored, meta = read_meta(path)
    today = expected_hash()
    if stored != today:
        raise ValueError(
            f"the shipped hopper-holes plan {str(path)!r} was made for model hash {stored}, but today's hopper, "
            f"holes and planner options hash to {today}: the robot, the task or the planner changed since it was "
            f"made. Make a plan for today's model with `{REMAKE}` (minutes, from the shipped plan; or from scratch "
            f"with `{FROM_SCRATCH}`, about 1.5 h): it writes {DEFAULT_PLAN}, which the run then uses. "
            f"To ship that plan with the package: `{SHIP}`")
    return meta


def resolve_plan(path: Path | str) -> tuple[Path, str]:
    """The plan file a run tracks for the plan option `path`: (path, "file") if it exists; the
    shipped plan, (SHIPPED_PLAN, "shipped"), if `path` is the default runs/plans/hopper-holes/
    plan.npz (relative to the working folder) and it does not exist, after `check_shipped`.
    ValueError otherwise, naming the command that makes the plan."""
    p = Path(path)
    if p.is_file():
        return p, "file"
    if p.resolve() == DEFAULT_PLAN.resolve():
        check_shipped(SHIPPED_PLAN)
        return SHIPPED_PLAN, "shipped"
    raise ValueError(f"mpc plan {str(path)!r} does not exist; make it with `{FROM_SCRATCH}` (about 1.5 h; it writes "
                     f"{DEFAULT_PLAN}) or `{REMAKE}` (minutes), or track the shipped plan by leaving the plan "
                     f"option at {str(DEFAULT_PLAN)!r}")


def task_from_dict(data: dict) -> HopperTask:
    """Inverse of `plan_hash.task_dict`."""
    fields = {f.name for f in dataclasses.fields(HopperTask)}
    unknown = set(data) - fields
    if unknown:
        raise ValueError(f"task has unknown fields {sorted(unknown)} (fields: {sorted(fields)})")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k != "terrain"}
    if "terrain" in data:
        t = data["terrain"]
        values["terrain"] = HoleTerrain(centers=tuple(t["centers"]), semi_x=t["semi_x"], semi_z=t["semi_z"])
    return HopperTask(**values)


def options_from_dict(data: dict) -> PlannerOptions:
    """`PlannerOptions` from its JSON form (`dataclasses.asdict`, lists for tuples)."""
    data = dict(data)
    data["ipopt_extra"] = tuple(tuple(kv) for kv in data.get("ipopt_extra", ()))
    return PlannerOptions(**data)


def read_plan(path: Path | str) -> tuple[dict[str, np.ndarray], HopperTask, PlannerOptions, str]:
    """(arrays, task, options, model_hash) of a shipped plan file."""
    stored, meta = read_meta(path)
    with np.load(path) as d:
        arrays = {k: d[k] for k in d.files if k not in ("meta", "model_hash")}
    return arrays, task_from_dict(meta["task"]), options_from_dict(meta["options"]), stored


def make_shipped(plan_dir: Path | str, dest: Path | str = SHIPPED_PLAN, *, progress: Progress | None = None) -> dict:
    """Verify the plan of `plan_dir` (plan.npz and summary.json of `plan hopper-holes`) on
    today's model and write it as the shipped plan file `dest`. Returns the figures written
    (meta). Raises ValueError if the plan did not converge, was made for another model, or
    fails a check of `plan_check.plan_figures` (nosnoc needed)."""
    from .plan_check import plan_failures, plan_figures
    from .terrain_scale import ScaleSchedule

    say = progress or (lambda msg: None)
    folder = Path(plan_dir)
    npz, summary_path = folder / "plan.npz", folder / "summary.json"
    for f in (npz, summary_path):
        if not f.is_file():
            raise ValueError(f"{f} does not exist; make the plan with `{FROM_SCRATCH}` (or `{REMAKE}`) first")
    summary = json.loads(summary_path.read_text())
    if not summary.get("converged"):
        raise ValueError(f"{summary_path}: the plan did not converge (converged {summary.get('converged')}, "
                         f"scale_reached {summary.get('scale_reached')}); ship only a converged plan")
    if "terrain" not in summary:
        raise ValueError(f"{summary_path} does not say which task the plan solves (no 'terrain'); not a "
                         "hopper-holes summary")
    ter = summary["terrain"]
    base = HopperTask()
    task = dataclasses.replace(base, terrain=HoleTerrain(centers=tuple(ter["centers"]), semi_x=ter["semi_x"],
                                                         semi_z=ter["semi_z"]),
                               q_target=(ter["target_x"],) + tuple(base.q_target[1:]))
    if "planner_options" in summary:
        options = options_from_dict(summary["planner_options"])
    else:  # summaries before they carried the options: the terrain-scale steps' (the default strategy)
        options = hopper_options(**dict(ScaleSchedule().step_options))
    today = plan_hash(get_robot("hopper"), task, options)
    with np.load(npz) as d:
        arrays = {k: d[k] for k in d.files}
    made_for = str(arrays["model_hash"]) if "model_hash" in arrays else None
    if made_for is not None and made_for != today:
        raise ValueError(f"{npz} was made for model hash {made_for}, today's hopper, holes and options hash to "
                         f"{today}; make it again with `{REMAKE}`")
    missing = [k for k in KEPT if k not in arrays]
    if missing:
        raise ValueError(f"{npz} lacks {missing}; make it again with `{FROM_SCRATCH}`")
    for key, value in terrain_arrays(task.terrain).items():
        if key in arrays and not np.array_equal(arrays[key], value):
            raise ValueError(f"{npz}: {key} {arrays[key]} is not the summary's terrain ({value}); the two files "
                             "are not from one plan")
    say(f"[ship] verifying {npz} on today's model (rebuilding its NLP)")
    figures = plan_figures(arrays, task, options)
    problems = plan_failures(figures)
    if problems:
        raise ValueError(f"{npz} fails verification on today's model: {'; '.join(problems)}")
    made = {k: summary.get(k) for k in ("strategy", "cost", "complementarity_max", "nlp_iterations",
                                        "homotopy_steps", "cpu_s", "wall_s", "scale_reached", "warm_start")
            if k in summary}
    meta = {"format": FORMAT, "scenario": "hopper-holes", "task": task_dict(task),
            "options": json.loads(json.dumps(dataclasses.asdict(options))), "verified": figures, "made": made}
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.stem + ".tmp.npz")
    np.savez_compressed(tmp, **{k: arrays[k] for k in KEPT}, **terrain_arrays(task.terrain),
                        model_hash=np.array(today), meta=np.array(json.dumps(meta, sort_keys=True)))
    tmp.replace(dest)
    say(f"[ship] wrote {dest} ({dest.stat().st_size / 1024:.0f} kB), model hash {today}")
    return {"path": str(dest), "bytes": dest.stat().st_size, "model_hash": today, **meta}


def warm_start_options(**overrides) -> PlannerOptions:
    """The warm start's options: a terrain-scale step's (`ScaleSchedule.step_options`) with
    sigma_0 = WARM_SIGMA_0, then `overrides`."""
    from .terrain_scale import ScaleSchedule

    return hopper_options(**{**dict(ScaleSchedule().step_options), "sigma_0": WARM_SIGMA_0, **overrides})


def warm_start(task: HopperTask = HopperTask(), source: Path | str = SHIPPED_PLAN, *,
               progress: Progress | None = None, **overrides):
    """Re-converge `task` from the primal vector w of the plan file `source` (the shipped plan
    by default, or any plan.npz of `plan hopper-holes`): the sigma homotopy from WARM_SIGMA_0
    down to comp_tol on today's model (`solve_plan(..., w_start=w)`). overrides go to
    `warm_start_options`. Returns (Plan, info): info says where w came from and whether its
    model hash (if the file has one) is the task's today. Needs nosnoc."""
    from .hopper_holes import hopper_holes_ocp
    from .solve import solve_plan

    say = progress or (lambda msg: None)
    source = Path(source)
    if not source.is_file():
        raise ValueError(f"warm start: {source} does not exist; give a plan file made by `{FROM_SCRATCH}`")
    with np.load(source) as d:
        if "w" not in d or d["w"].size == 0:
            raise ValueError(f"warm start: {source} carries no primal vector w; give a plan file made by "
                             f"`{FROM_SCRATCH}`")
        w = np.array(d["w"], dtype=float)
        stored = str(d["model_hash"]) if "model_hash" in d else None
    today = expected_hash(task)
    info = {"source": str(source), "source_model_hash": stored, "model_hash": today,
            "same_model": stored == today if stored is not None else None, "sigma_0": WARM_SIGMA_0}
    note = ("the same model" if info["same_model"] else
            "another model: re-converging onto today's" if stored is not None else "no model hash in the file")
    say(f"[warm] from {source} ({note}), sigma {WARM_SIGMA_0:g} -> 1e-6")
    options = warm_start_options(**overrides)
    try:
        plan = solve_plan(hopper_holes_ocp(task), options, progress=say, w_start=w)
    except ValueError as err:
        if "w_start" not in str(err):
            raise
        raise ValueError(f"warm start: {source} is a plan of another discretization ({err}); make the plan from "
                         f"scratch with `{FROM_SCRATCH}`") from None
    return plan, info
