"""The single rigid body (SRB) of a floating-base robot, derived from its `RobotModel`.

The MPC of a 3D robot plans the motion of one rigid body carried by its feet: the robot's
whole mass m at its centre of mass, with the composite ("locked-joint") rotational inertia
of its standing pose, and each foot a point the plan places anywhere inside a box around the
foot's standing position under the body (its reach). Everything is read from the model at
its nominal pose q0: nothing here names a robot.

    srb = SingleRigidBody.from_model(get_robot("go1"))
    srb.mass, srb.com_offset (base frame, m), srb.inertia (3x3 about the CoM, base frame),
    srb.feet_nominal (nc x 3, CoM-relative, base frame), srb.reach_lo / reach_hi (m)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robots.model import RobotModel

# reach box of each foot around its standing position, body frame, as fractions of the CoM's
# standing height h: forward/back +-0.45 h, sideways +-0.25 h, up 0.45 h, down 0.1 h
REACH_FRACTIONS = {"x": 0.45, "y": 0.25, "up": 0.45, "down": 0.1}
# a foot's normal force limit: this many times the force its leg's motors hold at the standing
# pose (the lever arms change as the leg bends; with 1.0 go1's trot sagged by 6 cm at landings,
# with 1.5 it does not and the largest lateral push it survives is the same, docs/MPC.md)
FZ_MARGIN = 1.5


def _skew_vector(S: np.ndarray) -> np.ndarray:
    """c with S = [c]x (the cross-product matrix)."""
    return np.array([S[2, 1], S[0, 2], S[1, 0]])


@dataclass(frozen=True)
class SingleRigidBody:
    """Mass (kg), CoM offset from the base origin (base frame, m), inertia about the CoM (base
    frame, kg m^2), the feet's standing positions relative to the CoM (nc x 3, base frame, m),
    their reach box (lo, hi: nc x 3 offsets from the standing position, m), standing CoM height
    (m), friction mu per foot, the largest normal force the plan gives each foot (weights m g:
    FZ_MARGIN times the smallest u_max_j / |dz_foot / dq_j| over its leg's joints at q0), gravity
    (m/s^2), and the permutation of the feet under the left-right mirror (foot i <-> mirror[i])."""

    name: str
    mass: float
    com_offset: np.ndarray
    inertia: np.ndarray
    feet_nominal: np.ndarray
    reach_lo: np.ndarray
    reach_hi: np.ndarray
    height: float
    mu: np.ndarray
    fz_max: np.ndarray
    gravity: float
    mirror: tuple

    @property
    def nc(self) -> int:
        """Number of feet."""
        return self.feet_nominal.shape[0]

    @property
    def weight(self) -> float:
        """m g, N."""
        return self.mass * self.gravity

    @classmethod
    def from_model(cls, model: RobotModel) -> "SingleRigidBody":
        """The SRB of a floating-base model at its nominal pose q0 (module docstring)."""
        if not model.floating_base:
            raise ValueError(f"robot {model.name!r} has no floating base: the 3D MPC's single rigid body needs one "
                             "(planar robots use the whole-body MPC, mpc.wholebody)")
        if model.nc == 0 or model.nu == 0:
            raise ValueError(f"robot {model.name!r} needs feet and actuators for the 3D MPC "
                             f"(has {model.nc} contacts, {model.nu} actuators)")
        from robots import numeric

        fns = numeric(model, verbose=False)
        q0 = np.array(model.q0)
        M = fns.mass_matrix(q0)
        m = float(M[0, 0])
        c = _skew_vector(-M[0:3, 3:6] / m)
        S = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
        inertia = M[3:6, 3:6] - m * S.T @ S
        # the base is level at q0 (robots.floating.resting_configuration): base frame = world axes
        points = fns.contact_points(q0)
        feet = points - (q0[:3] + c)
        h = float(q0[2] + c[2] - np.min(points[:, 2]))
        f = REACH_FRACTIONS
        lo = np.tile([-f["x"] * h, -f["y"] * h, -f["down"] * h], (model.nc, 1))
        hi = np.tile([f["x"] * h, f["y"] * h, f["up"] * h], (model.nc, 1))
        mirror = []
        for i, p in enumerate(feet):
            d = np.linalg.norm(feet[:, :2] - [p[0], -p[1]], axis=1)
            mirror.append(int(np.argmin(d)))
        if sorted(mirror) != list(range(model.nc)):
            raise ValueError(f"{model.name}: the feet are not left-right symmetric at q0; mirror {mirror}")
        Jn, _ = fns.contact_jacobians(q0)
        fz_max = []
        for i in range(model.nc):
            lever = np.abs(Jn[i, 6:])
            moved = lever > 1e-9
            fz_max.append(FZ_MARGIN * float(np.min(np.asarray(model.u_max)[moved] / lever[moved])) / (m * model.gravity))
        return cls(model.name, m, c, inertia, feet, lo, hi, h, np.array([ct.mu for ct in model.contacts]),
                   np.array(fz_max), float(model.gravity), tuple(mirror))
