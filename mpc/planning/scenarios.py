"""Named planning scenarios behind `python -m launch plan <name>`: solve, check, draw, save.

    run_scenario("hopper-holes", out_dir=Path("runs/plans"))  -> summary dict (JSON-ready)

Files written into `out_dir/<name>/`: plan.npz (physical time grid t_grid, q_grid, v_grid, u,
plus the dense points t, q, v, the NLP's primal vector w and, for hopper-holes, the holes it
avoids, hole_centers, hole_semi_x, hole_semi_z, and the model hash of the problem it solves,
model_hash: `plan_hash.plan_hash`), frames.png (Fig. 7), torques.png (Fig. 8), clock.png,
summary.json and, for hopper-holes with the "scale" strategy, one NPZ per converged scale step
in scale_steps/.
"""
from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Callable

import casadi as ca
import numpy as np

from robots import get_robot

from .hopper_holes import HoleTerrain, HopperTask, hopper_holes_ocp, hopper_options, terrain_arrays
from .particle import particle_ocp, particle_options
from .solve import Plan, solve_plan

SCENARIOS = ("hopper-holes", "particle")
STRATEGIES = ("scale", "sigma")
CONTACT_EPS = 1e-3  # m: the foot counts as on the ground below this gap
HOLE_TOL = 1e-6  # ellipse level below 1 - HOLE_TOL counts as inside a hole


def stderr_progress(msg: str) -> None:
    """Print one progress line to stderr (flushed)."""
    print(msg, file=sys.stderr, flush=True)


def count_touchdowns(gap: np.ndarray, *, eps: float = CONTACT_EPS) -> int:
    """Number of flight -> contact transitions in a sequence of contact gaps (m)."""
    on = np.asarray(gap) <= eps
    return int(np.sum(on[1:] & ~on[:-1]))


def run_scenario(name: str, *, out_dir: Path | str = Path("runs/plans"), progress: Callable[[str], None] | None = None,
                 replay: bool = True, strategy: str = "scale", hole_semi_axis: float | None = None,
                 warm_start: Path | str | None = None, **option_overrides) -> dict:
    """Solve the named scenario, write its files under out_dir/<name>/ and return the summary.

    strategy (hopper-holes only): "scale", the terrain-scale continuation of
    `terrain_scale.solve_by_terrain_scale` (default), or "sigma", the plain sigma homotopy on
    the full task from the trivial guess. hole_semi_axis (hopper-holes only, m): the holes'
    horizontal semi-axis (default `HoleTerrain`'s 0.25; 0.5 is the paper's other reading).
    warm_start (hopper-holes only): a plan file (e.g. `shipped.SHIPPED_PLAN`) whose primal
    vector starts the last NLPs of the homotopy (`shipped.warm_start`) instead of a strategy.
    option_overrides go to `PlannerOptions` (e.g. max_homotopy=6). Raises ValueError for an
    unknown name or strategy, or a hopper-holes option given to another scenario.
    """
    if name not in SCENARIOS:
        raise ValueError(f"unknown plan scenario {name!r}; available: {', '.join(SCENARIOS)}")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown plan strategy {strategy!r}; available: {', '.join(STRATEGIES)}")
    if hole_semi_axis is not None and name != "hopper-holes":
        raise ValueError(f"hole_semi_axis (--hole-semi-axis) is for hopper-holes only, not {name!r}")
    if warm_start is not None and name != "hopper-holes":
        raise ValueError(f"warm_start (--warm-start) is for hopper-holes only, not {name!r}")
    if warm_start is not None and strategy != "scale":
        raise ValueError(f"warm_start (--warm-start) replaces the strategy; leave strategy at 'scale', not {strategy!r}")
    terrain = HoleTerrain() if hole_semi_axis is None else HoleTerrain(semi_x=hole_semi_axis)
    say = progress or stderr_progress
    folder = Path(out_dir) / name
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if name == "particle":
        summary = _run_particle(folder, say, option_overrides)
    else:
        summary = _run_hopper(folder, say, option_overrides, replay=replay, strategy=strategy,
                              task=HopperTask(terrain=terrain), warm_start=warm_start)
    summary["wall_s"] = round(time.perf_counter() - t0, 2)
    summary = _json_ready(summary)
    (folder / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _json_ready(value):
    """Replace non-finite floats (nan, inf) by None so that the summary is strict JSON."""
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def _common(plan: Plan) -> dict:
    return {
        "converged": bool(plan.converged),
        "status": plan.status,
        "complementarity_max": float(plan.complementarity),
        "physical_time_end": float(plan.physical_time_end),
        "clock_residual": float(plan.clock_residual),
        "cost": float(plan.cost),
        "cpu_s": round(float(plan.cpu_s), 2),
        "build_s": round(float(plan.build_s), 2),
        "nlp_iterations": int(sum(h["iters"] for h in plan.homotopy)),
        "homotopy_steps": len(plan.homotopy),
    }


def _run_particle(folder: Path, say, overrides: dict) -> dict:
    from .plots import plot_clock, plot_torques

    ocp = particle_ocp()
    plan = solve_plan(ocp, particle_options(**overrides), progress=say)
    plan.save_npz(folder / "plan.npz")
    files = [plot_torques(plan, folder / "torques.png", names=("x",), u_max=10.0), plot_clock(plan, folder / "clock.png")]
    out = _common(plan)
    out.update({"final_q": plan.q[-1].tolist(), "final_v": plan.v[-1].tolist(), "target_q": [3.0, 0.0],
                "n_touchdowns": count_touchdowns(plan.q[:, 1]), "u": plan.u.ravel().tolist(),
                "s": plan.s.tolist(), "files": [str(f) for f in files + [folder / "plan.npz"]]})
    return out


def _run_hopper(folder: Path, say, overrides: dict, *, replay: bool, strategy: str, task: HopperTask,
                warm_start: Path | str | None = None) -> dict:
    from .plan_hash import plan_hash
    from .plots import plot_clock, plot_frames, plot_torques
    from .terrain_scale import ScaleSchedule, solve_by_terrain_scale

    model = get_robot("hopper")
    asked = task
    scale_info = {}
    if warm_start is not None:
        from .shipped import warm_start as solve_warm, warm_start_options

        plan, info = solve_warm(asked, warm_start, progress=say, **overrides)
        options = warm_start_options(**overrides)
        strategy, scale_info = "warm-start", {"warm_start": info}
    elif strategy == "scale":
        result = solve_by_terrain_scale(asked, progress=say, save_dir=folder / "scale_steps", **overrides)
        plan, task = result.plan, result.task  # the last converged scale when the full one fails
        options = hopper_options(**dict(ScaleSchedule().step_options, **overrides))  # the steps' (the last NLPs')
        scale_info = {"scale_reached": result.scale, "margin_m": result.margin, "stages": result.stages}
    else:
        options = hopper_options(**overrides)
        plan = solve_plan(hopper_holes_ocp(task, model), options, progress=say)
    model_hash = plan_hash(model, task, options)  # of the task the plan solves (a scaled one if it stopped short)
    plan.save_npz(folder / "plan.npz", **terrain_arrays(task.terrain), model_hash=np.array(model_hash))
    foot_fn = ca.Function("foot", [model.q], [model.contacts[0].point])
    foot = np.array([np.asarray(foot_fn(q)).ravel() for q in plan.q])
    # physical-time order is the discretization order (the clock never runs backwards)
    levels = np.array(task.terrain.levels(foot[:, 0], foot[:, 1]))  # holes x points
    min_level = float(levels.min()) if levels.size else float("inf")
    dense_min = _dense_hole_level(plan, foot_fn, task)
    out = _common(plan)
    out.update({
        "strategy": strategy,
        "final_q": plan.q[-1].tolist(),
        "target_q": list(asked.q_target),
        "final_x_error": float(abs(plan.q[-1, 0] - asked.q_target[0])),
        **scale_info,
        # the plan's own terrain (a scaled one when the continuation stopped short of scale 1)
        "terrain": {"centers": list(task.terrain.centers), "semi_x": task.terrain.semi_x,
                    "semi_z": task.terrain.semi_z, "target_x": task.q_target[0]},
        "foot_in_hole": bool(min_level < 1.0 - HOLE_TOL),
        "hole_level_min": min_level,
        "hole_level_min_dense": dense_min,
        "n_touchdowns": count_touchdowns(foot[:, 1]),
        "foot_penetration_max": float(max(0.0, -foot[:, 1].min())),
        "s_max_used": float(plan.s.max()),
        "model_hash": model_hash,
        "planner_options": dataclasses.asdict(options),
    })
    rep = None
    if replay:
        from .replay import replay_open_loop

        say("[plan] open-loop replay of the torques on a compliant-contact model of the hopper")
        try:
            rep = replay_open_loop(model, plan.t_grid, plan.u, np.asarray(task.q0, dtype=float), np.zeros(model.nv),
                                   q_plan=plan.q_grid)  # task.q0: the robot's q (ocp.q0 may be foot coordinates)
        except RuntimeError as err:  # a failed replay must not lose the plan and its summary
            say(f"[plan] open-loop replay failed: {err}")
            out["replay"] = {"error": str(err)}
            rep = None
        if rep is not None:
            rep_levels = np.array(task.terrain.levels(rep.foot[:, 0], rep.foot[:, 1]))
            inside = np.flatnonzero(rep_levels.min(axis=0) < 1.0 - HOLE_TOL) if rep_levels.size else np.array([], int)
            t_in = float(rep.t[inside[0]]) if inside.size else float("nan")
            x_ok = rep.q[: inside[0] + 1, 0].max() if inside.size else rep.q[:, 0].max()
            cleared = int(sum(1 for xc in task.terrain.centers if x_ok >= xc + task.terrain.semi_x))
            out["replay"] = {
                "final_q": rep.final_q.tolist(), "fell": bool(rep.fell), "t_fall": rep.t_fall,
                "t_end": float(rep.t[-1]), "foot_in_hole": bool(inside.size > 0), "t_first_in_hole": t_in,
                "holes_cleared": cleared, "max_tracking_error": rep.max_tracking_error.tolist(),
            }
    files = [
        plot_frames(model, plan, folder / "frames.png", terrain=task.terrain, replay=rep),
        plot_torques(plan, folder / "torques.png", names=model.u_names, u_max=task.u_max),
        plot_clock(plan, folder / "clock.png"),
    ]
    out["files"] = [str(f) for f in files + [folder / "plan.npz"]]
    return out


def _dense_hole_level(plan: Plan, foot_fn, task: HopperTask, sub: int = 10) -> float:
    """Minimum ellipse level on q linearly interpolated between consecutive plan points."""
    if not task.terrain.centers:
        return float("inf")
    s = np.linspace(0.0, 1.0, sub, endpoint=False)
    qs = (plan.q[:-1, None, :] * (1 - s)[None, :, None] + plan.q[1:, None, :] * s[None, :, None]).reshape(-1, plan.q.shape[1])
    feet = np.asarray(foot_fn(qs.T)).T if qs.size else np.zeros((0, 2))
    return float(np.min(task.terrain.levels(feet[:, 0], feet[:, 1])))
