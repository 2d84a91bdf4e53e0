"""Estimator benchmark: what the state estimator costs a tick, and against the MPC it feeds.

estimator  go1 trotting under the 3D MPC on the ESS plant with hardware sensors, in-process: the
           estimator's update (estimation/, the tick's kernel and the Python around it) per tick,
           beside the MPC's own tick in the same run, and the estimate's errors against the truth
"""
from __future__ import annotations

import sys
import time

import numpy as np


def bench_estimator(args) -> dict:
    """Per-tick cost of estimation.LeggedEstimator.update (us, median and p99 after 50 warm-up
    ticks) in a go1 trot with hardware sensors (--repeats N ticks, default 1000), its ratio to the
    MPC's tick in the same loop, and the run's estimation figures."""
    from estimation import LeggedEstimator
    from launch.estimation_metrics import estimation_errors
    from mpc.closed_loop import run_in_process
    from mpc.controllers import make_controller
    from robots import get_robot
    from robots.sensors import sensor_spec
    from sim.registry import make_plant
    from sim.sensors import SensorModel

    ticks = args.repeats or 1000
    if ticks < 100:
        raise ValueError(f"estimator needs --repeats >= 100 ticks (50 are warm-up), got {ticks}")
    model = get_robot("go1")
    LeggedEstimator.warm_up(model)
    est = LeggedEstimator(model, period_s=0.01)
    times: list[float] = []
    update = est.update

    def timed(reading):
        t0 = time.perf_counter()
        out = update(reading)
        times.append(time.perf_counter() - t0)
        return out

    est.update = timed
    print(f"[estimator] go1 trot, {ticks} ticks, hardware sensors", file=sys.stderr, flush=True)
    from launch.scenario import load_scenario

    options = load_scenario("go1").controller_options  # the 0.5 m/s trot
    log = run_in_process(make_plant("ess", model), make_controller("mpc", model, **options), duration_s=ticks * 0.01,
                         q0=model.q0, sensors=SensorModel(model, sensor_spec(model), period_s=0.01), estimator=est)
    us = np.array(times[50:]) * 1e6
    mpc_us = np.array([r["tick_ms"] for r in log["rows"][50:] if "tick_ms" in r]) * 1e3
    e = log["estimate"]
    figures = estimation_errors(np.array([x[0] for x in e]), np.array([x[1] for x in e]), np.array([x[2] for x in e]),
                                log["t"], log["q"], log["v"])
    return {"ticks": ticks, "estimator_us": {"p50": float(np.median(us)), "p99": float(np.percentile(us, 99))},
            "mpc_tick_us": {"p50": float(np.median(mpc_us)), "p99": float(np.percentile(mpc_us, 99))},
            "estimator_over_mpc": float(np.median(us) / np.median(mpc_us)),
            "estimation": figures, "fell": bool(log["violation"])}
