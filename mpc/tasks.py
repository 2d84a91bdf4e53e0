"""Locomotion tasks: what the MPC is asked to do, with validation that names the bad field.

    Task(vx=0.3, apex_height=0.45, period=0.4)      hopper: hop at apex z (m) and speed vx (m/s)
    Task(vx=0.3, period=0.4)                        quadruped: periodic forward gait at vx
    Task(stand=True)                                any legged robot: stand still in its q0

`period` (s) is the length of one cycle of the offline reference gait; it is the only timing
information given: when the feet touch down inside it is decided by the optimizer.

The task's kind follows from the robot's structure, not from its name (`task_kind`): a
floating planar base (coordinates named "x" and "z") with actuators and one contact hops
("hop": the gait starts at the apex, apex_height applies); with two or more contacts it walks
("gait"). A stand task (stand=True, any kind) pins the reference to the robot's nominal pose q0:
the gait problem then only finds the contact forces and torques that hold it. The joint ranges the gait and the MPC keep are the model's own (`RobotModel.q_min`,
`q_max`, set by the robot's builder; see robots/library/hopper.py).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import casadi as ca
import numpy as np

from robots.model import RobotModel

MAX_SPEED = 2.0  # m/s, the largest commanded forward speed we accept
PITCH_LIMIT = 0.3  # rad: |pitch| of a pitching base over the gait (the quadruped's number)
Z_MIN_FRACTION = 0.5  # the gait keeps the base above this fraction of its nominal height q0[z]
# hop apex heights, as multiples of the nominal base height q0[z]: the hopper's [0.36, 0.7] m
# (q0[z] = 0.4 m, the foot just touching) and its default 0.45 m
APEX_RANGE = (0.9, 1.75)
APEX_DEFAULT = 1.125
FAR = 1e6  # the bound used for the open side of a one-sided joint range (m or rad: never active)
# per-robot data: the joint angles (rad) of the gait problem's initial guess; a robot not
# listed starts from its q0 (for the hopper, q0's straight leg is outside its knee range)
GUESS_POSES: dict[str, dict[str, float]] = {"hopper": {"hip": 0.2, "knee": -0.4}}


def task_kind(model: RobotModel) -> str:
    """"hop" (floating planar base, actuators, one contact) or "gait" (two or more contacts).

    Raises ValueError naming what the robot lacks for a locomotion task."""
    missing = [n for n in ("x", "z") if n not in model.q_names]
    if missing:
        raise ValueError(f"robot {model.name!r} has no floating planar base: the MPC's locomotion task needs "
                         f"coordinates named 'x' and 'z' (slide_x, slide_z joints of the root body), missing "
                         f"{missing}; q = {model.q_names}")
    if model.nu == 0:
        raise ValueError(f"robot {model.name!r} has no actuators: the MPC has nothing to command")
    if model.nc == 0:
        raise ValueError(f"robot {model.name!r} has no contacts: a locomotion task needs feet")
    return "hop" if model.nc == 1 else "gait"


@dataclass(frozen=True)
class Task:
    """vx: commanded forward speed, m/s (|vx| <= 2). apex_height: base height at the apex of
    each hop, m (robots that hop, i.e. one contact; None for robots that walk; None for a hopping
    robot means APEX_DEFAULT x its nominal height). period: reference gait period, s.
    stand: stand still in the nominal pose q0 (vx must be 0, no apex_height)."""

    vx: float = 0.0
    apex_height: float | None = None
    period: float = 0.4
    stand: bool = False

    def for_model(self, model: RobotModel) -> "Task":
        """This task with the robot's defaults filled in (a hopping robot's apex height)."""
        if self.apex_height is None and task_kind(model) == "hop" and not self.stand:
            return replace(self, apex_height=round(APEX_DEFAULT * _z0(model), 6))
        return self

    def validate(self, model: RobotModel) -> "Task":
        """Raise ValueError naming the bad field and the fix; return self."""
        kind = task_kind(model)
        if not (np.isfinite(self.vx) and abs(self.vx) <= MAX_SPEED):
            raise ValueError(f"task vx must be a speed in [-{MAX_SPEED}, {MAX_SPEED}] m/s, got {self.vx}")
        if not (np.isfinite(self.period) and 0.1 <= self.period <= 2.0):
            raise ValueError(f"task period must be in [0.1, 2.0] s, got {self.period}")
        if self.stand:
            if self.vx != 0 or self.apex_height is not None:
                raise ValueError(f"a stand task keeps {model.name!r} still in its q0: set vx = 0 and no apex_height "
                                 f"(got vx={self.vx}, apex_height={self.apex_height})")
        elif kind == "hop":
            lo, hi = (round(f * _z0(model), 6) for f in APEX_RANGE)
            if self.apex_height is None or not (lo <= self.apex_height <= hi):
                raise ValueError(f"{model.name} task apex_height must be in [{lo:g}, {hi:g}] m (base height at the "
                                 f"top of a hop), got {self.apex_height}")
        elif self.apex_height is not None:
            raise ValueError(f"apex_height only applies to hopping robots (one contact); remove it for {model.name!r}")
        return self

    def joint_limits(self, model: RobotModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indices in q, lower, upper) of the joint ranges this task keeps: the model's finite
        q_min/q_max (m or rad; an open side becomes +-FAR)."""
        finite = np.isfinite(model.q_min) | np.isfinite(model.q_max)
        idx = np.flatnonzero(finite)
        lo = np.where(np.isfinite(model.q_min), model.q_min, -FAR)[idx]
        hi = np.where(np.isfinite(model.q_max), model.q_max, FAR)[idx]
        return idx.astype(int), lo.astype(float), hi.astype(float)

    def apex_state(self, model: RobotModel) -> np.ndarray:
        """A trivial initial-guess state: nominal pose (a hopping robot at the apex), joints at
        the robot's GUESS_POSES entry if it has one, moving forward at vx."""
        q = model.q0.copy()
        if self.stand:
            return np.concatenate([q, np.zeros(model.nv)])
        if task_kind(model) == "hop":
            q[model.q_names.index("z")] = self.apex_height
        for name, angle in GUESS_POSES.get(model.name, {}).items():
            q[model.q_names.index(name)] = angle
        v = np.zeros(model.nv)
        v[model.q_names.index("x")] = self.vx
        return np.concatenate([q, v])

    def gait_constraints(self, ocp, X: list, U: list) -> tuple[list, list, list]:
        """Periodicity, start pose and joint ranges of the gait problem, as (g, lbg, ubg)."""
        model = ocp.model
        nq = model.nq
        n = len(U)
        ix, iz = model.q_names.index("x"), model.q_names.index("z")
        g, lb, ub = [], [], []
        shift = np.zeros(ocp.nx)
        shift[ix] = self.vx * self.period
        g += [X[n] - X[0] - shift, X[0][ix]]  # periodic, starting at x = 0
        lb += [np.zeros(ocp.nx), 0.0]
        ub += [np.zeros(ocp.nx), 0.0]
        if self.stand:  # every stage at rest in q0 (x = 0): only forces and torques are free
            for k in range(n + 1):
                g += [X[k]]
                lb += [np.concatenate([model.q0, np.zeros(model.nv)])]
                ub += [np.concatenate([model.q0, np.zeros(model.nv)])]
        elif task_kind(model) == "hop":
            g += [X[0][iz], X[0][nq + iz]]  # at the apex: z = apex height, vertical speed 0
            lb += [self.apex_height, 0.0]
            ub += [self.apex_height, 0.0]
        idx, lo, hi = self.joint_limits(model)
        for k in range(1, n + 1):
            g += [X[k][list(idx)], X[k][iz]]
            lb += [lo, Z_MIN_FRACTION * model.q0[iz]]
            ub += [hi, np.inf]
        if "pitch" in model.q_names:
            ipitch = model.q_names.index("pitch")
            g += [ca.vertcat(*[X[k][ipitch] for k in range(n + 1)])]
            lb += [np.full(n + 1, -PITCH_LIMIT)]
            ub += [np.full(n + 1, PITCH_LIMIT)]
        return g, lb, ub


def _z0(model: RobotModel) -> float:
    return float(model.q0[model.q_names.index("z")])
