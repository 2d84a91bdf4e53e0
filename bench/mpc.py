"""MPC tick benchmark: where a controller tick's time goes, in-process (no sockets).

mpc-tick  the bridge client's tick (decode STATE, feedback, encode COMMAND, prepare) on the
          ESS plant; acados's own time (time_tot of both phases) against everything around it
"""
from __future__ import annotations

import sys
import time

import numpy as np

from robots import get_robot


def _tick_times(robot: str, ticks: int) -> dict:
    """Run `ticks` control ticks of the default MPC on the ESS plant from the reference's first
    state; per-tick figures in microseconds (median and p99, after 50 warm-up ticks)."""
    from bridge import protocol as P
    from mpc.mpc_controller import make_mpc
    from sim.registry import make_plant

    model = get_robot(robot)
    ctrl = make_mpc(model)
    plant = make_plant("ess", model)
    state = plant.reset(ctrl.reference.x_at(0.0)[0][: model.nq].copy(), None)
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
        phases.update(ctrl.prepare())
        ctrl.tick_info()
        t4 = time.perf_counter()
        acados = phases["fb_tot"] + phases["prep_time_tot"]
        rows.append((t4 - t0, acados, t4 - t0 - acados, t1 - t0, t3 - t2,
                     (t2 - t1 - phases["fb_tot"]) + (t4 - t3 - phases["prep_time_tot"])))
        state = plant.step(cmd, 0.01)
    arr = np.array(rows[50:]) * 1e6
    names = ("tick_us", "acados_us", "outside_acados_us", "decode_us", "encode_us", "controller_python_us")
    out = {n: {"p50": float(np.median(arr[:, i])), "p99": float(np.percentile(arr[:, i], 99))}
           for i, n in enumerate(names)}
    out["outside_acados_share"] = float(np.median(arr[:, 2] / arr[:, 0]))
    out["ticks"] = ticks
    return out


def bench_mpc_tick(args) -> dict:
    """The hopper's tick (and with --full the quadruped's, whose first run optimises its gait,
    ~4 min): total, acados, and the Python around it (decode, encode, the controller's own)."""
    ticks = args.repeats or 800  # --repeats sets the number of ticks
    if ticks < 100:
        raise ValueError(f"mpc-tick needs --repeats >= 100 ticks (50 are warm-up), got {ticks}")
    robots = ("hopper", "quadruped") if getattr(args, "full", False) else ("hopper",)
    res = {}
    for robot in robots:
        print(f"[mpc-tick] {robot}: {ticks} ticks", file=sys.stderr, flush=True)
        res[robot] = _tick_times(robot, ticks)
    return res
