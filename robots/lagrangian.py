"""Lagrangian mechanics for planar rigid bodies: body poses, masses, inertias -> M(q), h(q, v).

The kinetic energy of body b with centre of mass c_b(q) and pitch angle theta_b(q) is
    T_b = 1/2 m_b |dc_b/dt|^2 + 1/2 I_b (dtheta_b/dt)^2,
so M = sum_b m_b Jc_b^T Jc_b + I_b Jth_b^T Jth_b. With V(q) the potential energy,
Lagrange's equation d/dt(dT/dv) - dT/dq + dV/dq = tau gives M dv/dt + h = tau with
    h = (d(M v)/dq) v - dT/dq + dV/dq  (+ joint damping D v),
which for rigid bodies in the plane (no gyroscopic term) equals the body-by-body form
    h = sum_b m_b Jc_b^T (dJc_b/dt v) + I_b Jth_b^T (dJth_b/dt v) + dV/dq,
used here: each dJ/dt v is a 2-vector (or scalar) directional derivative, so h's expressions
are about half the size of the Jacobian of M v (quadruped vector field: 4173 -> 1940
instructions) with the same values (tests/test_mujoco_crosscheck.py checks h against MuJoCo).
All of it is symbolic (CasADi SX), so the numeric functions are generated from it.
"""
from __future__ import annotations

from dataclasses import dataclass

import casadi as ca


@dataclass(frozen=True, eq=False)
class BodyTerm:
    """One rigid body as seen by the Lagrangian: CoM position (SX 2-vector, m), pitch (SX, rad),
    mass (kg) and rotational inertia about the CoM around the plane normal (kg m^2)."""

    com: ca.SX
    angle: ca.SX
    mass: float
    inertia: float


@dataclass(frozen=True, eq=False)
class Dynamics:
    """The symbolic dynamics produced by `lagrangian_dynamics` (all SX)."""

    mass_matrix: ca.SX
    bias: ca.SX
    passive: ca.SX
    kinetic_energy: ca.SX
    potential_energy: ca.SX


def lagrangian_dynamics(
    q: ca.SX,
    v: ca.SX,
    bodies: list[BodyTerm],
    *,
    gravity: float,
    gravity_x: float = 0.0,
    spring_potential: ca.SX | float = 0.0,
    damping: ca.SX | None = None,
) -> Dynamics:
    """Derive M(q) and h(q, v) for planar bodies, assuming dq/dt = v.

    Args:
        q, v: SX column vectors of equal length.
        bodies: the bodies' CoM positions, pitch angles, masses and inertias.
        gravity: magnitude g of gravity along -z, m/s^2.
        gravity_x: gravity's x component, m/s^2 (non-zero on a tilted gravity: an inclined ground).
        spring_potential: SX scalar, elastic energy of passive springs in q, J.
        damping: SX (nv), generalized damping force D(q) v of passive dampers (N or N m), or None.
    Returns:
        Dynamics with M (nv x nv), h (nv), the passive part of h, T and V.
    """
    if q.numel() != v.numel():
        raise ValueError(f"lagrangian_dynamics needs dq/dt = v, got nq={q.numel()} and nv={v.numel()}")
    nv = v.numel()
    M = ca.SX.zeros(nv, nv)
    coriolis = ca.SX.zeros(nv, 1)
    V_gravity = ca.SX(0)
    for body in bodies:
        if body.mass < 0 or body.inertia < 0:
            raise ValueError(f"negative mass {body.mass} or inertia {body.inertia}")
        Jc = ca.jacobian(body.com, q)
        Jth = ca.jacobian(body.angle, q)
        M += body.mass * (Jc.T @ Jc) + body.inertia * (Jth.T @ Jth)
        # velocity-product accelerations dJ/dt v of the CoM and of the pitch rate
        coriolis += body.mass * (Jc.T @ ca.jtimes(Jc @ v, q, v)) + body.inertia * (Jth.T @ ca.jtimes(Jth @ v, q, v))
        V_gravity += body.mass * (gravity * body.com[1] - gravity_x * body.com[0])
    T = 0.5 * ca.dot(v, M @ v)
    V_spring = ca.SX(spring_potential)
    passive = ca.densify(ca.gradient(V_spring, q))
    if damping is not None:
        passive = passive + damping
    h = coriolis + ca.gradient(V_gravity, q) + passive
    return Dynamics(
        mass_matrix=M,
        bias=h,
        passive=passive,
        kinetic_energy=T,
        potential_energy=V_gravity + V_spring,
    )
