"""An in-process closed loop (plant and controller in one process, no sockets).

The same tick as the bridge (STATE -> compute -> COMMAND -> prepare -> plant.step over one
control period), for tests and benchmarks where process start-up and sockets would only add
noise. `python -m launch run` is the real two-process loop.

    log = run_in_process(plant, controller, duration_s=2.0, q0=q0)
    log["q"] (ticks, nq), log["contact"], log["rows"] (controller records per tick)

Like the plant server, the loop ends early when the plant reports a broken invariant
(PlantState.violation); log["violation"] says which ("" when the run went to its end).
"""
from __future__ import annotations

import time

import numpy as np

from sim.protocol import pushed_velocity


def run_in_process(plant, controller, *, duration_s: float, q0: np.ndarray, v0: np.ndarray | None = None,
                   control_rate_hz: float = 100.0, push_ns: float = 0.0, push_at_s: float | None = None,
                   push_axis: str = "x") -> dict:
    """Run `controller` on `plant` for duration_s simulated seconds; returns the logged arrays
    (t, q, v, contact), per-tick controller rows (phases in ms plus tick_info fields) and the
    plant's violation ("" unless the plant left physics, which ends the loop after that tick).
    push_ns: impulse (N s) on the base along push_axis ("x" or "z") at push_at_s (default mid-run)."""
    if not duration_s > 0 or not control_rate_hz > 0:
        raise ValueError(f"duration_s and control_rate_hz must be > 0, got {duration_s}, {control_rate_hz}")
    model = plant.model
    period = 1.0 / control_rate_hz
    state = plant.reset(np.asarray(q0, float), v0)
    push_at = 0.5 * duration_s if push_at_s is None else push_at_s
    pushed = not push_ns
    prepare = getattr(controller, "prepare", None)
    info = getattr(controller, "tick_info", None)
    log = {"t": [], "q": [], "v": [], "contact": [], "rows": []}
    violation = ""
    for _ in range(int(round(duration_s / period))):
        t0 = time.perf_counter()
        cmd, phases = controller.compute(state.t, state.q, state.v, state.contact)
        t_sent = time.perf_counter()
        if prepare is not None:
            phases.update(prepare())
        row = {"t": state.t, "tick_ms": (t_sent - t0) * 1e3, "solve_ms": (time.perf_counter() - t0) * 1e3,
               **{f"{k}_ms": v * 1e3 for k, v in phases.items()}, **(info() if info is not None else {})}
        log["rows"].append(row)
        state = plant.step(cmd, period)
        if not pushed and state.t >= push_at:
            state = plant.reset(state.q.copy(), pushed_velocity(model, state.q, state.v, push_ns, push_axis), state.t)
            pushed = True
        for key in ("t", "q", "v", "contact"):
            log[key].append(np.copy(getattr(state, key)))
        if state.violation:
            violation = state.violation
            break
    return {**{k: (np.asarray(v) if k != "rows" else v) for k, v in log.items()}, "violation": violation}
