"""Compiled (numba) kernels of the hybrid simulator: the constrained dynamics of one contact mode.

A mode's constraint rows are given as two int64 arrays: `rows_c[r]` = contact index,
`rows_k[r]` = 0 for its normal row (Jn_i, gap) or 1 for its tangential row (Jt_i, sticking).
In a mode the index-reduced DAE is

    M a = tau - h + A^T lam,        A a + (dA/dt) v = 0,

so lam = G^-1 (-(A M^-1 (tau - h) + (dA/dt) v)) with G = A M^-1 A^T (the Delassus matrix),
a = M^-1 (tau - h + A^T lam). lam are contact forces in N (normal > 0 pushes apart).
A sliding contact (normal row only) carries Coulomb's kinetic friction: its force acts along
F_r = Jn_i - slide_mu[r] Jt_i with slide_mu[r] = mu_i sign(vt_i) (the friction force is
-mu fn sign(vt)), so M a = tau - h + F^T lam and G = A M^-1 F^T is not symmetric; slide_mu[r]
is 0 for sticking rows and frictionless sliding.
Every model quantity comes from the robot's generated C functions (see `cfun.py`); no CasADi
and no Python runs inside these kernels. Units: SI (m, s, rad, N, N m).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from robots import ccall

from . import cfun as _cfun_module
from .cfun import F_BIAS, F_BIASACC, F_GAP, F_JAC, F_MASS, F_POINTS, cfun


@njit(cache=True)
def model_terms(addr, q, v, nv, nc):
    """M (nv x nv), h (nv), Jn (nc x nv), Jt (nc x nv), dJn/dt v (nc), dJt/dt v (nc) at (q, v)."""
    qc = np.ascontiguousarray(q)
    x = np.empty(2 * nv)
    x[:nv] = q
    x[nv:] = v
    M = np.empty((nv, nv))
    h = np.empty(nv)
    J = np.empty(2 * nc * nv)
    ab = np.empty(2 * nc)
    cfun(addr[F_MASS], qc.ctypes.data, M.ctypes.data)
    cfun(addr[F_BIAS], x.ctypes.data, h.ctypes.data)
    if nc > 0:
        cfun(addr[F_JAC], qc.ctypes.data, J.ctypes.data)
        cfun(addr[F_BIASACC], x.ctypes.data, ab.ctypes.data)
    Jn = J[: nc * nv].reshape((nc, nv)).copy()
    Jt = J[nc * nv:].reshape((nc, nv)).copy()
    return M, h, Jn, Jt, ab[:nc].copy(), ab[nc:].copy()


@njit(cache=True)
def contact_gaps(addr, q, nc):
    """Signed gaps phi(q) (nc), m."""
    qc = np.ascontiguousarray(q)
    out = np.empty(max(nc, 1))
    if nc > 0:
        cfun(addr[F_GAP], qc.ctypes.data, out.ctypes.data)
    return out[:nc]


@njit(cache=True)
def contact_points(addr, q, nc):
    """Contact points (nc x 2), (x, z) in m."""
    qc = np.ascontiguousarray(q)
    out = np.empty(max(2 * nc, 1))
    if nc > 0:
        cfun(addr[F_POINTS], qc.ctypes.data, out.ctypes.data)
    return out[: 2 * nc].reshape((nc, 2)).copy()


@njit(cache=True)
def joint_torque(q, v, joints, u_max, tau_ff, q_des, v_des, kp, kd, nv):
    """Joint impedance law tau = tau_ff + kp (q_des - q_j) + kd (v_des - v_j), clipped to +-u_max
    (nu, N m), and its generalized force B tau (nv) for a selection matrix B."""
    nu = joints.shape[0]
    tau = np.empty(nu)
    gen = np.zeros(nv)
    for k in range(nu):
        j = joints[k]
        t = tau_ff[k] + kp[k] * (q_des[k] - q[j]) + kd[k] * (v_des[k] - v[j])
        if t > u_max[k]:
            t = u_max[k]
        elif t < -u_max[k]:
            t = -u_max[k]
        tau[k] = t
        gen[j] += t
    return tau, gen


@njit(cache=True)
def constraint_rows(Jn, Jt, an, at, rows_c, rows_k):
    """A (m x nv) and dA/dt v (m) of a mode from the contact Jacobians and bias accelerations."""
    m = rows_c.shape[0]
    nv = Jn.shape[1]
    A = np.empty((m, nv))
    c = np.empty(m)
    for r in range(m):
        i = rows_c[r]
        if rows_k[r] == 0:
            A[r, :] = Jn[i, :]
            c[r] = an[i]
        else:
            A[r, :] = Jt[i, :]
            c[r] = at[i]
    return A, c


@njit(cache=True)
def force_rows(A, Jt, rows_c, slide_mu):
    """Directions F (m x nv) of a mode's constraint forces: A's rows, with -slide_mu[r] Jt_i added
    to the normal row of a sliding contact (kinetic friction, see the module docstring)."""
    F = A.copy()
    for r in range(A.shape[0]):
        if slide_mu[r] != 0.0:
            F[r, :] -= slide_mu[r] * Jt[rows_c[r], :]
    return F


@njit(cache=True)
def solve_mode(M, f, A, c, F):
    """Accelerations a (nv, m/s^2 or rad/s^2) and constraint forces lam (m, N) of the index-reduced
    mode dynamics M a = f + F^T lam, A a + c = 0, where f = tau - h (F = A without kinetic
    friction)."""
    m = A.shape[0]
    if m == 0:
        return np.linalg.solve(M, f), np.zeros(0)
    rhs = np.empty((M.shape[0], m + 1))
    rhs[:, :m] = F.T
    rhs[:, m] = f
    sol = np.linalg.solve(M, rhs)
    MinvAT = np.ascontiguousarray(sol[:, :m])
    Minvf = np.ascontiguousarray(sol[:, m])
    G = A @ MinvAT
    lam = np.linalg.solve(G, -(A @ Minvf + c))
    return Minvf + MinvAT @ lam, lam


@njit(cache=True)
def mode_rhs(addr, x, joints, u_max, tau_ff, q_des, v_des, kp, kd, rows_c, rows_k, slide_mu, nv, nc):
    """dx/dt (2 nv) of the state x = (q, v) in the mode given by rows_c/rows_k (slide_mu: kinetic
    friction per row, see the module docstring), and the mode's constraint forces (m, N), under
    the joint impedance law (evaluated continuously)."""
    q = x[:nv].copy()
    v = x[nv:].copy()
    M, h, Jn, Jt, an, at = model_terms(addr, q, v, nv, nc)
    _, gen = joint_torque(q, v, joints, u_max, tau_ff, q_des, v_des, kp, kd, nv)
    A, c = constraint_rows(Jn, Jt, an, at, rows_c, rows_k)
    a, lam = solve_mode(M, gen - h, A, c, force_rows(A, Jt, rows_c, slide_mu))
    xdot = np.empty(2 * nv)
    xdot[:nv] = v
    xdot[nv:] = a
    return xdot, lam


@njit(cache=True)
def constraint_values(addr, q, rows_c, rows_k, anchors, nc):
    """Position-level constraint residuals of a mode (m, m): the gap for normal rows, the contact
    point's x minus its anchor for sticking (tangential) rows."""
    m = rows_c.shape[0]
    out = np.empty(m)
    if m == 0:
        return out
    g = contact_gaps(addr, q, nc)
    P = contact_points(addr, q, nc)
    for r in range(m):
        i = rows_c[r]
        if rows_k[r] == 0:
            out[r] = g[i]
        else:
            out[r] = P[i, 0] - anchors[r]
    return out


@njit(cache=True)
def project_state(addr, q, v, rows_c, rows_k, anchors, nv, nc, iters):
    """Post-stabilization: move (q, v) onto the mode's constraint manifold along M^-1 A^T
    (Gauss-Newton, `iters` steps for q; one exact step for v). Returns new (q, v)."""
    m = rows_c.shape[0]
    q = q.copy()
    v = v.copy()
    if m == 0:
        return q, v
    zero = np.zeros(nv)
    for _ in range(iters):
        M, h, Jn, Jt, an, at = model_terms(addr, q, zero, nv, nc)
        A, c = constraint_rows(Jn, Jt, an, at, rows_c, rows_k)
        r = constraint_values(addr, q, rows_c, rows_k, anchors, nc)
        MinvAT = np.linalg.solve(M, np.ascontiguousarray(A.T))
        G = A @ MinvAT
        q -= MinvAT @ np.linalg.solve(G, r)
    M, h, Jn, Jt, an, at = model_terms(addr, q, zero, nv, nc)
    A, c = constraint_rows(Jn, Jt, an, at, rows_c, rows_k)
    MinvAT = np.linalg.solve(M, np.ascontiguousarray(A.T))
    G = A @ MinvAT
    v -= MinvAT @ np.linalg.solve(G, A @ v)
    return q, v


@njit(cache=True)
def tangential_speeds(addr, q, v, nv, nc):
    """Tangential contact-point velocities Jt(q) v (nc), m/s."""
    qc = np.ascontiguousarray(q)
    J = np.empty(max(2 * nc * nv, 1))
    if nc == 0:
        return np.zeros(0)
    cfun(addr[F_JAC], qc.ctypes.data, J.ctypes.data)
    return J[nc * nv: 2 * nc * nv].reshape((nc, nv)) @ np.ascontiguousarray(v)


@njit(cache=True)
def kinetic_margin(addr, q, rows_c, rows_k, slide_mu, nv, nc):
    """det(A M^-1 F^T) / det(A M^-1 A^T) of a mode at q: 1 without kinetic friction, and towards 0
    as sliding friction makes the contact forces singular (the Painleve paradox: the normal force
    needed to hold a sliding contact grows without bound, then flips sign)."""
    kinetic = False
    for r in range(slide_mu.shape[0]):
        if slide_mu[r] != 0.0:
            kinetic = True
    if not kinetic:
        return 1.0
    M, h, Jn, Jt, an, at = model_terms(addr, q, np.zeros(nv), nv, nc)
    A, c = constraint_rows(Jn, Jt, an, at, rows_c, rows_k)
    F = force_rows(A, Jt, rows_c, slide_mu)
    G0 = A @ np.linalg.solve(M, np.ascontiguousarray(A.T))
    G = A @ np.linalg.solve(M, np.ascontiguousarray(F.T))
    return np.linalg.det(G) / np.linalg.det(G0)


# numba tracks this file only; cfun and ccall are inlined into the cached code above
ccall.drop_stale_cache(model_terms, "kernels.", [_cfun_module.__file__, ccall.__file__])
