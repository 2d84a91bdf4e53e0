"""Compiled (numba) NMDP and linearised-MDP time steps over the generated C functions.

One step of the NMDP integrator (seed 002, Algorithms 1 and 2), for a state (q, v), step dt,
held joint command `cmd` and contact forces lam (each as a fraction of its contact's capacity:
normal and tangents, D = 2 planar or 3 per contact; warm-started; sim.nmdp.terms):

1. Manifold projection (`project`): with lam fixed, Newton's method on the backward-Euler
   residual R(v1; lam) = 0 (see `sim.nmdp.terms`), with the exact Jacobian K (first order)
   or K without the capacities' q-derivatives (zeroth order). The projection has
   *diverged* when the residual norm stops decreasing (or K is singular, or the Newton budget
   is spent).
2. Projected-gradient iteration (`pgm_substep`): objective E(lam) = 1/2 v1^T M(q) v1 (kinetic
   energy at the next step, J). The sensitivity G = dv1/dlam = dt K^-1 W(q1) gives the gradient
   G^T M v1 and the metric G^T M G; a dense QP (qpOASES, warm-started) over the feasible set
   (each contact's friction polytope, `_solve_qp`) gives the step d, a backtracking (Armijo)
   line search along d projects each trial and accepts a decrease in E. Stop when the predicted
   decrease -grad.d is below pgm_rtol times the energy scale.
3. Adaptive step (`nmdp_step`, the paper's Algorithm 2): if a projection diverges, halve the
   substep and retry; continue the primary step with the last good size; report the smallest.

The linearised MDP baseline (`mdp_step`) is the conventional forward scheme with the same
contact polytope, PD law and QP: M, h, W at the current q; one linear solve and one QP.

Everything inside a step is compiled: the model's functions are C called by address
(`robots.ccall.call_flat`), the QP is qpOASES called by address (`sim.nmdp.cabi.call_ptr3`).
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba import types as nbt

from robots import ccall
from robots.ccall import call_flat

from sim import command_check, invariants
from sim.command_check import fields_ok
from sim.invariants import _first_failure

from .cabi import call_ptr3
from . import cabi, linalg
from .linalg import lu_factor, lu_solve

# methods
PGM, ZOPGM, MDP = 0, 1, 2
METHODS = {"pgm": PGM, "zopgm": ZOPGM, "mdp": MDP}

# status codes
OK, DIVERGED, QP_FAILED, TOO_SMALL, NONFINITE = 0, 1, 2, 3, 4
STATUS_TEXT = {
    OK: "ok",
    DIVERGED: "manifold projection diverged (residual stopped decreasing or K singular)",
    QP_FAILED: "the QP returned a non-finite solution",
    TOO_SMALL: "step halving reached the smallest allowed substep",
    NONFINITE: "non-finite state",
}

# addr: [implicit, explicit, the QP's solve (sim.nmdp.qp), residual, integrate, mass, then the QP workspaces
# for 1..nc acting contacts]
QP_HANDLES = 6

# option vector indices
O_NEWTON_RTOL, O_MAX_NEWTON, O_PGM_RTOL, O_MAX_ITER, O_ARMIJO, O_MAX_LS, O_MIN_FRACTION, O_ADAPTIVE, O_QP_REG, \
    O_FACES = range(10)  # O_FACES: friction faces per contact (terms.n_faces)
N_OPTS = 10

# per-step statistics indices
S_ITERS, S_NEWTON, S_SUBSTEPS, S_HALVINGS, S_MIN_DT, S_LS_STOPS, S_QP_WARN, S_ENERGY, S_MAX_ITER_HITS, S_TRACE_N, \
    S_JACOBIANS = range(11)
N_STATS = 11
STAT_NAMES = ("iters", "newton", "substeps", "halvings", "min_dt", "ls_stops", "qp_warnings", "energy",
              "max_iter_hits", "trace_n", "jacobians")
CHORD_RATE = 0.1  # a chord step must shrink the residual norm by this factor, else K is re-evaluated


@njit(cache=True)
def _eval_at(fn, imp_in, out, v1, lam, nq, nv, nl):
    """Call the generated function at address fn (nmdp_implicit: R, K, Kzo, W, cap, theta;
    nmdp_residual: R, cap) at (v1, lam) into out; the rest of imp_in ([q (nq), v (nv), v1 (nv),
    lam (nl), dt, cmd, cp]) was filled by `_setup_implicit`."""
    for i in range(nv):
        imp_in[nq + nv + i] = v1[i]
    for j in range(nl):
        imp_in[nq + 2 * nv + j] = lam[j]
    call_flat(fn, imp_in.ctypes.data, out.ctypes.data)


@njit(cache=True)
def _setup_implicit(imp_in, q, v, dt, cmd, cp, nq, nv, nl):
    """Fill the parts of nmdp_implicit's input that are fixed during a substep."""
    for i in range(nq):
        imp_in[i] = q[i]
    for i in range(nv):
        imp_in[nq + i] = v[i]
    o = nq + 2 * nv + nl
    imp_in[o] = dt
    for i in range(cmd.shape[0]):
        imp_in[o + 1 + i] = cmd[i]
    o2 = o + 1 + cmd.shape[0]
    for i in range(cp.shape[0]):
        imp_in[o2 + i] = cp[i]


@njit(cache=True)
def _rnorm(out, nv):
    s = 0.0
    for i in range(nv):
        s += out[i] * out[i]
    return np.sqrt(s)


@njit(cache=True)
def _factor_k(imp_out, LU, piv, nv, zo):
    """LU := the factors of K (Kzo if zo) from imp_out; False when K is singular."""
    koff = nv + nv * nv if zo else nv
    for i in range(nv):
        for j in range(nv):
            LU[i, j] = imp_out[koff + i * nv + j]
    return lu_factor(LU, piv, nv)


@njit(cache=True)
def _newton(addr, imp_in, imp_out, res_out, LU, piv, rhs, v1, lam, nq, nv, nl, zo, tol, max_newton, lu_ready, chord,
            st):
    """`project`'s iteration (with chord steps if `chord`, else Newton's method: K at every
    iterate); returns (status, iterations, whether a chord step was taken)."""
    prev = np.inf
    newton = False  # was the last step a Newton step (K at its own start point)?
    chorded = False
    back = np.empty(nv)  # the iterate before the last step
    for it in range(max_newton + 1):
        _eval_at(addr[3], imp_in, res_out, v1, lam, nq, nv, nl)
        r = _rnorm(res_out, nv)
        if r <= tol:
            return OK, it, chorded
        chord_failed = it > 0 and not newton and not r <= CHORD_RATE * prev
        if chord_failed and not r < prev:  # worse or not finite: take the chord step back
            for i in range(nv):
                v1[i] = back[i]
            r = prev
        elif not np.isfinite(r) or (newton and r >= prev):
            return DIVERGED, it, chorded
        if it == max_newton:
            return DIVERGED, it, chorded
        newton = chord_failed or not lu_ready or not chord
        chorded = chorded or not newton
        src = res_out
        if newton:
            _eval_at(addr[0], imp_in, imp_out, v1, lam, nq, nv, nl)
            st[S_JACOBIANS] += 1
            if not _factor_k(imp_out, LU, piv, nv, zo):
                return DIVERGED, it, chorded
            lu_ready = True
            src = imp_out  # R at v1 (also when the chord step was taken back)
        prev = r
        for i in range(nv):
            back[i] = v1[i]
            rhs[i] = -src[i]
        lu_solve(LU, piv, rhs, nv)
        for i in range(nv):
            v1[i] += rhs[i]
    return DIVERGED, max_newton, chorded


@njit(cache=True)
def project(addr, imp_in, imp_out, res_out, LU, piv, rhs, v1, lam, nq, nv, nl, zo, tol, max_newton, lu_ready,
            st):
    """Newton's method on R(v1; lam) = 0 from the given v1 (updated in place), simplified.

    Each iteration evaluates the residual alone (nmdp_residual) and steps with the LU factors of
    K held in (LU, piv): a chord step. K is evaluated (nmdp_implicit, counted in st[S_JACOBIANS])
    and factored for a Newton step when no factors are given (lu_ready False) or the last chord
    step did not shrink the residual norm by CHORD_RATE; a chord step that made the residual
    larger (or non-finite) is taken back first. The factors given are K's at a nearby point: the
    PGM iteration's last accepted point, whose lam differs by one QP step. If the iteration fails
    after chord steps, it is repeated from the given v1 by Newton's method alone (K at every
    iterate), so a projection diverges exactly when Newton's does.

    Returns (status, iterations). On OK, res_out holds R and cap at the returned v1; imp_out and
    (LU, piv) hold K at the last point it was evaluated. DIVERGED when a Newton step does not
    decrease the residual norm (N s), K is singular or `max_newton` iterations do not reach `tol`.
    """
    start = v1.copy()
    status, it, chorded = _newton(addr, imp_in, imp_out, res_out, LU, piv, rhs, v1, lam, nq, nv, nl, zo, tol,
                                  max_newton, lu_ready, True, st)
    if status == OK or not chorded:
        return status, it
    for i in range(nv):
        v1[i] = start[i]
    status, it2, _ = _newton(addr, imp_in, imp_out, res_out, LU, piv, rhs, v1, lam, nq, nv, nl, zo, tol,
                             max_newton, False, False, st)
    return status, it + it2


@njit(cache=True)
def _pd_metric(S, rhs, q, v, dt, cmd, joints, umax):  # joints: index into v; into q + (nq - nv)
    """Add the stable PD's implicit terms to S (joint diagonal: dt kd + dt^2 kp) and its explicit
    part to rhs (dt (tau_ff + kp (q_des - q) + kd v_des)); a joint whose torque predicted at
    v1 = v saturates adds its limit to rhs instead (N s or N m s)."""
    nu = joints.shape[0]
    shift = q.shape[0] - v.shape[0]
    for a in range(nu):
        j = joints[a]
        kp, kd = cmd[3 * nu + a], cmd[4 * nu + a]
        pred = cmd[a] + kp * (cmd[nu + a] - q[j + shift] - dt * v[j]) + kd * (cmd[2 * nu + a] - v[j])
        if pred > umax[a]:
            rhs[j] += dt * umax[a]
        elif pred < -umax[a]:
            rhs[j] -= dt * umax[a]
        else:
            S[j, j] += dt * dt * kp + dt * kd
            rhs[j] += dt * (cmd[a] + kp * (cmd[nu + a] - q[j + shift]) + kd * cmd[2 * nu + a])


@njit(cache=True)
def _energy(M, x, nv):
    e = 0.0
    for i in range(nv):
        s = 0.0
        for j in range(nv):
            s += M[i, j] * x[j]
        e += x[i] * s
    return 0.5 * e


@njit(cache=True)
def _face_angle(theta, e, nf):
    """Direction (rad, in the ground plane) of the outward normal of friction face e of a 3D
    contact whose polygon is turned by theta (`_solve_qp`; sim.nmdp.terms)."""
    return theta + np.pi + 2.0 * np.pi * (e + 0.5) / nf


@njit(cache=True)
def _face_slope(D, nf):
    """A face's bound on the tangential force per unit of normal force, over mu: 1 planar (the
    exact cone), cos(pi / nf) in 3D (the polygon's inscribed radius)."""
    return 1.0 if D == 2 else np.cos(np.pi / nf)


@njit(cache=True)
def _solve_qp(addr, qp_in, qp_out, qp_warm, Hq, gq, lam_ref, nc, nf, theta, mu, reg):
    """QP over the contacts' forces: min 1/2 (l - ref)^T Hq (l - ref) + gq^T (l - ref), l feasible.

    Hq (nl x nl) and gq are scaled in place by the largest diagonal of Hq (the solution does not
    change); `reg` (relative) is added to the diagonal. Writes the solution, made exactly feasible
    (`_make_feasible`), into qp_out[:nl]; returns qpOASES's status, or -1 when the metric is zero
    (no active contact). The feasible set (sim.nmdp.terms), per contact i with D = nl / nc
    unknowns (normal, tangents) and nf faces: box 0 <= l_n <= 1, |l_t| <= mu_i; faces
    u_e . l_t - mu_i cos(pi / nf) l_n <= 0 with u_e the outward normal of polygon edge e: planar
    +-1 (and cos(pi / 2) read as 1: |l_t| <= mu l_n), 3D the angle theta_i + pi + 2 pi (e + 1/2) / nf.

    Only the contacts that can act enter the QP: a contact whose capacity is zero (a foot in the
    air) has zero columns in W, so its rows of Hq and gq are zero and its unknowns stay at ref
    (feasible), decoupled from the rest. The QP of k acting contacts is qpOASES workspace
    addr[QP_HANDLES + k - 1] (D k unknowns, nf k faces). qp_warm[k - 1] = [flag, duals] is that
    workspace's warm start: the duals of its last successful solve (sim.nmdp.qp), updated here;
    the plant zeroes it on reset.
    """
    nl = lam_ref.shape[0]
    D = nl // nc
    hs = 0.0
    for j in range(nl):
        if Hq[j, j] > hs:
            hs = Hq[j, j]
    if not hs > 1e-300:
        for j in range(nl):
            qp_out[j] = lam_ref[j]
        return -1
    inv = 1.0 / hs
    act = np.empty(nc, dtype=np.int64)  # the acting contacts, in order
    k = 0
    for r in range(nc):
        on = False
        for j in range(D * r, D * (r + 1)):
            if Hq[j, j] != 0.0:
                on = True
        if on:
            act[k] = r
            k += 1
    n = D * k
    m = nf * k
    col = np.empty(n, dtype=np.int64)  # the reduced QP's unknowns: their indices in lam
    for a in range(k):
        for d in range(D):
            col[D * a + d] = D * act[a] + d
    o = 0
    for i in range(n):
        for j in range(n):
            qp_in[o + i * n + j] = Hq[col[i], col[j]] * inv + (reg if i == j else 0.0)
    o = n * n
    for i in range(n):
        s = gq[col[i]] * inv
        for j in range(n):
            s -= (Hq[col[i], col[j]] * inv + (reg if i == j else 0.0)) * lam_ref[col[j]]
        qp_in[o + i] = s
    o += n
    for a in range(k):
        r = act[a]
        for d in range(D):
            qp_in[o + D * a + d] = 0.0 if d == 0 else -mu[r]
            qp_in[o + n + D * a + d] = 1.0 if d == 0 else mu[r]
    o += 2 * n
    for i in range(m * n):
        qp_in[o + i] = 0.0
    slope = _face_slope(D, nf)
    for a in range(k):
        r = act[a]
        for e in range(nf):
            row = o + (nf * a + e) * n + D * a
            qp_in[row] = -mu[r] * slope
            if D == 2:
                qp_in[row + 1] = 1.0 if e == 0 else -1.0
            else:
                ang = _face_angle(theta[r], e, nf)
                qp_in[row + 1] = np.cos(ang)
                qp_in[row + 2] = np.sin(ang)
    o += m * n
    for i in range(m):
        qp_in[o + i] = -1e20  # no lower bound (qpOASES's infinity)
        qp_in[o + m + i] = 0.0
    o += 2 * m
    ny = n + m
    for i in range(1 + ny):  # the warm start: flag, then the duals
        qp_in[o + i] = qp_warm[k - 1, i]
    # the solution lands in qp_out[nl:] (x, duals, working-set changes, status), then moves to its
    # unknowns' places; the idle contacts' unknowns are ref
    status = call_ptr3(addr[2], addr[QP_HANDLES + k - 1], qp_in.ctypes.data, qp_out[nl:].ctypes.data)
    qp_warm[k - 1, 0] = 1.0 if status == 0 else 0.0
    for i in range(ny):
        qp_warm[k - 1, 1 + i] = qp_out[nl + n + i]
    for j in range(nl):
        qp_out[j] = lam_ref[j]
    for i in range(n):
        qp_out[col[i]] = qp_out[nl + i]
    for a in range(k):  # active-set solutions satisfy the faces up to round-off: make them exact
        _make_feasible(qp_out, D * act[a], D, nf, theta[act[a]], mu[act[a]])
    return status


@njit(cache=True)
def _make_feasible(lam, o, D, nf, theta, mu):
    """Put contact lam[o:o + D] (normal, tangents) inside its polytope (`_solve_qp`): clip the
    normal to [0, 1], then scale the tangential part down until every face holds."""
    ln = min(max(lam[o], 0.0), 1.0)
    lam[o] = ln
    worst = 0.0  # the largest u_e . l_t over the faces
    if D == 2:
        worst = abs(lam[o + 1])
    else:
        for e in range(nf):
            ang = _face_angle(theta, e, nf)
            worst = max(worst, np.cos(ang) * lam[o + 1] + np.sin(ang) * lam[o + 2])
    limit = mu * _face_slope(D, nf) * ln
    if worst > limit:
        f = limit / worst
        for d in range(1, D):
            lam[o + d] *= f


@njit(cache=True)
def _qp_metric(LU, piv, rhs, W, woff, M0, x, Mx, G, MG, Hq, gq, nv, nl, dt):
    """The QP's data from the factored system matrix (LU, piv) and the force directions W
    (row-major nv x nl at W[woff:]): G = dt (LU)^-1 W, the gradient gq = G^T M0 x and the
    metric Hq = G^T M0 G (symmetric, M0 is); Mx := M0 x, MG := M0 G on the way."""
    for c in range(nl):
        for i in range(nv):
            rhs[i] = dt * W[woff + i * nl + c]
        lu_solve(LU, piv, rhs, nv)
        for i in range(nv):
            G[i, c] = rhs[i]
    for i in range(nv):
        s = 0.0
        for k in range(nv):
            s += M0[i, k] * x[k]
        Mx[i] = s
        for c in range(nl):
            s = 0.0
            for k in range(nv):
                s += M0[i, k] * G[k, c]
            MG[i, c] = s
    for a in range(nl):
        s = 0.0
        for k in range(nv):
            s += G[k, a] * Mx[k]
        gq[a] = s
        for b in range(a, nl):
            s = 0.0
            for k in range(nv):
                s += G[k, a] * MG[k, b]
            Hq[a, b] = s
            Hq[b, a] = s


@njit(cache=True)
def pgm_substep(addr, bufs, q, v, dt, cmd, cp, lam, v1, joints, umax, nv, nc, zo, opts, st, trace):
    """One backward-Euler NMDP substep of dt seconds by (zeroth-order if zo) PGM.

    lam (D nc: each contact's normal and tangential force over its capacity; warm start in,
    solution out) and v1 (nv, m/s or rad/s, out). Returns a status; on OK, imp_out holds the
    residual terms at the solution (cap: capacities at q1, N) and (LU, piv) factors of K from this
    substep (lu_ok[0] = 1), which the next substep's first projection starts from. K is evaluated
    once per PGM iteration, at its point (for G); the projections between take chord steps with
    those factors (`project`).
    trace[k] receives the objective (J) after k accepted iterations (count in st[S_TRACE_N]).
    """
    (imp_in, imp_out, exp_in, exp_out, M0, LU, piv, rhs, G, MG, Hq, gq, qp_in, qp_out, lam_t, v1_t, Mv, res_out,
     lu_ok, qp_warm) = bufs
    nl = lam.shape[0]
    nq = q.shape[0]
    call_flat(addr[5], q.ctypes.data, M0.ctypes.data)  # M(q)
    _pd_metric(M0, rhs, q, v, dt, cmd, joints, umax)  # M0 := S = M(q) + dt kd + dt^2 kp; rhs unused
    mscale = 0.0
    vnorm = 0.1
    for i in range(nv):
        mscale = max(mscale, M0[i, i])
        vnorm = max(vnorm, abs(v[i]))
    tol = opts[O_NEWTON_RTOL] * mscale * vnorm
    e_scale = 0.5 * mscale * vnorm * vnorm
    max_newton = int(opts[O_MAX_NEWTON])
    _setup_implicit(imp_in, q, v, dt, cmd, cp, nq, nv, nl)

    for i in range(nv):
        v1[i] = v[i]
    # the first projection takes chord steps with the factors of K that the last substep left in
    # (LU, piv) if there are any (lu_ok): K at a point one step back, under the same lam
    lu_ready = lu_ok[0] == 1.0
    lu_ok[0] = 0.0  # until this substep succeeds (a failed factorization leaves no usable factors)
    status, it = project(addr, imp_in, imp_out, res_out, LU, piv, rhs, v1, lam, nq, nv, nl, zo, tol, max_newton,
                         lu_ready, st)
    st[S_NEWTON] += it
    if status != OK:  # the warm start may be far off: lam = 0 (free motion) is the safe start
        for j in range(nl):
            lam[j] = 0.0
        for i in range(nv):
            v1[i] = v[i]
        status, it = project(addr, imp_in, imp_out, res_out, LU, piv, rhs, v1, lam, nq, nv, nl, zo, tol,
                             max_newton, False, st)
        st[S_NEWTON] += it
        if status != OK:
            return status
    energy = _energy(M0, v1, nv)
    ntr = 0
    if trace.shape[0] > 0:
        trace[0] = energy
        ntr = 1
    woff = nv + 2 * nv * nv
    capoff = woff + nv * nl  # imp_out: cap, then the slip angles theta
    max_iter = int(opts[O_MAX_ITER])
    max_ls = int(opts[O_MAX_LS])
    hit_limit = True
    for outer in range(max_iter):
        # sensitivity G = dv1/dlam = dt K^-1 W(q1), gradient G^T M v1 and metric G^T M G, at this point
        _eval_at(addr[0], imp_in, imp_out, v1, lam, nq, nv, nl)
        st[S_JACOBIANS] += 1
        if not _factor_k(imp_out, LU, piv, nv, zo):
            return DIVERGED
        _qp_metric(LU, piv, rhs, imp_out, woff, M0, v1, Mv, G, MG, Hq, gq, nv, nl, dt)
        qs = _solve_qp(addr, qp_in, qp_out, qp_warm, Hq, gq, lam, nc, int(opts[O_FACES]),
                       imp_out[capoff + nc:capoff + 2 * nc], cp[2 * nc:3 * nc], opts[O_QP_REG])
        if qs == -1:  # no contact can act: nothing to optimise
            hit_limit = False
            break
        st[S_ITERS] += 1
        decrease = 0.0  # predicted by the QP's model
        finite = True
        for a in range(nl):
            if not np.isfinite(qp_out[a]):
                finite = False
            decrease -= gq[a] * (qp_out[a] - lam[a])
        if not finite:
            return QP_FAILED
        if qs != 0:
            st[S_QP_WARN] += 1
        # stop on a small predicted decrease; but the first iteration steps unless the warm start is
        # stationary to rtol^2: otherwise a warm start inside the tolerance (a slow creep of a body
        # that should stick) would be returned unimproved, step after step
        if decrease <= opts[O_PGM_RTOL] * e_scale and (outer > 0 or decrease <= opts[O_PGM_RTOL] ** 2 * e_scale):
            hit_limit = False
            break
        step = 1.0
        accepted = False
        for ls in range(max_ls):
            for a in range(nl):
                lam_t[a] = lam[a] + step * (qp_out[a] - lam[a])
            for i in range(nv):
                v1_t[i] = v1[i]
            status, it = project(addr, imp_in, imp_out, res_out, LU, piv, rhs, v1_t, lam_t, nq, nv, nl, zo, tol,
                                 max_newton, True, st)
            st[S_NEWTON] += it
            if status != OK:  # the projection stopped converging: a smaller substep is needed
                return DIVERGED
            e_t = _energy(M0, v1_t, nv)
            if e_t <= energy - opts[O_ARMIJO] * step * decrease:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            st[S_LS_STOPS] += 1  # no sufficient decrease along d: stationary to the model's accuracy
            hit_limit = False
            _eval_at(addr[0], imp_in, imp_out, v1, lam, nq, nv, nl)  # cap at the solution
            st[S_JACOBIANS] += 1
            break
        for a in range(nl):
            lam[a] = lam_t[a]
        for i in range(nv):
            v1[i] = v1_t[i]
        energy = e_t
        if ntr < trace.shape[0]:
            trace[ntr] = energy
            ntr += 1
    if hit_limit:
        st[S_MAX_ITER_HITS] += 1
        _eval_at(addr[0], imp_in, imp_out, v1, lam, nq, nv, nl)  # cap at the solution
        st[S_JACOBIANS] += 1
    st[S_ENERGY] = energy
    st[S_TRACE_N] = ntr
    lu_ok[0] = 1.0  # (LU, piv): K's factors at a point of this substep
    return OK


@njit(cache=True)
def mdp_step(addr, bufs, q, v, dt, cmd, cp, lam, v1, joints, umax, nv, nc, opts, st):
    """Conventional linearised MDP step: M, h, W at q; stable PD linear in v1; one QP for lam.

    v1 = v_free + G lam with (M + dt kd + dt^2 kp) v_free = M v + dt (B tau_0 - h), G = dt (...)^-1 W(q);
    lam minimises 1/2 v1^T M v1 over the polytope. Joints whose predicted torque saturates get
    their limit as a constant torque. Returns a status; exp_out holds W and cap at q.
    """
    (imp_in, imp_out, exp_in, exp_out, M0, LU, piv, rhs, G, MG, Hq, gq, qp_in, qp_out, lam_t, v1_t, Mv, res_out,
     lu_ok, qp_warm) = bufs
    nl = lam.shape[0]
    nq = q.shape[0]
    for i in range(nq):
        exp_in[i] = q[i]
    for i in range(nv):
        exp_in[nq + i] = v[i]
    for i in range(cp.shape[0]):
        exp_in[nq + nv + i] = cp[i]
    call_flat(addr[1], exp_in.ctypes.data, exp_out.ctypes.data)
    hoff = nv * nv
    woff = hoff + nv
    for i in range(nv):
        s = 0.0
        for j in range(nv):
            M0[i, j] = exp_out[i * nv + j]
            LU[i, j] = M0[i, j]
            s += M0[i, j] * v[j]
        Mv[i] = s - dt * exp_out[hoff + i]  # Mv holds the right-hand side b
    _pd_metric(LU, Mv, q, v, dt, cmd, joints, umax)
    for i in range(nv):
        for j in range(nv):
            M0[i, j] = LU[i, j]  # the objective's metric S = M + dt kd + dt^2 kp
    if not lu_factor(LU, piv, nv):
        return DIVERGED
    lu_solve(LU, piv, Mv, nv)  # Mv := v_free
    _qp_metric(LU, piv, rhs, exp_out, woff, M0, Mv, v1_t, G, MG, Hq, gq, nv, nl, dt)  # v1_t := M v_free
    for a in range(nl):
        lam_t[a] = 0.0
    # the QP in lam itself: linear term at the reference lam = 0 is G^T M v_free
    capoff = nv * nv + nv + nv * nl
    qs = _solve_qp(addr, qp_in, qp_out, qp_warm, Hq, gq, lam_t, nc, int(opts[O_FACES]),
                   exp_out[capoff + nc:capoff + 2 * nc], cp[2 * nc:3 * nc], opts[O_QP_REG])
    if qs != -1:
        st[S_ITERS] += 1
        if qs != 0:
            st[S_QP_WARN] += 1
    for a in range(nl):
        if not np.isfinite(qp_out[a]):
            return QP_FAILED
        lam[a] = qp_out[a] if qs != -1 else 0.0
    for i in range(nv):
        s = Mv[i]
        for c in range(nl):
            s += G[i, c] * lam[c]
        v1[i] = s
    st[S_ENERGY] = _energy(M0, v1, nv)
    return OK


@njit(cache=True)
def _forces(cap, lam, nc, force):
    """Contact forces (nc x D: normal, tangential x (and y), N): capacities times lam."""
    D = lam.shape[0] // nc
    for i in range(nc):
        for d in range(D):
            force[i, d] = cap[i] * lam[D * i + d]


@njit(cache=True)
def _advance_q(addr, q, v1, h):
    """q := q (+) h v1: q + h v1 when nq == nv, else the generated nmdp_integrate (addr[4])."""
    nq, nv = q.shape[0], v1.shape[0]
    if nq == nv:
        for i in range(nq):
            q[i] += h * v1[i]
        return
    buf = np.empty(nq + nv + 1)
    out = np.empty(nq)
    for i in range(nq):
        buf[i] = q[i]
    for i in range(nv):
        buf[nq + i] = v1[i]
    buf[nq + nv] = h
    call_flat(addr[4], buf.ctypes.data, out.ctypes.data)
    for i in range(nq):
        q[i] = out[i]


@njit(cache=True)
def nmdp_step(addr, bufs, q, v, dt, cmd, cp, lam, joints, umax, method, opts, st, trace, force, depth_cap):
    """Advance (q, v) in place by one primary step of dt seconds; returns a status.

    method: PGM, ZOPGM (adaptive halving per the paper's Algorithm 2 when opts[O_ADAPTIVE]) or MDP.
    st receives this step's statistics (S_* indices), force the contact forces at the end
    (N) and depth_cap the capacities (N) at the end pose. q, v and lam change only on success.
    """
    (imp_in, imp_out, exp_in, exp_out, M0, LU, piv, rhs, G, MG, Hq, gq, qp_in, qp_out, lam_t, v1_t, Mv, res_out,
     lu_ok, qp_warm) = bufs
    nv = v.shape[0]
    nc = cp.shape[0] // 3
    nl = lam.shape[0]
    for k in range(st.shape[0]):
        st[k] = 0.0
    st[S_MIN_DT] = dt
    v1 = np.empty(nv)
    l_try = np.empty(nl)
    if method == MDP:
        for a in range(nl):
            l_try[a] = lam[a]
        status = mdp_step(addr, bufs, q, v, dt, cmd, cp, l_try, v1, joints, umax, nv, nc, opts, st)
        if status != OK:
            return status
        _advance_q(addr, q, v1, dt)
        for i in range(nv):
            v[i] = v1[i]
        for a in range(nl):
            lam[a] = l_try[a]
        st[S_SUBSTEPS] = 1
        capoff = nv * nv + nv + nv * nl
        for i in range(nc):
            depth_cap[i] = exp_out[capoff + i]
    else:
        zo = method == ZOPGM
        t = 0.0
        h = dt
        while dt - t > 1e-9 * dt:
            hc = min(h, dt - t)
            for a in range(nl):
                l_try[a] = lam[a]
            status = pgm_substep(addr, bufs, q, v, hc, cmd, cp, l_try, v1, joints, umax, nv, nc, zo, opts,
                                 st, trace)
            if status == OK:
                _advance_q(addr, q, v1, hc)
                for i in range(nv):
                    v[i] = v1[i]
                for a in range(nl):
                    lam[a] = l_try[a]
                t += hc
                st[S_SUBSTEPS] += 1
                if hc < st[S_MIN_DT]:
                    st[S_MIN_DT] = hc
            else:
                if opts[O_ADAPTIVE] == 0.0:
                    return status
                h = 0.5 * hc
                st[S_HALVINGS] += 1
                if h < opts[O_MIN_FRACTION] * dt:
                    return TOO_SMALL
        capoff = nv + 2 * nv * nv + nv * nl
        for i in range(nc):
            depth_cap[i] = imp_out[capoff + i]
    for i in range(q.shape[0]):
        if not np.isfinite(q[i]):
            return NONFINITE
    for i in range(nv):
        if not np.isfinite(v[i]):
            return NONFINITE
    _forces(depth_cap, lam, nc, force)
    return OK


@njit(cache=True)
def rollout(addr, bufs, q, v, dt, commands, cp, lam, joints, umax, method, opts, out_q, out_v, out_st):
    """Apply commands[k] (packed, 5 nu) during step k of dt seconds; record q, v and the step's
    statistics after each step. Returns (status, steps completed); stops at the first failure."""
    nc = cp.shape[0] // 3
    st = np.zeros(N_STATS)
    trace = np.empty(0)
    force = np.empty((nc, 3 if q.shape[0] != v.shape[0] else 2))
    cap = np.empty(nc)
    for k in range(commands.shape[0]):
        status = nmdp_step(addr, bufs, q, v, dt, commands[k], cp, lam, joints, umax, method, opts, st, trace,
                           force, cap)
        out_st[k, :] = st
        if status != OK:
            return status, k
        out_q[k, :] = q
        out_v[k, :] = v
    return OK, commands.shape[0]


COUNTED = (S_ITERS, S_NEWTON, S_JACOBIANS, S_SUBSTEPS, S_HALVINGS, S_LS_STOPS, S_QP_WARN, S_MAX_ITER_HITS)
T_STEPS = N_STATS  # a run's totals: the S_* slots of COUNTED and S_MIN_DT, then the primary steps
N_TOTALS = N_STATS + 1


@njit(cache=True)
def accumulate(totals, st):
    """Add one primary step's statistics st to the run's totals (N_TOTALS: the counters of
    COUNTED add up, totals[S_MIN_DT] is the smallest substep, totals[T_STEPS] the steps)."""
    for k in COUNTED:
        totals[k] += st[k]
    totals[T_STEPS] += 1.0
    if st[S_MIN_DT] < totals[S_MIN_DT]:
        totals[S_MIN_DT] = st[S_MIN_DT]


_FIELD = nbt.Array(nbt.float64, 1, "C", readonly=True)  # writable arrays match too


@njit(nbt.boolean(_FIELD, _FIELD, _FIELD, _FIELD, _FIELD, nbt.float64[::1]), cache=True)
def load_command(tau_ff, q_des, v_des, kp, kd, cmd):
    """Hold a command's fields in cmd (packed: tau_ff, q_des, v_des, kp, kd; 5 nu). False, with
    nothing loaded, unless each has nu entries, all finite, and the gains are >= 0 (`fields_ok`).
    The signature refuses anything but C-contiguous float64 vectors (TypeError), so a command of
    another type costs no compilation and takes `pack_command`'s checks instead."""
    nu = cmd.shape[0] // 5
    if not fields_ok(tau_ff, q_des, v_des, kp, kd, nu):
        return False
    for j in range(nu):
        cmd[j] = tau_ff[j]
        cmd[nu + j] = q_des[j]
        cmd[2 * nu + j] = v_des[j]
        cmd[3 * nu + j] = kp[j]
        cmd[4 * nu + j] = kd[j]
    return True


@njit(cache=True)
def impedance_torques(cmd, q, v, joints, umax, tau):
    """tau := the held command's impedance torques at (q, v) (N m): tau_ff + kp (q_des - q_j)
    + kd (v_des - v_j), clipped to +-umax (cmd packed, 5 nu; joints index v)."""
    nu = joints.shape[0]
    shift = q.shape[0] - v.shape[0]
    for a in range(nu):
        j = joints[a]
        t = cmd[a] + cmd[3 * nu + a] * (cmd[nu + a] - q[j + shift]) + cmd[4 * nu + a] * (cmd[2 * nu + a] - v[j])
        tau[a] = min(max(t, -umax[a]), umax[a])


@njit(cache=True)
def advance(addr, bufs, q, v, nstep, h, cmd, cp, lam, joints, umax, method, opts, st, totals, force, cap, trace,
            heights_address, heights, lowest, floating, q_good, v_good, out_q, out_v, out_contact, out_force, tau):
    """A plant's step() in one compiled call, under the command held in cmd (`load_command`):
    take nstep primary steps of h seconds (`nmdp_step`), add each one's statistics to totals
    (`accumulate`) and check the invariants after it (`_first_failure` with
    `Invariants.compiled_args`); stop at the first failure. Then the state's outputs: out_q,
    out_v, out_contact (capacity > 0), out_force (N) and tau, the impedance torques (N m).

    Returns (status, failure, steps done): the status of the last primary step (a failed one
    leaves (q, v) as before it) and the invariants' answer after the last step done.
    (q_good, v_good) hold the state before the last step done.
    """
    nu = joints.shape[0]
    nc = cap.shape[0]
    status, failure, done = OK, 0, 0
    for _ in range(nstep):
        q_good[:] = q
        v_good[:] = v
        status = nmdp_step(addr, bufs, q, v, h, cmd, cp, lam, joints, umax, method, opts, st, trace, force, cap)
        if status != OK:
            q[:] = q_good
            v[:] = v_good
            break
        done += 1
        accumulate(totals, st)
        failure = _first_failure(q, v, heights_address, heights, nc, lowest, floating)
        if failure != 0:
            break
    impedance_torques(cmd, q, v, joints, umax, tau)
    out_q[:] = q
    out_v[:] = v
    for i in range(nc):
        out_contact[i] = cap[i] > 0.0
    out_force[:, :] = force
    return status, failure, done


# numba tracks this file only; cabi, linalg, ccall, the command check and the invariants are inlined into
# the cached code above
ccall.drop_stale_cache(_eval_at, "kernel.", [cabi.__file__, linalg.__file__, ccall.__file__,
                                                   command_check.__file__, invariants.__file__])
