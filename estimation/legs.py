"""Leg kinematics in the base frame, for the estimator: where each foot's sphere centre is and
how fast it moves relative to the base, from the joint angles alone.

The robot's contact points (robots/floating.py: the foot sphere's lowest point, centre minus
radius along world z) with the base at the origin, level, are the centres minus radius along
the base's z; the centres and their Jacobian in the joint angles come from the symbolic model, as C that
CasADi generates and robots/codegen.py compiles once (the estimator's kernel calls it).
"""
from __future__ import annotations

import casadi as ca
import numpy as np


class LegKinematics:
    """Foot sphere centres (nc, 3) in the base frame and their Jacobians (nc, 3, nu) in the joint
    angles, for a floating-base RobotModel."""

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
        self.nc, self.nu = model.nc, nu
        self.radius = np.array([c.radius for c in model.contacts])
        from robots.codegen import compile_functions

        f = ca.Function("legs", [joints], [stacked, ca.jacobian(stacked, joints)], ["q_joint"], ["centres", "jacobian"])
        self.compiled = compile_functions([f], lib_name=f"{model.name}_legs", verbose=False)["legs"]

    def __call__(self, q_joint: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(centres (nc, 3) m, Jacobians (nc, 3, nu)) at joint angles q_joint (rad)."""
        r, J = self.compiled(np.asarray(q_joint, float))
        return np.asarray(r).reshape(self.nc, 3), np.asarray(J).reshape(self.nc, 3, self.nu)
