"""One episode of a sweep: a scenario's lockstep closed loop in this process, reduced to one row.

The episode runs the tick of `python -m launch run` (plant and controller as launch/child.py
builds them, model errors included: launch/model_errors.py) with mpc/closed_loop.py's
in-process loop instead of two processes over the bridge. In lockstep the two are the same
computation (the bridge carries float64 states and commands unchanged), so
`python -m launch run --from-sweep DIR --episode K` replays an episode with the full run
folder; sweeps therefore refuse realtime scenarios, whose misses depend on the machine.
"""
from __future__ import annotations

import math
import os
import socket
import time

import numpy as np

from bridge.attribution import CAUSES

# hardware sensors: the estimate against the truth (launch/estimation_metrics.py), columns est_<key>
ESTIMATION_KEYS = ("vel_rms_mps", "height_rms_m", "roll_pitch_rms_deg", "yaw_drift_deg", "xy_drift_m")

# the columns of an episode's row that come from the episode itself (launch/sweep.py adds the
# episode index, the varied values and the seed in front)
RESULT_COLUMNS = ("success", "fell", "plant_violation", "error", "ticks", "misses", "misses_host", "misses_controller",
                  "misses_solver", "misses_transport", "misses_unattributed", "apex_height_m",
                  "apex_error_m", "vx_mps", "vx_error_mps", "vy_mps", "yaw_rate_radps", "yaw_rate_error_radps",
                  "solve_p50_ms", "solve_p99_ms", *(f"est_{k}" for k in ESTIMATION_KEYS), "wall_s",
                  "host", "node_id", "pid")


def _finite_or_none(x) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def run_episode(scenario) -> dict:
    """Run `scenario` (a validated lockstep Scenario) closed loop in this process and return its
    row (RESULT_COLUMNS): success (did not fall, plant stayed physical, nothing raised), fell,
    plant_violation, error ("" or the exception), ticks, misses and misses_<cause> (lockstep
    causes, bridge/attribution.py), apex height and forward speed with their errors against the task's targets (m,
    m/s; None without a target), a floating base's sideways speed and yaw rate (the latter's
    error too; rad/s), solve time p50/p99 (ms: compute + prepare per tick), with hardware
    sensors the estimate's errors (est_*, launch/estimation_metrics.py; None on full state), wall_s
    (s, the whole episode with plant and controller set-up) and where it ran (host, Ray node id
    or "", pid). An exception in the plant or controller is caught into `error`."""
    t_start = time.perf_counter()
    row = {"success": False, "fell": None, "plant_violation": "", "error": "", "ticks": 0, "misses": None,
           **{f"misses_{c}": None for c in CAUSES},
           "apex_height_m": None, "apex_error_m": None, "vx_mps": None, "vx_error_mps": None,
           "vy_mps": None, "yaw_rate_radps": None, "yaw_rate_error_radps": None,
           "solve_p50_ms": None, "solve_p99_ms": None, **{f"est_{k}": None for k in ESTIMATION_KEYS}}
    try:
        row.update(_run(scenario))
        row["success"] = bool(not row["fell"] and not row["plant_violation"])
    except Exception as exc:  # noqa: BLE001 - a crashing episode is a result, reported in its row
        row["error"] = f"{type(exc).__name__}: {exc}"[:500]
    row.update(wall_s=time.perf_counter() - t_start, host=socket.gethostname(), node_id=_ray_node_id(),
               pid=os.getpid())
    return row


def _ray_node_id() -> str:
    try:
        import ray

        return ray.get_runtime_context().get_node_id() if ray.is_initialized() else ""
    except Exception:  # noqa: BLE001 - outside Ray, or an old Ray: no node id
        return ""


def _run(sc) -> dict:
    from mpc.closed_loop import run_in_process
    from mpc.controllers import make_controller
    from robots import get_robot
    from sim.registry import make_plant

    from .model_errors import plant_robot, with_model_errors
    from .run import task_targets
    from sim.metrics import base_names, body_heights, trajectory_metrics

    from .runfolder import percentiles

    if sc.mode != "lockstep":
        raise ValueError(f"scenario {sc.name!r}: episodes run lockstep, got mode {sc.mode!r}")
    model = plant_robot(sc)
    plant = make_plant(sc.plant, model, plant_rate_hz=sc.plant_rate_hz, **sc.plant_options)
    nominal = get_robot(sc.robot)
    controller = with_model_errors(make_controller(sc.controller, nominal, **sc.controller_options), sc)
    q0 = sc.initial_configuration(model)  # as launch/child.py's plant starts
    sensors = estimator = None
    if sc.sensors == "hardware":  # as the plant server and the bridge client do
        from estimation import LeggedEstimator
        from robots.sensors import sensor_spec
        from sim.sensors import SensorModel

        period = 1.0 / sc.control_rate_hz
        sensors = SensorModel(model, sensor_spec(model).scaled(sc.sensor_noise_scale), period_s=period, seed=sc.seed)
        estimator = LeggedEstimator(nominal, period_s=period)
    log = run_in_process(plant, controller, duration_s=sc.duration_s, q0=q0, control_rate_hz=sc.control_rate_hz,
                         push_ns=sc.push_ns, push_at_s=sc.push_at_s, push_axis=sc.push_axis, hold_ticks=sc.hold_ticks,
                         stall_ms=sc.stall_ms, stall_prob=sc.stall_prob, transport_delay_ms=sc.transport_delay_ms,
                         chaos_seed=sc.seed, sensors=sensors, estimator=estimator)
    z_name = base_names(list(nominal.q_names))[1]  # as launch/run.py's finalize measures a fall
    q0_z = nominal.q0[nominal.q_names.index(z_name)] if z_name in nominal.q_names else None
    metrics = trajectory_metrics(log["t"], log["q"], log["contact"], list(model.q_names), q0_z,
                                 body_heights(model, log["q"]))
    targets = task_targets(sc, nominal)
    rows = log["rows"]
    # ticks lost to a simulated stall have no controller time
    solve = percentiles(np.array([r["solve_ms"] for r in rows if "solve_ms" in r]))

    def error(value, target):
        return None if value is None or target is None else float(value - target)

    return {"fell": metrics["fell"], "plant_violation": log["violation"], "ticks": len(rows),
            "misses": int(sum(r.get("missed", 0) for r in rows)),
            **{f"misses_{c}": sum(1 for r in rows if r.get("cause") == c) for c in CAUSES},
            "apex_height_m": metrics["apex_height_m"],
            "apex_error_m": error(metrics["apex_height_m"], targets.get("apex_height")),
            "vx_mps": metrics["vx_mps"], "vx_error_mps": error(metrics["vx_mps"], targets.get("vx")),
            "vy_mps": metrics.get("vy_mps"), "yaw_rate_radps": metrics.get("yaw_rate_radps"),
            "yaw_rate_error_radps": error(metrics.get("yaw_rate_radps"), targets.get("yaw_rate")),
            "solve_p50_ms": _finite_or_none(solve["p50"]), "solve_p99_ms": _finite_or_none(solve["p99"]),
            **_estimation_columns(log)}


def _estimation_columns(log: dict) -> dict:
    """An episode's estimation figures (launch/estimation_metrics.py) as est_* columns (None on full state)."""
    from .estimation_metrics import estimation_errors

    figures = None
    if log.get("estimate"):
        t_est = np.array([e[0] for e in log["estimate"]])
        figures = estimation_errors(t_est, np.array([e[1] for e in log["estimate"]]),
                                    np.array([e[2] for e in log["estimate"]]), log["t"], log["q"], log["v"])
    return {f"est_{k}": (figures or {}).get(k) for k in ESTIMATION_KEYS}
