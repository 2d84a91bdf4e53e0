"""Leg kinematics in the base frame, for the estimator: where each foot's sphere centre is and
how fast the sphere's bottom point moves relative to the base, from the joint angles alone.

The robot's contact points (robots/floating.py: the foot sphere's lowest point, centre minus
radius along world z) with the base at the origin, level, are the centres minus radius along
the base's z. A standing foot rolls about that bottom point (it is what sticks), so the
velocity the estimator equates to the base's is the bottom point's: the centre's plus the foot
body's rotation about it, `Contact.velocity`. The centres and the bottom points' velocity Jacobian
in the joint velocities come from the symbolic model, as C that CasADi generates and
robots/codegen.py compiles once (the estimator's kernel calls it).
"""
from __future__ import annotations

import weakref

import casadi as ca
import numpy as np

_BUILT: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # model -> its LegKinematics


def leg_kinematics(model) -> "LegKinematics":
    """The LegKinematics of `model`, built once per model object: building one generates and
    hashes its C (~6 ms), which a controller's estimator must not pay when its run's CONFIG
    arrives (`LeggedEstimator.warm_up` builds it before the run's clock starts)."""
    legs = _BUILT.get(model)
    if legs is None:
        legs = _BUILT[model] = LegKinematics(model)
    return legs


class LegKinematics:
    """Foot sphere centres (nc, 3) in the base frame and the velocity Jacobians (nc, 3, nu) of the
    spheres' bottom points in the joint velocities, for a floating-base RobotModel (base level)."""

    def __init__(self, model):
        if not model.floating_base:
            raise ValueError(f"{model.name}: leg kinematics for the estimator need a floating-base robot")
        nq, nu = model.nq, model.nu
        joints = ca.SX.sym("qj", nu)
        q_base = ca.DM([0, 0, 0, 0, 0, 0, 1])
        q = ca.vertcat(q_base, joints) if nq == 7 + nu else None
        if q is None:
            raise ValueError(f"{model.name}: nq = {nq} is not 7 + nu = {7 + nu}")
        centres = [ca.substitute(c.point, model.q, q) + ca.DM([0, 0, c.radius]) for c in model.contacts]
        stacked = ca.vertcat(*centres)
        # the velocity of each sphere's material point at its bottom (the point that sticks: a foot
        # rolls about it, robots/floating.py) per unit joint velocity, the base level and still
        rows = [ca.substitute(ca.jacobian(model.touching_velocity(c), model.v)[:, 6:], model.q, q)
                for c in model.contacts]
        self.nc, self.nu = model.nc, nu
        self.radius = np.array([c.radius for c in model.contacts])
        from robots.codegen import compile_functions

        f = ca.Function("legs", [joints], [stacked, ca.vertcat(*rows)], ["q_joint"], ["centres", "jacobian"])
        self.compiled = compile_functions([f], lib_name=f"{model.name}_legs", verbose=False)["legs"]

    def __call__(self, q_joint: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(centres (nc, 3) m, bottom points' velocity Jacobians (nc, 3, nu), m/s per rad/s) at joint
        angles q_joint (rad)."""
        r, J = self.compiled(np.asarray(q_joint, float))
        return np.asarray(r).reshape(self.nc, 3), np.asarray(J).reshape(self.nc, 3, self.nu)
