"""An in-process closed loop (plant and controller in one process, no sockets).

The same tick as the bridge (STATE -> compute -> COMMAND -> prepare -> plant.step over one
control period), for tests and benchmarks where process start-up and sockets would only add
noise. `python -m launch run` is the real two-process loop.

    log = run_in_process(plant, controller, duration_s=2.0, q0=q0)
    log["q"] (ticks, nq), log["contact"], log["rows"] (controller records per tick)

Like the plant server, the loop ends early when the plant reports a broken invariant
(PlantState.violation); log["violation"] says which ("" when the run went to its end), and it
treats a tick as the lockstep plant server does: the controller's command (a JointCommand or a
JointPlan) goes through the same `sim.command_plan.CommandKeeper`; a tick is missed when the
controller's thread CPU time exceeds the deadline (cause `controller`), its solver failed
(`solver`), or a simulated stall or late COMMAND (sim/chaos.py) lost it (`host`, `transport`);
each row carries `missed` and `cause`.
"""
from __future__ import annotations

import time

import numpy as np

from sim.chaos import StallSchedule, transport_always_late
from sim.command_plan import CommandKeeper, JointPlan, safe_stiffness
from sim.protocol import actuated_positions, pushed_velocity


def run_in_process(plant, controller, *, duration_s: float, q0: np.ndarray, v0: np.ndarray | None = None,
                   control_rate_hz: float = 100.0, push_ns: float = 0.0, push_at_s: float | None = None,
                   push_axis: str = "x", hold_ticks: int = 3, safe_kp: float | None = None, damping_kd: float = 1.0,
                   stall_ms: float = 0.0, stall_prob: float = 0.0, transport_delay_ms: float = 0.0,
                   chaos_seed: int = 0, sensors=None, estimator=None) -> dict:
    """Run `controller` on `plant` for duration_s simulated seconds; returns the logged arrays
    (t, q, v, contact, force, tau after each tick), per-tick rows (phases in ms, tick_info fields, cpu_ms, missed, cause,
    plant_status: ok, plan, hold or damp) and the plant's violation ("" unless the plant left
    physics, which ends the loop after that tick). push_ns: impulse (N s) on the base along push_axis at push_at_s (default
    mid-run). hold_ticks, safe_kp (None: the robot's), damping_kd: the plant's fallback
    (sim/command_plan.py); stall_ms, stall_prob, transport_delay_ms, chaos_seed: simulated chaos
    (sim/chaos.py). The deadline is 0.9 of the control period, the plant server's default.
    sensors and estimator (both or neither): the hardware sensor set (a sim.sensors.SensorModel
    read after every step) and the estimator the controller runs on (estimation.LeggedEstimator);
    log["estimate"] then holds its (q, v) per tick, and a diverged estimate stops the commands
    (as the bridge client does: the plant holds, then damps)."""
    if (sensors is None) != (estimator is None):
        raise ValueError("run_in_process: give sensors and estimator together (hardware sensors), or neither")
    if not duration_s > 0 or not control_rate_hz > 0:
        raise ValueError(f"duration_s and control_rate_hz must be > 0, got {duration_s}, {control_rate_hz}")
    model = plant.model
    period = 1.0 / control_rate_hz
    deadline_ns = int(0.9 * period * 1e9)
    keeper = CommandKeeper(model.nu, actuated_positions(model), hold_ticks=hold_ticks,
                           safe_kp=float(safe_stiffness(model, safe_kp)),
                           damping_kd=damping_kd)
    chaos = StallSchedule(stall_ms=stall_ms, stall_prob=stall_prob, period_s=period, deadline_s=0.9 * period,
                          seed=chaos_seed)
    late_transport = transport_always_late(transport_delay_ms, 0.9 * period)
    state = plant.reset(np.asarray(q0, float), v0)
    push_at = 0.5 * duration_s if push_at_s is None else push_at_s
    pushed = not push_ns
    prepare = getattr(controller, "prepare", None)
    info = getattr(controller, "tick_info", None)
    log = {"t": [], "q": [], "v": [], "contact": [], "force": [], "tau": [], "rows": [], "estimate": []}
    violation = ""
    reading = sensors.read(state) if sensors is not None else None
    for tick in range(int(round(duration_s / period))):
        if estimator is not None:
            q_seen, v_seen, contact_seen = estimator.update(reading)
            log["estimate"].append((state.t, q_seen[:7].copy(), v_seen[:6].copy()))
        else:
            q_seen, v_seen, contact_seen = state.q, state.v, state.contact
        if chaos.stalled(tick):
            row = {"t": state.t, "missed": 1, "cause": "host"}
        elif estimator is not None and estimator.diverged:
            row = {"t": state.t, "missed": 1, "cause": "controller", "diverged": estimator.diverged}
        else:
            t0, cpu0 = time.perf_counter(), time.thread_time_ns()
            cmd, phases = controller.compute(state.t, q_seen, v_seen, contact_seen)
            cpu = time.thread_time_ns() - cpu0
            t_sent = time.perf_counter()
            failed = getattr(controller, "solver_ok", True) is False
            if prepare is not None:
                phases.update(prepare())
            cause = "controller" if cpu > deadline_ns else "solver" if failed else \
                "transport" if late_transport else ""
            row = {"t": state.t, "tick_ms": (t_sent - t0) * 1e3, "cpu_ms": cpu * 1e-6,
                   "solve_ms": (time.perf_counter() - t0) * 1e3, **{f"{k}_ms": v * 1e3 for k, v in phases.items()},
                   **(info() if info is not None else {}), "missed": int(bool(cause)), "cause": cause}
            if cause != "transport":
                keeper.accept(JointPlan.of(cmd), state.t)
        status = "ok" if row["cause"] in ("", "controller", "solver") else keeper.status(tick, state.t)
        row["plant_status"] = status
        log["rows"].append(row)
        state = keeper.step(plant, state, period, status)
        if not pushed and state.t >= push_at:
            state = plant.reset(state.q.copy(), pushed_velocity(model, state.q, state.v, push_ns, push_axis), state.t)
            pushed = True
        if sensors is not None:
            reading = sensors.read(state)
        for key in ("t", "q", "v", "contact", "force", "tau"):
            log[key].append(np.copy(getattr(state, key)))
        if state.violation:
            violation = state.violation
            break
    return {**{k: (np.asarray(v) if k not in ("rows", "estimate") else v) for k, v in log.items()},
            "violation": violation}
