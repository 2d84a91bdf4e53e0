"""`bench plant3d`: the plants' cost on go1 at a 1 ms period, ESS and NMDP against MuJoCo.

Workload (the same for every plant): go1 dropped from 0.1 m above its standing pose under the
joint PD stand command with the stance feed-forward (mpc.controllers), 2 s of simulated time,
one `step(command, 0.001)` per millisecond (the plant protocol's call; MuJoCo's own step is 1 ms
with the impedance law evaluated before each). Repeats of the plants are interleaved (run 1 of
each, then run 2 of each, ...) so that a slow phase of the machine hits all alike; figures are
medians after a warm-up run. The base height at the end of a run is the plant's resting height.
A plant that cannot run a 3D robot reports why instead of figures.

Two MuJoCo figures: "mujoco" is our MujocoPlant (the plant protocol: one `step` call per 1 ms,
each converting the command and the state and checking the invariants in Python; the impedance
law is MuJoCo's actuators), "mujoco_bare" is MuJoCo alone on the
same MJCF, the same PD law as MuJoCo actuators (gain kp on ctrl = q_des, affine bias -kp q -kd
qdot, force clamped to u_max, the feed-forward in qfrc_applied) stepped by `mj_step` in a loop:
the fair peer for a step's cost. `ratio_vs_mujoco` divides by the bare figure.
"""
from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

PLANTS = ("ess", "nmdp", "mujoco")
DT = 1e-3  # s per step() call
T_END = 2.0  # s of simulated time per run


def _run(plant, q0: np.ndarray, command, steps: int) -> tuple[float, float]:
    """(wall seconds, final base height m) of one run of `steps` 1 ms steps from q0."""
    plant.reset(q0)
    state = None
    t0 = time.perf_counter()
    for _ in range(steps):
        state = plant.step(command, DT)
    wall = time.perf_counter() - t0
    if state is None or state.violation:
        raise RuntimeError(f"plant violation: {state.violation}")
    return wall, float(state.q[2])


class BareMujoco:
    """MuJoCo alone on the model's MJCF with the joint PD as its own actuators (module docstring);
    `reset` and `step` as the plants' (step: one mj_step of DT)."""

    def __init__(self, model, command) -> None:
        import mujoco

        self.mj = mujoco.MjModel.from_xml_string(model.mjcf)
        self.mj.opt.timestep = DT
        self.mj.actuator_gaintype[:] = mujoco.mjtGain.mjGAIN_FIXED
        self.mj.actuator_biastype[:] = mujoco.mjtBias.mjBIAS_AFFINE
        self.mj.actuator_gainprm[:, 0] = command.kp
        self.mj.actuator_biasprm[:, :3] = np.column_stack([np.zeros(model.nu), -command.kp, -command.kd])
        self.mj.actuator_ctrlrange[:] = np.column_stack([-np.full(model.nu, 1e3), np.full(model.nu, 1e3)])
        self.mj.actuator_forcelimited[:] = 1
        self.mj.actuator_forcerange[:] = np.column_stack([-model.u_max, model.u_max])
        self.data = mujoco.MjData(self.mj)
        self.command, self._step, self._mujoco = command, mujoco.mj_step, mujoco

    def reset(self, q0) -> None:
        from robots.urdf import mujoco_state

        self._mujoco.mj_resetData(self.mj, self.data)
        self.data.qpos[:], self.data.qvel[:] = mujoco_state(q0, np.zeros(self.mj.nv))
        self.data.ctrl[:] = self.command.q_des
        self.data.qfrc_applied[6:] = self.command.tau_ff

    def step(self, command, dt):
        self._step(self.mj, self.data)
        return self

    @property
    def violation(self) -> str:
        return ""

    @property
    def q(self) -> np.ndarray:
        return self.data.qpos  # [2] is the base height in both conventions


def bench_plant3d(args) -> dict:
    """Per-step cost (us), real-time factor and resting height of each plant on go1 (module docstring)."""
    from mpc.controllers import stance_feedforward
    from robots import get_robot
    from sim.protocol import JointCommand
    from sim.registry import make_plant

    robot = "go1"
    model = get_robot(robot)
    command = JointCommand(stance_feedforward(model, model.q0), model.q0[7:].copy(), np.zeros(model.nu),
                           np.full(model.nu, 60.0), np.full(model.nu, 2.0))
    q0 = model.q0.copy()
    q0[2] += 0.1
    steps = int(round(T_END / DT))
    plants, out = {}, {}
    for name in PLANTS:
        try:
            plants[name] = make_plant(name, model)
        except ValueError as err:
            out[name] = {"supported": False, "reason": str(err)}
            continue
        _run(plants[name], q0, command, steps)  # warm-up (compiled code, caches)
    plants["mujoco_bare"] = BareMujoco(model, command)
    _run(plants["mujoco_bare"], q0, command, steps)
    reps = max(3, args.repeats or 5)
    walls: dict[str, list[float]] = {name: [] for name in plants}
    heights: dict[str, float] = {}
    for r in range(reps):
        for name, plant in plants.items():
            wall, heights[name] = _run(plant, q0, command, steps)
            walls[name].append(wall)
        print(f"[plant3d] repeat {r + 1}/{reps}", file=sys.stderr, flush=True)
    for name in plants:
        per_step = statistics.median(walls[name]) / steps
        out[name] = {"us_per_step": round(per_step * 1e6, 2), "rtf": round(DT / per_step, 1),
                     "us_per_step_min": round(min(walls[name]) / steps * 1e6, 2)}
    mj = out["mujoco_bare"]["us_per_step"]
    return {
        "robot": robot, "dt_ms": DT * 1e3, "sim_s_per_run": T_END, "repeats": reps, "plants": out,
        "ratio_vs_mujoco": {n: round(out[n]["us_per_step"] / mj, 3) for n in plants if not n.startswith("mujoco")},
        "ratio_vs_mujoco_plant": {n: round(out[n]["us_per_step"] / out["mujoco"]["us_per_step"], 3)
                                  for n in plants if not n.startswith("mujoco")},
        "rest_height_m": {n: round(h, 4) for n, h in heights.items()},
        "load_avg_1min": round(os.getloadavg()[0], 2),
    }
