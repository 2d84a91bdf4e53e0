"""Locomotion tasks: what the MPC is asked to do, with validation that names the bad field.

    Task(vx=0.3, apex_height=0.45, period=0.4)      hopper: hop at apex z (m) and speed vx (m/s)
    Task(vx=0.3, period=0.4)                        quadruped: periodic forward gait at vx

`period` (s) is the length of one cycle of the offline reference gait; it is the only timing
information given: when the feet touch down inside it is decided by the optimizer.
"""
from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np

from robots.model import RobotModel

MAX_SPEED = 2.0  # m/s, the largest commanded forward speed we accept
JOINT_RANGES = {"hopper": {"hip": (-1.2, 1.2), "knee": (-2.4, -0.05)},
                "quadruped": {"hip": (-0.2, 1.8), "knee": (-2.6, -0.6)}}


@dataclass(frozen=True)
class Task:
    """vx: commanded forward speed, m/s (|vx| <= 2). apex_height: hopper base height at the apex
    of each hop, m (None for robots that walk). period: reference gait period, s."""

    vx: float = 0.0
    apex_height: float | None = None
    period: float = 0.4

    def validate(self, model: RobotModel) -> "Task":
        """Raise ValueError naming the bad field and the fix; return self."""
        if model.name not in JOINT_RANGES:
            raise ValueError(f"no locomotion task for robot {model.name!r}; the MPC supports: {', '.join(JOINT_RANGES)}")
        if not (np.isfinite(self.vx) and abs(self.vx) <= MAX_SPEED):
            raise ValueError(f"task vx must be a speed in [-{MAX_SPEED}, {MAX_SPEED}] m/s, got {self.vx}")
        if not (np.isfinite(self.period) and 0.1 <= self.period <= 2.0):
            raise ValueError(f"task period must be in [0.1, 2.0] s, got {self.period}")
        if model.name == "hopper":
            if self.apex_height is None or not (0.36 <= self.apex_height <= 0.7):
                raise ValueError(f"hopper task apex_height must be in [0.36, 0.7] m (base height at the top of a hop), "
                                 f"got {self.apex_height}")
        elif self.apex_height is not None:
            raise ValueError(f"apex_height only applies to the hopper; remove it for {model.name!r}")
        return self

    def joint_limits(self, model: RobotModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indices in q, lower, upper) of the joint ranges this task keeps (rad)."""
        idx, lo, hi = [], [], []
        for i, name in enumerate(model.q_names):
            kind = name.split("_")[-1]
            if kind in JOINT_RANGES[model.name]:
                idx.append(i)
                lo.append(JOINT_RANGES[model.name][kind][0])
                hi.append(JOINT_RANGES[model.name][kind][1])
        return np.array(idx, int), np.array(lo), np.array(hi)

    def apex_state(self, model: RobotModel) -> np.ndarray:
        """A trivial initial-guess state: nominal pose (hopper: at the apex, knee slightly bent),
        moving forward at vx."""
        q = model.q0.copy()
        if model.name == "hopper":
            q[1] = self.apex_height
            q[2], q[3] = 0.2, -0.4
        v = np.zeros(model.nv)
        v[0] = self.vx
        return np.concatenate([q, v])

    def gait_constraints(self, ocp, X: list, U: list) -> tuple[list, list, list]:
        """Periodicity, start pose and joint ranges of the gait problem, as (g, lbg, ubg)."""
        model = ocp.model
        nq = model.nq
        n = len(U)
        g, lb, ub = [], [], []
        shift = np.zeros(ocp.nx)
        shift[0] = self.vx * self.period
        g += [X[n] - X[0] - shift, X[0][0]]  # periodic, starting at x = 0
        lb += [np.zeros(ocp.nx), 0.0]
        ub += [np.zeros(ocp.nx), 0.0]
        if model.name == "hopper":
            g += [X[0][1], X[0][nq + 1]]  # at the apex: z = apex height, vertical speed 0
            lb += [self.apex_height, 0.0]
            ub += [self.apex_height, 0.0]
        idx, lo, hi = self.joint_limits(model)
        iz = model.q_names.index("z")
        for k in range(1, n + 1):
            g += [X[k][list(idx)], X[k][iz]]
            lb += [lo, 0.5 * model.q0[iz]]
            ub += [hi, np.inf]
        if model.name == "quadruped":
            ipitch = model.q_names.index("pitch")
            g += [ca.vertcat(*[X[k][ipitch] for k in range(n + 1)])]
            lb += [np.full(n + 1, -0.3)]
            ub += [np.full(n + 1, 0.3)]
        return g, lb, ub
