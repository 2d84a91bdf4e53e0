"""Reading a run folder back: timing tables, trajectory, summary metrics, plots.

A run folder holds: scenario.json, plant_ticks.csv (per control tick: jitter, command latency,
status, missed), controller_ticks.csv (per tick: whole-tick time and the controller's phases, ms),
trajectory.npz (t, q, v, tau, contact, force per tick), plant_summary.json,
controller_summary.json, summary.json and PNG plots (launch/plots.py); docs/RUNS.md.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from sim.metrics import trajectory_metrics

WHOLE_TICK = ("tick_ms", "solve_ms", "cpu_ms")  # controller columns that are whole-tick times, not phases

def read_csv(path: Path) -> dict[str, np.ndarray]:
    """Columns of a CSV file as arrays (numbers where they parse, strings otherwise)."""
    if not path.exists():
        return {}
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    cols: dict[str, np.ndarray] = {}
    for key in (rows[0].keys() if rows else []):
        values = [r[key] for r in rows]
        try:
            cols[key] = np.array([float(x) if x != "" else np.nan for x in values])
        except ValueError:
            cols[key] = np.array(values)
    return cols


def percentiles(a: np.ndarray) -> dict:
    """p50, p90, p99 and max of the finite values of a (None when there are none)."""
    a = np.asarray(a, dtype=float)
    a = a[np.isfinite(a)]
    if not a.size:
        return {"p50": None, "p90": None, "p99": None, "max": None}
    return {"p50": float(np.percentile(a, 50)), "p90": float(np.percentile(a, 90)),
            "p99": float(np.percentile(a, 99)), "max": float(a.max())}


def steady(columns: dict) -> dict:
    """A per-tick CSV's columns without tick 0 (the set-up tick), which goes to columns["startup"]
    as {column: value} (finite values only; {} without a tick 0)."""
    ticks = columns.get("tick")
    if ticks is None or not ticks.size or ticks[0] != 0:
        return {**columns, "startup": {}}
    out = {k: v[1:] for k, v in columns.items()}
    out["startup"] = {k: float(v[0]) for k, v in columns.items()
                      if k != "tick" and v.dtype.kind == "f" and np.isfinite(v[0])}
    return out


def latency_table(folder: Path) -> dict:
    """Per-tick latency figures of a run (ms): controller tick time, command latency seen by the
    plant, jitter, the mean of each controller phase, and the plant's count of missed ticks with
    their causes and the host stalls witnessed (bridge/attribution.py; one count for the run's
    table, footer, latency.png and summary.json). The statistics are the steady loop's: tick 0,
    which carries one-time set-up (a cold solver), is left out of them and reported apart as
    `startup_ms` (the controller's first tick and the plant's latency of tick 0)."""
    ctrl = steady(read_csv(folder / "controller_ticks.csv"))
    plant = steady(read_csv(folder / "plant_ticks.csv"))
    summary = json.loads((folder / "plant_summary.json").read_text()) if (folder / "plant_summary.json").exists() else {}
    phases = {k[:-3]: float(np.nanmean(v)) for k, v in ctrl.items() if k.endswith("_ms") and k not in WHOLE_TICK}
    return {
        "ticks": int(len(plant.get("tick", []))) + int(bool(plant.get("startup"))),
        "deadline_ms": summary.get("deadline_ms"),
        "startup_ms": {"controller_tick": ctrl.get("startup", {}).get("tick_ms"),
                       "latency": (lambda us: None if us is None else us / 1e3)(plant.get("startup", {}).get("latency_us"))},
        "tick_ms": percentiles(ctrl.get("tick_ms", np.array([]))),
        "solve_ms": percentiles(ctrl.get("solve_ms", ctrl.get("tick_ms", np.array([])))),
        "mode": summary.get("mode"),
        "misses_by_cause": summary.get("misses_by_cause") or {},
        "host_stalls": summary.get("host_stalls") or {},
        "latency_ms": percentiles(plant.get("latency_us", np.array([])) / 1e3),
        "jitter_ms": percentiles(np.abs(plant.get("jitter_us", np.array([]))) / 1e3),
        "misses": summary.get("misses", int(np.nansum(plant.get("missed", np.array([]))))),
        "phases_mean_ms": phases,
    }


def run_robot(folder: Path):
    """(scenario dict, RobotModel, trajectory) of a run folder, the trajectory checked against
    the robot; a ValueError says what is missing or inconsistent."""
    from robots import get_robot

    folder = Path(folder)
    for name in ("trajectory.npz", "scenario.json"):
        if name == "trajectory.npz" and (folder / "trajectory.bin").exists():
            continue  # a plant killed mid-run: `trajectory` builds the NPZ from what it appended
        if not (folder / name).exists():
            raise ValueError(f"{folder} is not a run folder (no {name}); runs are under runs/")
    try:
        scenario = json.loads((folder / "scenario.json").read_text())
        robot = scenario["robot"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{folder}/scenario.json is not a scenario with a robot ({exc})") from None
    model = get_robot(robot)
    traj = trajectory(folder)
    if not traj["q"].size:
        raise ValueError(f"{folder}: the trajectory is empty (the run ended before its first tick)")
    width = traj["q"].shape[1] if traj["q"].ndim == 2 else -1
    if width != model.nq:
        raise ValueError(f"{folder}: trajectory.npz has {width} coordinates per row, robot {model.name} has "
                         f"{model.nq}: the folder's files are not from one run")
    return scenario, model, traj


def trajectory(folder: Path) -> dict[str, np.ndarray]:
    """The logged trajectory (t, q, v, tau, contact, force, q_names, u_names); after a plant was
    killed mid-run, trajectory.npz is first built from its trajectory.bin (bridge.server.RunLog)."""
    folder = Path(folder)
    if not (folder / "trajectory.npz").exists() and (folder / "trajectory.bin").exists():
        from bridge.server import recover_trajectory

        recover_trajectory(folder)
    with np.load(folder / "trajectory.npz") as data:
        return {k: data[k] for k in data.files}


def task_metrics(folder: Path, q0_z: float | None, model=None) -> dict:
    """fell, apex heights (m) and mean forward speed (m/s) of a run folder's trajectory
    (`trajectory_metrics`; with the run's `model`, its bodies' heights count for `fell` too)."""
    from sim.metrics import body_heights

    traj = trajectory(folder)
    body_z = body_heights(model, traj["q"]) if model is not None and traj["q"].ndim == 2 else None
    return trajectory_metrics(traj["t"], traj["q"], traj["contact"], list(traj["q_names"]), q0_z, body_z)


def worst_complementarity(ctrl: dict, model) -> dict | None:
    """The MPC tick whose executed stage had the largest complementarity product |a b|: its tick,
    the pair (mpc.wholebody.ocp.PAIR_NAMES), the contact, a and b; None without the columns."""
    comp, pair = ctrl.get("complementarity"), ctrl.get("complementarity_pair")
    if comp is None or pair is None or not comp.size or not np.isfinite(comp).any():
        return None
    if model.floating_base:
        from mpc.centroidal.ocp import PAIR_NAMES
    else:
        from mpc.wholebody.ocp import PAIR_NAMES

    k = int(np.nanargmax(comp))
    p = int(pair[k])
    return {"tick": k, "product": float(comp[k]), "pair": PAIR_NAMES[p // model.nc],
            "contact": model.contacts[p % model.nc].name, "a": float(ctrl["complementarity_a"][k]),
            "b": float(ctrl["complementarity_b"][k])}


def _planning_spread(t: np.ndarray, td: np.ndarray, t_from: float) -> dict | None:
    """The first touchdown planned after t_from: its earliest and latest planned times over the
    ticks that planned it (until it happened), s."""
    idx = np.flatnonzero((t >= t_from) & np.isfinite(td))
    if not idx.size:
        return None
    first = td[idx[0]]
    same = [td[i] for i in idx if abs(td[i] - first) < 0.15 and t[i] <= td[i]]  # same touchdown, still ahead
    return {"first_plan_s": float(first), "min_s": float(min(same)), "max_s": float(max(same)),
            "spread_s": float(max(same) - min(same))}


def touchdown_replanning(folder: Path, scenario) -> dict | None:
    """Evidence that touchdowns are planned, not scheduled, around the push (push_at_s, default mid-run):

    - `after_push` / `before_push`: for the first touchdown planned after the push (and after
      push - 1 s), how much its planned time (plant time, s) moved while the MPC re-planned it
      tick by tick (`_planning_spread`; a fixed schedule gives a spread of 0);
    - `vs_reference_s`: the largest |planned touchdown - nearest touchdown of the reference
      gait| (s) in the second before and the second after the push, and its median; a
      controller that keeps the reference's schedule stays at about 0 after the push.

    None without a push or a logged plan."""
    if not scenario.push_ns:
        return None
    ctrl = read_csv(folder / "controller_ticks.csv")
    if "touchdown_plan_s" not in ctrl or not ctrl["t"].size:
        return None
    t_push = scenario.push_time_s
    t, td = ctrl["t"], ctrl["touchdown_plan_s"]
    out = {"after_push": _planning_spread(t, td, t_push), "before_push": _planning_spread(t, td, t_push - 1.0)}
    dev = ctrl.get("touchdown_vs_ref_s")
    if dev is not None:
        out["vs_reference_s"] = {}
        for key, lo, hi in (("before_push", t_push - 1.0, t_push), ("after_push", t_push, t_push + 1.0)):
            d = np.abs(dev[(t >= lo) & (t < hi) & np.isfinite(dev)])
            out["vs_reference_s"][key] = ({"max": float(d.max()), "median": float(np.median(d))} if d.size else None)
    return out


def holes_metrics(folder: Path, model, terrain) -> dict:
    """For a task over holes (`terrain`: the tracked plan's holes, an
    mpc.wholebody.terrain.HoleTerrain; the plant's ground is flat; the foot is the robot's first
    contact): the foot falls into a hole when it is in contact with the ground with its centre
    over the hole's opening by more than the foot radius (|x - xc| < semi_x - r_foot: a foot
    resting on an edge straddles it). A hole is cleared when the foot touched the ground beyond
    it (x - xc >= semi_x - r_foot) before it first fell into any hole. Returns holes_cleared,
    whether and when the foot fell in, the smallest ellipse level of the foot point over the run
    (the planner's stricter keep-out, >= 1 outside) and the base's final x (final_x_m, m)."""
    from robots import numeric

    traj = trajectory(folder)
    fns = numeric(model, verbose=False)
    foot = np.array([fns.contact_points(q)[0] for q in traj["q"]])
    radius = model.contacts[0].radius
    in_contact = traj["contact"][:, 0].astype(bool)
    edge = terrain.semi_x - radius
    over = np.min([np.abs(foot[:, 0] - xc) - edge for xc in terrain.centers], axis=0) < 0
    inside = np.flatnonzero(in_contact & over)
    before = np.arange(len(foot)) < (inside[0] if inside.size else len(foot))
    landed = foot[in_contact & before, 0]
    reach = landed.max() if landed.size else -np.inf
    cleared = int(sum(1 for xc in terrain.centers if reach - xc >= edge))
    levels = np.array(terrain.levels(foot[:, 0], foot[:, 1])).min(axis=0)
    x_end = float(traj["q"][-1, model.q_names.index("x")])
    return {"holes_cleared": cleared, "foot_in_hole": bool(inside.size),
            "t_first_in_hole": float(traj["t"][inside[0]]) if inside.size else None,
            "hole_level_min": float(levels.min()), "final_x_m": x_end}


def run_failure(summary: dict) -> str:
    """Why a run failed ("" if it did not): the plant left physics (its violation ended the run),
    or a process exited with an error (and the run was not interrupted by the user)."""
    if summary.get("plant_violation"):
        return f"the plant ended the run: {summary.get('end_reason', summary['plant_violation'])}"
    if any(summary.get("exit_codes", [])) and not summary.get("interrupted"):
        return (f"a process of the run failed (exit codes plant, controller: {summary['exit_codes']}); "
                f"see plant.log and controller.log in {summary['run_dir']}")
    return ""


def misses_text(summary: dict) -> str:
    """"N misses of T ticks (host a, controller b, ...)" and the host stalls, from a plant's or a
    run's summary: the one wording of the run's footer, table and latency.png."""
    causes = summary.get("misses_by_cause") or {}
    text = f"{summary.get('misses', 0)} misses of {summary.get('ticks', 0)} ticks"
    nonzero = [f"{c} {n}" for c, n in causes.items() if n]
    text += f" ({', '.join(nonzero)})" if nonzero else ""
    stalls = summary.get("host_stalls") or {}
    if summary.get("mode") == "realtime" and stalls:
        text += f"; host stalls >= 1 ms: {stalls.get('count_ge_1ms', 0)}, longest {stalls.get('max_ms', 0):.1f} ms"
    return text


VERDICT_TARGETS = (("vx_mps", "vx", "m/s"), ("vy_mps", "vy", "m/s"), ("yaw_rate_radps", "yaw rate", "rad/s"),
                   ("apex_height_m", "apex height", "m"))


def verdict_line(summary: dict) -> str:
    """One line saying whether the robot did its task: "done", "FELL", "FAILED" or
    "INTERRUPTED", then each task target against what was achieved, the holes cleared, the push
    and its outcome, and the misses by cause (`misses_text`)."""
    fell = bool(summary.get("fell"))
    outcome = "INTERRUPTED" if summary.get("interrupted") else "FELL" if fell else \
        "FAILED" if run_failure(summary) else "done"
    parts = []
    for key, name, unit in VERDICT_TARGETS:
        d = summary.get(key) or {}
        if d.get("target") is not None and d.get("mean") is not None:
            parts.append(f"{name} {d['mean']:.3f} {unit} (target {d['target']:g})")
    if summary.get("holes_cleared") is not None:
        parts.append(f"holes cleared {summary['holes_cleared']}" + (", foot in a hole" if summary.get("foot_in_hole")
                                                                     else ""))
    if summary.get("push_ns"):
        parts.append(f"push {summary['push_ns']:g} N s along {summary.get('push_axis', 'x')} at "
                     f"{summary.get('push_at_s', 0):g} s: {'fell' if fell else 'stood'}")
    parts.append(misses_text(summary))
    return f"verdict: {outcome}: " + "; ".join(parts)


def outcome_line(summary: dict) -> str:
    """One line for the console: fell, misses by cause (`misses_text`) and rejected messages of
    a run's summary.json; for the 3D MPC a second line with its plan check (ticks corrected,
    restarts, QP at its cap) and horizon."""
    rejected = summary.get("rejected") or 0
    line = f"fell: {summary['fell']}   {misses_text(summary)}   rejected messages: {rejected}"
    refused = {role: got["refused"] for role, got in (summary.get("rt_priority") or {}).items() if not got["granted"]}
    if refused:
        line += ("\nrt_priority refused (the normal scheduler ran instead): " +
                 "; ".join(f"{role}: {why}" for role, why in refused.items()))
    if summary.get("plan_inconsistent_ticks") is not None:  # the 3D MPC's own word on its plans
        line += (f"\nplan check: {summary['plan_inconsistent_ticks']} of {summary['ticks']} ticks corrected, "
                 f"{summary.get('plan_restarts') or 0} restarts, QP at its iteration cap on "
                 f"{summary.get('qp_capped_ticks') or 0}   horizon {summary.get('horizon_s')} s")
    return line
