"""What the three fixed-step baseline plants share: set-up checks, the step loop, statistics.

A baseline advances in fixed internal steps of `dt_sim` seconds (the last one of a `step`
call may be shorter so that `step(cmd, dt)` lands exactly on t + dt). The joint impedance
law is evaluated at the start of each internal step and held over it (plant rate = 1/dt_sim).
Statistics (`plant.stats`): internal steps, contact transitions (changes of any contact's
in-contact flag between internal steps) and the largest penetration seen (m).
"""
from __future__ import annotations

import math

import numpy as np

from robots import numeric
from robots.model import RobotModel
from sim.hybrid.cfun import address_table
from sim.hybrid.kernels import contact_gaps, joint_torque
from sim.invariants import DEFAULT_PENETRATION_LIMIT_M, Invariants
from sim.protocol import JointCommand, PlantState, actuated_joints, checked_dt, checked_reset, require_planar


def check_positive(owner: str, name: str, value, *, allow_zero: bool = False) -> float:
    """`value` as a finite float > 0 (>= 0 with allow_zero), else ValueError naming `name`."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{owner}: {name} must be a finite number {bound}, got {value!r}")
    return float(value)


def check_restitution(owner: str, value) -> float:
    """Coefficient of restitution in [0, 1], else ValueError naming `restitution`."""
    e = check_positive(owner, "restitution", value, allow_zero=True)
    if e > 1:
        raise ValueError(f"{owner}: restitution must be in [0, 1], got {value!r}")
    return e


def weight(fns, model: RobotModel) -> float:
    """A force scale (N): the largest gravity generalized force at q0 (the weight of a floating robot)."""
    g = fns.bias(model.q0, np.zeros(model.nv)) - fns.passive(model.q0, np.zeros(model.nv))
    return float(np.abs(g).max()) or 1.0


class FixedStepPlant:
    """Base of the baseline plants (plant protocol). Subclasses implement `_substep(h)`,
    which advances (self.q, self.v) by h seconds and sets self.fn (nc normal forces, N),
    self.ft (nc tangential forces, N) and self.flags (nc bool, in contact during the step)."""

    name = "baseline"

    def __init__(self, model: RobotModel, *, dt_sim: float,
                 penetration_limit_m: float = DEFAULT_PENETRATION_LIMIT_M) -> None:
        require_planar(model, self.name)
        self.model = model
        self.invariants = Invariants(model, penetration_limit_m)
        self.violation = ""  # latched until reset (sim/invariants.py)
        self.dt_sim = check_positive(f"{model.name} {self.name}", "dt_sim", dt_sim)
        self.fns = numeric(model, verbose=False)
        self.addr = address_table(self.fns)
        self.joints = actuated_joints(model)
        self.u_max = np.array(model.u_max, dtype=float)
        self.nq, self.nv, self.nc = model.nq, model.nv, model.nc
        self.weight = weight(self.fns, model)
        self._cmd = JointCommand.zero(model.nu).validated(model)
        self.t: float | None = None
        self.stats: dict = {}

    def reset(self, q, v=None, t: float = 0.0) -> PlantState:
        """Set the state (q in m/rad, v in m/s and rad/s, t in s) and return it."""
        q, v, t = checked_reset(self.model, q, v, t)
        self.t, self.q, self.v = t, q, v
        self.fn = np.zeros(self.nc)
        self.ft = np.zeros(self.nc)
        self.flags = np.zeros(self.nc, dtype=bool)
        self.tau = np.zeros(self.model.nu)
        self.stats = {"steps": 0, "transitions": 0,
                      "max_penetration": max(0.0, float(-contact_gaps(self.addr, q, self.nc).min(initial=0.0)))}
        self._reset_hook()
        self.violation = ""
        self.invariants.reset_report()
        self._check()
        return self.state()

    def _check(self, gaps: np.ndarray | None = None) -> str:
        violation = self.invariants.check(self.t, self.q, self.v, gaps)
        if violation:
            self.violation = violation
            self.invariants.report(violation)
        return violation

    def _reset_hook(self) -> None:
        """Subclass hook after reset (warm starts etc.)."""

    def step(self, command: JointCommand, dt: float) -> PlantState:
        """Advance dt seconds (>= 0) under `command` in internal steps of dt_sim."""
        if self.t is None:
            raise RuntimeError(f"{self.model.name}: call reset() before step()")
        dt = checked_dt(self.model, dt)
        self._cmd = command.validated(self.model)
        if self.violation:  # the physics failed earlier: hold the last good state until reset
            return self.state()
        t_end = self.t + float(dt)
        while self.t < t_end - 1e-12 * max(1.0, abs(t_end)):
            h = min(self.dt_sim, t_end - self.t)
            self.tau, self._gen = joint_torque(self.q, self.v, self.joints, self.u_max, self._cmd.tau_ff,
                                               self._cmd.q_des, self._cmd.v_des, self._cmd.kp, self._cmd.kd, self.nv)
            before = self.flags.copy()
            q0, v0 = self.q.copy(), self.v.copy()
            try:
                self._substep(h)
            except (RuntimeError, ArithmeticError, np.linalg.LinAlgError) as exc:  # never raised mid-run
                self.q, self.v = q0, v0
                self.violation = f"{self.name} step failed at t={self.t:.6g} s: {str(exc).splitlines()[0]}"
                self.invariants.report(self.violation)
                return self.state()
            if not np.all(np.isfinite(self.q)) or not np.all(np.isfinite(self.v)):
                self._check()  # reports the non-finite state; the last good state is kept
                self.q, self.v = q0, v0
                self.violation += f" (dt_sim={self.dt_sim} s is too large for this contact model?)"
                return self.state()
            self.t += h
            self.stats["steps"] += 1
            self.stats["transitions"] += int(np.count_nonzero(before != self.flags))
            gaps = contact_gaps(self.addr, self.q, self.nc)
            if gaps.size:
                self.stats["max_penetration"] = max(self.stats["max_penetration"], float(-gaps.min()))
            if self._check(gaps):
                return self.state()
        self.t = t_end
        return self.state()

    def state(self) -> PlantState:
        """The current PlantState: contact flags and (normal, tangential) forces of the last step, N."""
        force = np.stack([self.fn, self.ft], axis=1) if self.nc else np.zeros((0, 2))
        return PlantState(self.t, self.q.copy(), self.v.copy(), self.flags.copy(), force, np.array(self.tau),
                          self.violation)

    def energy(self) -> float:
        """Total mechanical energy T + V of the robot (contact springs excluded), J."""
        T, V = self.fns.energy(self.q, self.v)
        return T + V

    def _substep(self, h: float) -> None:  # pragma: no cover - abstract
        raise NotImplementedError
