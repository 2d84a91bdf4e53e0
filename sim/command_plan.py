"""Plan-covered commands: what the plant applies between, and instead of, a controller's COMMANDs.

A controller may send, with each COMMAND, a short horizon of its plan: K >= 1 joint setpoints
(tau_ff, q_des, v_des) at stated times after the tick's STATE, sharing one pair of gains:

    plan = JointPlan(t_offset=[0, 0.01, 0.02], tau_ff=..., q_des=..., v_des=..., kp=..., kd=...)

Setpoint i is in force from t_offset[i] until t_offset[i + 1] (a step interpolation: v_des
already carries the slope between setpoints to the impedance law, and a horizon sent once then
followed is then exactly the same commands sent one per tick). K = 1 is the plain command.

`CommandKeeper` is the plant side's rule, shared by the plant server (bridge/server.py) and the
in-process loop (mpc/closed_loop.py), so that a lockstep sweep and a two-process run treat a
missed tick alike:
- a fresh command (on time) is applied from the tick's start: status "ok";
- a missed tick goes on along the horizon it holds while the tick starts within it
  (t <= t_command + t_offset[-1]) and not past the command's `valid_until` tick: "plan";
- past the horizon's end the last setpoint is held for `hold_ticks` ticks: "hold";
- then the safe command: zero torque, joint damping and a joint spring holding the joints where
  they were when it took over: "damp".
K = 1 has no horizon past its start, so its missed ticks are held and then damped, as always.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .protocol import JointCommand, PlantState

# a setpoint time within this of a tick's start counts as at the start (s): sums of periods and
# stated offsets differ in their last bits
TIME_EPS = 1e-9
MAX_SETPOINTS = 64  # the largest K a COMMAND may carry
MAX_PLAN_S = 2.0  # the latest setpoint time a COMMAND may state, s after its STATE


@dataclass(frozen=True)
class JointPlan:
    """K joint setpoints at t_offset (K,) seconds after the tick's STATE (t_offset[0] = 0,
    strictly increasing), each row of tau_ff (N m), q_des (rad), v_des (rad/s) of shape (K, nu);
    kp (N m/rad) and kd (N m s/rad) of shape (nu,) for all of them."""

    t_offset: np.ndarray
    tau_ff: np.ndarray
    q_des: np.ndarray
    v_des: np.ndarray
    kp: np.ndarray
    kd: np.ndarray

    @classmethod
    def of(cls, command) -> "JointPlan":
        """A JointPlan as is, or a JointCommand as the one-setpoint plan (K = 1)."""
        if isinstance(command, JointPlan):
            return command
        f8 = np.float64
        return cls(np.zeros(1), np.asarray(command.tau_ff, f8)[None, :], np.asarray(command.q_des, f8)[None, :],
                   np.asarray(command.v_des, f8)[None, :], np.asarray(command.kp, f8), np.asarray(command.kd, f8))

    @property
    def k(self) -> int:
        """The number of setpoints."""
        return len(self.t_offset)

    @property
    def end_s(self) -> float:
        """The last setpoint's time after the STATE, s (0 for K = 1)."""
        return float(self.t_offset[-1])

    def setpoint(self, i: int) -> JointCommand:
        """Setpoint i as a JointCommand."""
        return JointCommand(self.tau_ff[i], self.q_des[i], self.v_des[i], self.kp, self.kd)

    def index_at(self, dt: float) -> int:
        """The setpoint in force dt seconds after the STATE (the last one stated at or before
        dt + TIME_EPS; the first one before 0)."""
        return max(0, int(np.searchsorted(self.t_offset, dt + TIME_EPS, side="right")) - 1)


def safe_stiffness(model, safe_kp: float | None = None) -> float:
    """The safe command's joint spring (N m/rad): `safe_kp` if given, else the robot's
    controller_defaults["safe"]["kp"], else 0 (damping only)."""
    return model.controller_defaults.get("safe", {}).get("kp", 0.0) if safe_kp is None else safe_kp


class CommandKeeper:
    """The command in force at the plant and what a missed tick applies (module docstring).

    hold_ticks: ticks the last setpoint is held past a horizon's end. safe_kp, damping_kd: the
    safe command's joint spring (N m/rad) and damping (N m s/rad). joints_q: index into q of each
    actuated joint (the spring's hold point)."""

    def __init__(self, nu: int, joints_q: np.ndarray, *, hold_ticks: int, safe_kp: float, damping_kd: float):
        self.nu, self.joints_q = nu, joints_q
        self.hold_ticks, self.safe_kp, self.damping_kd = hold_ticks, safe_kp, damping_kd
        self.plan: JointPlan | None = None
        self.t0 = 0.0  # the sim time of the plan's STATE
        self.valid_until = -1
        self.held = 0  # missed ticks past the plan's end so far
        self.safe: JointCommand | None = None

    def accept(self, plan: JointPlan, t: float, valid_until: int = -1) -> None:
        """A fresh command for the tick whose STATE had sim time t (s)."""
        self.plan, self.t0, self.valid_until, self.held, self.safe = plan, float(t), int(valid_until), 0, None

    def drop(self) -> None:
        """Forget the command in force (the plant could not apply it): the safe command follows."""
        self.plan = None

    def status(self, tick: int, t: float) -> str:
        """What a missed tick starting at sim time t applies: "plan", "hold" or "damp" (the
        module docstring's order); counts the held ticks."""
        p = self.plan
        if p is None or (self.valid_until >= 0 and tick > self.valid_until):
            return "damp"
        if p.k > 1 and t - self.t0 <= p.end_s + TIME_EPS:
            return "plan"
        self.held += 1
        return "hold" if self.held <= self.hold_ticks else "damp"

    def safe_command(self, q: np.ndarray) -> JointCommand:
        """The safe command, made once per fallback from the joint positions q[joints_q] at its start."""
        if self.safe is None:
            nu, kp = self.nu, self.safe_kp
            q_hold = q[self.joints_q].astype(float) if kp > 0 else np.zeros(nu)
            self.safe = JointCommand(np.zeros(nu), q_hold, np.zeros(nu), np.full(nu, kp), np.full(nu, self.damping_kd))
        return self.safe

    def step(self, plant, state: PlantState, period: float, status: str) -> PlantState:
        """Step `plant` from `state` over one control period under `status` ("ok", "plan", "hold"
        apply the plan in force, "damp" the safe command); the plan's setpoints change at their
        stated times inside the period (one plant.step per piece)."""
        p = self.plan
        if status == "damp" or p is None:
            return plant.step(self.safe_command(state.q), period)
        t_start = state.t - self.t0
        i = p.index_at(t_start)
        if p.k == 1 or i == p.k - 1:
            return plant.step(p.setpoint(i), period)
        done = 0.0
        while True:
            nxt = p.t_offset[i + 1] - t_start if i + 1 < p.k else np.inf
            if nxt >= period - TIME_EPS:
                return plant.step(p.setpoint(i), period - done)
            state = plant.step(p.setpoint(i), nxt - done)
            done, i = nxt, i + 1
