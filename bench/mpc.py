"""MPC tick benchmark: where a controller tick's time goes, in-process (no sockets).

mpc-tick  the bridge client's tick (decode STATE, feedback, encode COMMAND, prepare) on the
          ESS plant; acados's own time (time_tot of both phases) against everything around it
"""
from __future__ import annotations

import sys
import time

import numpy as np

from sim.command_plan import JointPlan

from robots import get_robot


def _tick_times(robot: str, ticks: int) -> dict:
    """Run `ticks` control ticks of the default MPC on the ESS plant from the reference's first
    state; per-tick figures in microseconds (median and p99, after 50 warm-up ticks)."""
    from bridge import protocol as P
    from mpc.controllers import make_controller
    from sim.registry import make_plant

    model = get_robot(robot)
    options = {"vx": 0.5} if model.floating_base else {}  # go1's scenario speed; planar: the MPC's default
    ctrl = make_controller("mpc", model, **options)
    plant = make_plant("ess", model)
    q0 = model.q0.copy() if model.floating_base else ctrl.reference.x_at(0.0)[0][: model.nq].copy()
    state = plant.reset(q0, None)
    dims = P.Dims.of(model)
    rows = []
    for k in range(ticks):
        frames = [bytes(memoryview(f).cast("B")) for f in
                  P.encode(P.STATE, k, state.t, [state.q, state.v, state.contact.astype(np.uint8), state.force,
                                                 np.zeros(1, np.uint8)])]
        t0 = time.perf_counter()
        msg = P.decode(frames, dims)
        t1 = time.perf_counter()
        a = msg.arrays
        cmd, phases = ctrl.compute(msg.t, a["q"], a["v"], a["contact"].astype(bool))
        t2 = time.perf_counter()
        P.encode(P.COMMAND, msg.seq, msg.t, P.command_arrays(cmd, k + 1), dims=dims)
        t3 = time.perf_counter()
        P.prepare_decode(P.STATE, dims)  # as the client does after sending
        phases.update(ctrl.prepare())
        ctrl.tick_info()
        t4 = time.perf_counter()
        acados = phases["fb_tot"] + phases["prep_time_tot"]
        rows.append((t4 - t0, acados, t4 - t0 - acados, t1 - t0, t3 - t2,
                     (t2 - t1 - phases["fb_tot"]) + (t4 - t3 - phases["prep_time_tot"]), phases.get("wholebody", 0.0)))
        state = plant.step(JointPlan.of(cmd).setpoint(0), 0.01)  # the on-time tick's setpoint
    arr = np.array(rows[50:]) * 1e6
    names = ("tick_us", "acados_us", "outside_acados_us", "decode_us", "encode_us", "controller_python_us",
             "wholebody_us")  # the last: go1's compiled whole-body layer (part of controller_python_us), 0 planar
    out = {n: {"p50": float(np.median(arr[:, i])), "p99": float(np.percentile(arr[:, i], 99))}
           for i, n in enumerate(names)}
    out["outside_acados_share"] = float(np.median(arr[:, 2] / arr[:, 0]))
    out["ticks"] = ticks
    return out


def bench_mpc_tick(args) -> dict:
    """The hopper's tick (and with --full the planar quadruped's and go1's trot at 0.5 m/s, whose
    first runs optimise their gaits, minutes): total, acados, and the Python around it (decode,
    encode, the controller's own, go1's whole-body layer inside it)."""
    ticks = args.repeats or 800  # --repeats sets the number of ticks
    if ticks < 100:
        raise ValueError(f"mpc-tick needs --repeats >= 100 ticks (50 are warm-up), got {ticks}")
    robots = ("hopper", "quadruped", "go1") if getattr(args, "full", False) else ("hopper",)
    res = {}
    for robot in robots:
        print(f"[mpc-tick] {robot}: {ticks} ticks", file=sys.stderr, flush=True)
        res[robot] = _tick_times(robot, ticks)
    return res
