"""`bench plant3d`: the plants' cost on go1 (`--robot NAME`: another 3D robot) at a 1 ms period, ESS and NMDP
against MuJoCo.

Workload (the same for every plant): go1 dropped from 0.1 m above its standing pose under the
joint PD stand command with the stance feed-forward (`stand_command`: kp 60, kd 2 on go1, from
the robot's data on another robot), 2 s of simulated time,
one `step(command, 0.001)` per millisecond (the plant protocol's call; MuJoCo's own step is 1 ms
with the impedance law evaluated before each). Repeats of the plants are interleaved (run 1 of
each, then run 2 of each, ...) so that a slow phase of the machine hits all alike; figures are
medians after a warm-up run. The base height at the end of a run is the plant's resting height.
A plant that cannot run a 3D robot reports why instead of figures.

Two MuJoCo figures: "mujoco" is our MujocoPlant (the plant protocol: one `step` call per 1 ms,
each validating the command, building a new PlantState and checking the invariants; the
impedance law is MuJoCo's actuators), "mujoco_bare" is MuJoCo alone on the
same MJCF, the same PD law as MuJoCo actuators (gain kp on ctrl = q_des, affine bias -kp q -kd
qdot, force clamped to u_max, the feed-forward in qfrc_applied) stepped by `mj_step` in a loop:
the fair peer for a step's cost. `ratio_vs_mujoco` divides by the bare figure;
`mujoco_plant_overhead` is our MuJoCo plant over bare MuJoCo per MuJoCo step at a 1 ms and at the
runs' 10 ms control period (10 MuJoCo steps a call).

Accuracy (`accuracy_vs_fine_step`): each plant against itself at a fine step (FINE: ESS at rtol
1e-5 with 0.1 ms steps at most, NMDP at 0.1 ms, MuJoCo at 0.05 ms) over 1 s of an open-loop trot
(`trot_commands`: feet lift, land and slide), max and RMS distance of the base (mm). NMDP at
10 ms steps (`nmdp_10ms_steps`, its selling point): us per step, real-time factor and whether
go1 stays up on the stand and on that trot (2 s each, sim.metrics.fall_time), and its accuracy
at 10 ms against the same 0.1 ms reference.
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


STAND_KP_OVER_SAFE = 1.5  # the stand PD's kp over the robot's safe-command kp: go1's 60 N m/rad over 40
STAND_KP_OVER_KD = 30.0  # kp / kd (1/s): go1's 60 / 2


def stand_gains(model) -> tuple[float, float]:
    """(kp N m/rad, kd N m s/rad) of the bench's stand PD for `model`, from the robot's data: kp is
    STAND_KP_OVER_SAFE times its safe command's kp (`controller_defaults["safe"]["kp"]`, scaled
    by the robot's stance torques; robots/library/quadrupeds3d.py), kd = kp / STAND_KP_OVER_KD.
    go1: 60 and 2."""
    from robots.library.quadrupeds3d import QuadrupedSpec

    safe = model.controller_defaults.get("safe", {}).get("kp", QuadrupedSpec.safe_kp)  # a user's robot: the default
    kp = STAND_KP_OVER_SAFE * float(safe)
    return kp, kp / STAND_KP_OVER_KD


def stand_command(model):
    """The bench's stand: the PD of `stand_gains` towards q0's joints, with the stance feed-forward."""
    from mpc.controllers import stance_feedforward
    from sim.protocol import JointCommand

    kp, kd = stand_gains(model)
    nu = model.nu
    return JointCommand(stance_feedforward(model, model.q0), model.q0[7:].copy(), np.zeros(nu), np.full(nu, kp),
                        np.full(nu, kd))


def trot_commands(model, seconds: float, period: float) -> list:
    """An open-loop trot: the stand PD (`stand_command`) with each diagonal pair's thigh and calf
    references swinging 0.25 and 0.4 rad towards a bent knee (the signs of the standing knee
    angle: go1's +0.25 and -0.4 rad) at 2 Hz, the pairs in anti-phase; one JointCommand per
    period. The pairs come from the feet's positions at q0 (first the feet with x y > 0: go1's FL
    and RR). Feet lift, land and slide: the accuracy probe of `bench_plant3d`."""
    import casadi as ca

    from sim.protocol import JointCommand

    stand = stand_command(model)
    nu = model.nu
    feet = np.asarray(ca.Function("feet", [model.q], [model.contact_points()])(model.q0)).reshape(-1, 3)
    pair = [0 if x * y > 0 else 1 for x, y in feet[:, :2]]  # legs in the feet's order (go1: FL, FR, RL, RR)
    commands = []
    for k in range(int(round(seconds / period))):
        phase = 2.0 * np.pi * 2.0 * k * period
        q_des = stand.q_des.copy()
        for leg in range(nu // 3):
            lift = max(0.0, np.sin(phase + np.pi * pair[leg]))
            bend = np.sign(q_des[3 * leg + 2]) or -1.0
            q_des[3 * leg + 1] -= 0.25 * bend * lift
            q_des[3 * leg + 2] += 0.4 * bend * lift
        commands.append(JointCommand(stand.tau_ff, q_des, stand.v_des, stand.kp, stand.kd))
    return commands


def _trajectory(plant, q0: np.ndarray, commands, period: float) -> tuple[np.ndarray, float, str]:
    """(q after each tick (ticks, nq), wall seconds, the violation or "") of `commands` (one per
    period) from q0; a violation ends the run."""
    plant.reset(q0)
    out, violation = [], ""
    t0 = time.perf_counter()
    for c in commands:
        s = plant.step(c, period)
        if s.violation:
            violation = s.violation
            break
        out.append(s.q.copy())
    return np.array(out), time.perf_counter() - t0, violation


# each plant's fine-step reference for the accuracy column (options of make_plant)
FINE = {"ess": {"rtol": 1e-5, "atol": 1e-7, "plant_rate_hz": 1e4}, "nmdp": {"max_step": 1e-4},
        "mujoco": {"plant_rate_hz": 2e4}}
ACCURACY_S = 1.0  # s of the open-loop trot


def accuracy_mm(name: str, model, q0: np.ndarray, period: float, max_step: float | None = None) -> dict:
    """Max and RMS distance (mm) of the base from the plant's own fine-step reference (FINE) over
    ACCURACY_S of `trot_commands` at a command period (s); NMDP with max_step (s) when given."""
    from sim.registry import make_plant

    commands = trot_commands(model, ACCURACY_S, period)
    opts = {} if max_step is None else {"max_step": max_step}
    runs = [_trajectory(make_plant(name, model, **o), q0, commands, period) for o in (opts, FINE[name])]
    for _, _, violation in runs:
        if violation:
            raise RuntimeError(f"plant violation: {violation}")
    (ours, _, _), (fine, _, _) = runs
    err = np.linalg.norm(ours[:, :3] - fine[:, :3], axis=1) * 1e3  # the base's position
    return {"max_mm": round(float(err.max()), 3), "rms_mm": round(float(np.sqrt((err ** 2).mean())), 3)}


def nmdp_at_10ms(model, q0: np.ndarray, reps: int) -> dict:
    """NMDP with 10 ms steps (its selling point): us per step, real-time factor, and whether go1
    stays up on the stand (2 s) and on the open-loop trot (2 s) (`sim.metrics.fall_time`)."""
    from sim.metrics import body_heights, fall_time
    from sim.registry import make_plant

    period = 0.01
    plant = make_plant("nmdp", model, max_step=period)
    stand = [trot_commands(model, period, period)[0]] * 200  # the trot's first command: all four feet down
    out = {}
    for label, commands in (("stand", stand), ("trot", trot_commands(model, 2.0, period))):
        walls, violation = [], ""
        for _ in range(reps):
            qs, wall, bad = _trajectory(plant, q0, commands, period)
            walls.append(wall)
            violation = violation or bad
        t = period * np.arange(1, len(qs) + 1)
        fell = bool(violation) or fall_time(t, qs, list(model.q_names), float(model.q0[2]),
                                            body_heights(model, qs)) is not None
        per_step = statistics.median(walls) / len(commands)
        out[label] = {"us_per_step": round(per_step * 1e6, 1), "rtf": round(period / per_step, 1),
                      "fell": fell, "violation": violation or None}
    return out


def bench_robot(name: str):
    """The RobotModel `name` if the bench can run it (a 3D robot: a floating base and an MJCF);
    ValueError saying which robots to pass otherwise (an unknown name: get_robot's)."""
    from robots import get_robot

    model = get_robot(name)
    if not model.floating_base or not model.mjcf:
        raise ValueError(f"{name} is not a 3D robot with an MJCF (a floating base); pass a quadruped such as go1, "
                         "go2, a1, anymal_c or solo12")
    return model


def bench_plant3d(args) -> dict:
    """Per-step cost (us), real-time factor and resting height of each plant on go1, or the robot
    of `args.robot` (module docstring)."""
    from sim.registry import make_plant

    robot = getattr(args, "robot", None) or "go1"
    model = bench_robot(robot)
    command = stand_command(model)
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
    # our MuJoCo plant at the runs' 10 ms control period (10 MuJoCo steps a call) beside bare MuJoCo's
    slow = {"mujoco": make_plant("mujoco", model), "mujoco_bare": BareMujoco(model, command)}
    slow_walls: dict[str, list[float]] = {name: [] for name in slow}
    for r in range(reps):
        for name, plant in plants.items():
            wall, heights[name] = _run(plant, q0, command, steps)
            walls[name].append(wall)
        for name, plant in slow.items():
            plant.reset(q0)
            t0 = time.perf_counter()
            for _ in range(steps // 10):
                if name == "mujoco":
                    plant.step(command, 10 * DT)
                else:
                    for _ in range(10):
                        plant.step(command, DT)
            slow_walls[name].append(time.perf_counter() - t0)
        print(f"[plant3d] repeat {r + 1}/{reps}", file=sys.stderr, flush=True)
    for name in plants:
        per_step = statistics.median(walls[name]) / steps
        out[name] = {"us_per_step": round(per_step * 1e6, 2), "rtf": round(DT / per_step, 1),
                     "us_per_step_min": round(min(walls[name]) / steps * 1e6, 2)}
    mj = out["mujoco_bare"]["us_per_step"]
    slow_us = {n: statistics.median(w) / steps * 1e6 for n, w in slow_walls.items()}
    print("[plant3d] accuracy against each plant's fine-step reference", file=sys.stderr, flush=True)
    accuracy = {name: accuracy_mm(name, model, model.q0, DT) for name in PLANTS if name in plants}
    print("[plant3d] NMDP at 10 ms steps", file=sys.stderr, flush=True)
    ten = nmdp_at_10ms(model, model.q0, 3)
    accuracy["nmdp_10ms"] = accuracy_mm("nmdp", model, model.q0, 0.01, max_step=0.01)
    return {
        "robot": robot, "dt_ms": DT * 1e3, "sim_s_per_run": T_END, "repeats": reps, "plants": out,
        "ratio_vs_mujoco": {n: round(out[n]["us_per_step"] / mj, 3) for n in plants if not n.startswith("mujoco")},
        "ratio_vs_mujoco_plant": {n: round(out[n]["us_per_step"] / out["mujoco"]["us_per_step"], 3)
                                  for n in plants if not n.startswith("mujoco")},
        "mujoco_plant_overhead": {"1ms_period": round(out["mujoco"]["us_per_step"] / mj, 3),
                                  "10ms_period": round(slow_us["mujoco"] / slow_us["mujoco_bare"], 3)},
        "accuracy_vs_fine_step": accuracy, "accuracy_workload": f"open-loop trot, {ACCURACY_S:g} s, base position",
        "nmdp_10ms_steps": ten,
        "rest_height_m": {n: round(h, 4) for n, h in heights.items()},
        "load_avg_1min": round(os.getloadavg()[0], 2),
    }
