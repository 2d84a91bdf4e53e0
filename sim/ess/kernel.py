"""The Event-Selected-Systems (ESS) integrator kernel (seed 000), compiled with numba.

System: dx/dt = f(t, x, sigma), with m event functions h(x) whose signs select the vector
field. The integrator keeps its own sign vector sigma (+1 crossed / -1 not yet crossed) so
that a projection landing a hair short of a guard still counts as crossed.

Loop until tf:
1. If no *armed* guard k has h_k(x) >= -eps_k: one adaptive step (step control, max step
   h_max) of one of the methods: explicit Dormand-Prince 5(4) (METHOD_DOPRI5), or the linearly
   implicit Rosenbrock-W pair ROS23 (METHOD_ROS23, below: order 2 for *any* matrix W, L-stable
   when W is the exact Jacobian) or its two-stage form ROS21 (METHOD_ROS21: the same solution
   with a cheaper error estimate), for stiff vector fields whose stiff part the system supplies
   as W. If the step enters the eps-band of an armed guard, the entry point h_k = -eps_k is
   located on the dense output and the step is cut there.
2. Else projection step: G = f(x, sigma); for armed k in the band, dt_k = -h_k / (Dh_k . G);
   j = argmin dt_k; x += G dt_j; t += dt_j; guard j is crossed (sigma_j = +1). Repeated
   projections resolve near-simultaneous crossings one guard at a time.
3. Re-arming. Guard reset matrix R: crossing guard j makes every guard k with R[j, k]
   *pending* (sigma_k = -1); a pending guard becomes armed once h_k < -eps_k (hysteresis: it
   must first leave the band). A pending guard that reaches zero before that (a grazing
   contact) is located exactly on the dense output and crossed there; one that is at or past
   zero at both ends of a step (it never left its crossed side) is crossed at the step's end. With `paper_rule` (the paper's Listing 1), instead: while no
   guard is armed, integration runs until *any* guard enters its band from below; then every
   guard with h_k < 0 is armed. (At the end of a call with nothing armed, guards with
   h_k < -eps_k are armed, so calls can be chained.) The vector field still reads sigma,
   refreshed only at re-arming, so the paper rule suits systems whose guards are each crossed
   in one direction (the order test). Rhythmic systems with paired guards on one surface (the
   hoppers' touchdown/liftoff) need the reset matrix: that is why the paper proposes it.
Liveness: a guard in the band whose rate Dh_k . G <= live_min cannot be crossed by projection.
With on_violation = 0 the kernel stops with status LIVENESS and the guard index; with 1 it
*parks* the guard: ordinary event location at h_k = 0 replaces projection for it. A parked
guard at or past zero at both ends of a step is crossed at the step's end, as a pending one.
Slow crossings (Rosenbrock methods, on_violation = 1): a projection longer than the step the
error control proposes (dt_j > hstep) would be an explicit Euler step across a vector field the
method treats as stiff (a sticking foot's friction: measured, a 10 ms projection threw a fuzzed
quadruped's shin to 165 rad/s and its energy to 3x its scale); the guard is parked instead and
located (stats "slow_crossings").

User functions (numba-compiled, each with the signature shown):
    f(t, x, sigma, p, ctx, out)     -> writes dx/dt into out (n)
    h(x, p, ctx, out)               -> writes event values into out (m)
    Dh(x, p, ctx, out)              -> writes the m x n event Jacobian into out
    wprep(t, x, sigma, p, ctx, en)  -> ROS23/ROS21 only: capture what W needs at x (or keep the W it
                                       has: any W keeps the order). The kernel calls it at a
                                       step's start, after f there (en = 1), at an accepted ROS23
                                       step's end, after f there (en: the step's error norm if the
                                       interval's end or h_max bounded it, else 1), and at a
                                       rejected attempt's end (its norm, > 1).
    wsolve(g, refactor, p, ctx, rhs, out) -> ROS23/ROS21: out = (I - g W)^-1 rhs for W captured by
                                       the last wprep; refactor is True when g or the point changed.
`no_wprep`/`no_wsolve` (W = 0) make ROS23 an explicit second-order Runge-Kutta pair.
p is a float64 parameter vector and ctx any numba-typable tuple (e.g. compiled C function
pointers and scratch arrays), both passed through untouched. Systems whose f, h, Dh are the
same dispatchers and whose ctx types agree share one compiled kernel.
"""
from __future__ import annotations

import numpy as np
from numba import njit

OK, LIVENESS, TOO_MANY_EVENTS, STEP_UNDERFLOW, NON_FINITE, TOO_MANY_STEPS = 0, 1, 2, 3, 4, 5
STATUS_TEXT = {
    OK: "ok",
    LIVENESS: "liveness violated: the vector field does not push through a guard inside its band",
    TOO_MANY_EVENTS: "too many events in one call (Zeno-like accumulation)",
    STEP_UNDERFLOW: "step size underflow",
    NON_FINITE: "non-finite state",
    TOO_MANY_STEPS: "step budget exhausted (the step size collapsed: a singular or runaway state?)",
}
# stats slots
# located: band entries and zero crossings found on the dense output; exact_crossings: guards
# crossed by exact location instead of projection (liveness fallback or grazing contact);
# slow_crossings: guards parked because their projection was longer than the proposed step
S_STEPS, S_REJECTS, S_PROJECTIONS, S_FEVALS, S_LOCATED, S_EXACT, S_SLOW_PARKED = 0, 1, 2, 3, 4, 5, 6
N_STATS = 7
STAT_NAMES = ("steps", "rejects", "projections", "f_evals", "located", "exact_crossings", "slow_crossings")

# Dormand-Prince 5(4) coefficients (Hairer, Norsett & Wanner, Solving ODEs I, II.5)
C2, C3, C4, C5 = 1.0 / 5.0, 3.0 / 10.0, 4.0 / 5.0, 8.0 / 9.0
A21 = 1.0 / 5.0
A31, A32 = 3.0 / 40.0, 9.0 / 40.0
A41, A42, A43 = 44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0
A51, A52, A53, A54 = 19372.0 / 6561.0, -25360.0 / 2187.0, 64448.0 / 6561.0, -212.0 / 729.0
A61, A62, A63, A64, A65 = 9017.0 / 3168.0, -355.0 / 33.0, 46732.0 / 5247.0, 49.0 / 176.0, -5103.0 / 18656.0
B1, B3, B4, B5, B6 = 35.0 / 384.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0
E1, E3, E4, E5, E6, E7 = (71.0 / 57600.0, -71.0 / 16695.0, 71.0 / 1920.0, -17253.0 / 339200.0,
                          22.0 / 525.0, -1.0 / 40.0)
METHOD_DOPRI5, METHOD_ROS23, METHOD_ROS21 = 0, 1, 3
METHODS = {"dopri5": METHOD_DOPRI5, "ros23": METHOD_ROS23, "ros21": METHOD_ROS21}
# ROS23, the Rosenbrock-W pair of Shampine & Reichelt's ode23s (SIAM J. Sci. Comput. 18, 1997),
# with W in place of the Jacobian and no df/dt term (W-method: order 2 for any W):
#   (I - d h W) K1 = f(x);  F1 = f(x + h/2 K1);  (I - d h W) (K2 - K1) = F1 - K1;  x+ = x + h K2;
#   F2 = f(x+);  (I - d h W) K3 = F2 - e32 (K2 - F1) - 2 (K1 - f(x));  err = h/6 (K1 - 2 K2 + K3),
# d = 1 / (2 + sqrt 2), e32 = 6 + sqrt 2. L-stable with the exact Jacobian; the error estimate
# is of third order (exponent 1/3); F2 is the next step's f(x) and the dense output's end slope.
ROS_D = 1.0 / (2.0 + np.sqrt(2.0))
ROS_E32 = 6.0 + np.sqrt(2.0)
# ROS21: ROS23's solution x+ = x + h K2 without its third stage, the error estimated against the
# embedded linearly implicit Euler step x + h K1 (order 1 for any W): err = h (K2 - K1) (exponent
# 1/2). Two f and two solves per step, no f at x+: when every step ends a tick whose command
# changes f, the end-point f that ROS23 needs (its error estimate and FSAL) is an evaluation
# wasted. The same solution as ROS23 per step; its first-order estimate overstates the error, so
# its tolerance is looser, and its dense output is the quadratic through x, x+ with slope f(x).
# dense output (Hairer's dopri5 continuous extension of order 4)
D1, D3, D4, D5, D6, D7 = (-12715105075.0 / 11282082432.0, 87487479700.0 / 32700410799.0,
                          -10690763975.0 / 1880347072.0, 701980252875.0 / 199316789632.0,
                          -1453857185.0 / 822651844.0, 69997945.0 / 29380423.0)


@njit(cache=True)
def dense_eval(rc, theta, out):
    """Dense output at fraction theta of the last step: rc holds the 5 x n coefficients."""
    th1 = 1.0 - theta
    for i in range(out.shape[0]):
        out[i] = rc[0, i] + theta * (rc[1, i] + th1 * (rc[2, i] + theta * (rc[3, i] + th1 * rc[4, i])))


@njit(cache=True)
def _finite(x):
    """True if every entry of x is finite (without a temporary array)."""
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]):
            return False
    return True


@njit(cache=True)
def _cross(j, sigma, armed, pending, parked, reset):
    """Guard j is crossed: sigma_j = +1, it stops being a candidate, and every guard in row j of
    the reset matrix becomes pending (sigma = -1) until it leaves its band."""
    sigma[j] = 1.0
    armed[j] = pending[j] = parked[j] = False
    for k in range(sigma.shape[0]):
        if reset[j, k]:
            sigma[k] = -1.0
            pending[k] = True
            armed[k] = False
            parked[k] = False


@njit(cache=True)
def _record_line(t_eval, x_eval, k, t, x, G, t_until):
    """Record x + G (te - t) for the requested times te = t_eval[k], ... in (.., t_until] (a
    projection segment); returns the index of the next time to record."""
    while k < t_eval.shape[0] and t_eval[k] <= t_until:
        s = t_eval[k] - t
        for i in range(x.shape[0]):
            x_eval[k, i] = x[i] + G[i] * s
        k += 1
    return k


@njit(cache=True)
def _err_norm(x, xn, err, rtol, atol):
    s = 0.0
    n = x.shape[0]
    for i in range(n):
        sc = atol + rtol * max(abs(x[i]), abs(xn[i]))
        s += (err[i] / sc) ** 2
    return np.sqrt(s / n)


@njit(cache=True)
def no_wprep(t, x, sigma, p, ctx, en):
    """W = 0: nothing to capture."""


@njit(cache=True)
def no_wsolve(g, refactor, p, ctx, rhs, out):
    """W = 0: (I - g W)^-1 is the identity."""
    for i in range(out.shape[0]):
        out[i] = rhs[i]


@njit(cache=True, _nrt=False)
def _dense_coefficients(rc, x, xn, k1, k3, k4, k5, k6, k7, hs, ros, no_end):
    """The step's dense output (`dense_eval`) from x to xn over hs: ROS23 a cubic Hermite
    interpolation of (x, f(x)) and (xn, f(xn)) (rc[4] = 0), ROS21 the quadratic through x and xn
    with slope f(x) (rc[3] = rc[4] = 0), Dormand-Prince its own quartic."""
    for i in range(x.shape[0]):
        ydiff = xn[i] - x[i]
        bspl = hs * k1[i] - ydiff
        rc[0, i] = x[i]
        rc[1, i] = ydiff
        rc[2, i] = bspl
        rc[3, i] = 0.0 if no_end else ydiff - hs * k7[i] - bspl
        rc[4, i] = 0.0 if ros else hs * (D1 * k1[i] + D3 * k3[i] + D4 * k4[i] + D5 * k5[i] + D6 * k6[i]
                                         + D7 * k7[i])


@njit
def _dopri_attempt(f, ctx, t, x, hs, sigma, p, k1, k2, k3, k4, k5, k6, k7, xs, xn, err, rtol, atol, stats):
    """One Dormand-Prince 5(4) attempt of size hs from (t, x) with k1 = f(x): xn, k7 = f(xn),
    err; returns the error norm."""
    n = x.shape[0]
    for i in range(n):
        xs[i] = x[i] + hs * A21 * k1[i]
    f(t + C2 * hs, xs, sigma, p, ctx, k2)
    for i in range(n):
        xs[i] = x[i] + hs * (A31 * k1[i] + A32 * k2[i])
    f(t + C3 * hs, xs, sigma, p, ctx, k3)
    for i in range(n):
        xs[i] = x[i] + hs * (A41 * k1[i] + A42 * k2[i] + A43 * k3[i])
    f(t + C4 * hs, xs, sigma, p, ctx, k4)
    for i in range(n):
        xs[i] = x[i] + hs * (A51 * k1[i] + A52 * k2[i] + A53 * k3[i] + A54 * k4[i])
    f(t + C5 * hs, xs, sigma, p, ctx, k5)
    for i in range(n):
        xs[i] = x[i] + hs * (A61 * k1[i] + A62 * k2[i] + A63 * k3[i] + A64 * k4[i] + A65 * k5[i])
    f(t + hs, xs, sigma, p, ctx, k6)
    for i in range(n):
        xn[i] = x[i] + hs * (B1 * k1[i] + B3 * k3[i] + B4 * k4[i] + B5 * k5[i] + B6 * k6[i])
    f(t + hs, xn, sigma, p, ctx, k7)
    stats[S_FEVALS] += 6
    for i in range(n):
        err[i] = hs * (E1 * k1[i] + E3 * k3[i] + E4 * k4[i] + E5 * k5[i] + E6 * k6[i] + E7 * k7[i])
    return _err_norm(x, xn, err, rtol, atol)


@njit
def _ros_stages(f, wsolve, ctx, t, x, hs, sigma, p, k1, K1, F1, K2, xs):
    """The two stages ROS23 and ROS21 share, from (t, x) with k1 = f(x) (W captured at x):
    K1 = (I - d h W)^-1 k1, F1 = f(x + h/2 K1), K2 = (I - d h W)^-1 (F1 - K1) (the increment
    K2 - K1 of ode23s's notation); xs is scratch. Returns g = d h."""
    n = x.shape[0]
    g = ROS_D * hs
    wsolve(g, True, p, ctx, k1, K1)
    for i in range(n):
        xs[i] = x[i] + 0.5 * hs * K1[i]
    f(t + 0.5 * hs, xs, sigma, p, ctx, F1)
    for i in range(n):
        xs[i] = F1[i] - K1[i]
    wsolve(g, False, p, ctx, xs, K2)
    return g


@njit
def _ros23_attempt(f, wsolve, ctx, t, x, hs, sigma, p, k1, K1, F1, K2, K3, xs, xn, k7, err, rtol, atol, stats):
    """One ROS23 attempt of size hs from (t, x) with k1 = f(x) (W captured at x): xn, k7 = f(xn)
    and err; returns the error norm."""
    n = x.shape[0]
    g = _ros_stages(f, wsolve, ctx, t, x, hs, sigma, p, k1, K1, F1, K2, xs)
    for i in range(n):
        K2[i] += K1[i]
        xn[i] = x[i] + hs * K2[i]
    f(t + hs, xn, sigma, p, ctx, k7)
    stats[S_FEVALS] += 2
    for i in range(n):
        xs[i] = k7[i] - ROS_E32 * (K2[i] - F1[i]) - 2.0 * (K1[i] - k1[i])
    wsolve(g, False, p, ctx, xs, K3)
    for i in range(n):
        err[i] = hs / 6.0 * (K1[i] - 2.0 * K2[i] + K3[i])
    return _err_norm(x, xn, err, rtol, atol)


@njit
def _ros21_attempt(f, wsolve, ctx, t, x, hs, sigma, p, k1, K1, F1, K2, xs, xn, err, rtol, atol, stats):
    """One ROS21 attempt of size hs from (t, x) with k1 = f(x) (W captured at x): xn and err;
    returns the error norm."""
    n = x.shape[0]
    _ros_stages(f, wsolve, ctx, t, x, hs, sigma, p, k1, K1, F1, K2, xs)
    stats[S_FEVALS] += 1
    for i in range(n):
        xn[i] = x[i] + hs * (K1[i] + K2[i])
        err[i] = hs * K2[i]
    return _err_norm(x, xn, err, rtol, atol)


def work_size(n: int, m: int) -> int:
    """Length of the scratch array `ess_integrate` needs for n states and m guards."""
    return 16 * n + 3 * m + m * n


# _nrt=False: no reference counting. The kernel borrows every array from its caller (the scratch
# too) and allocates nothing, so numba's per-view increments and decrements (atomic, and not all
# pruned) are pure cost: they took ~30 % of a quadruped plant tick. An allocation here would be a
# compile error, not a leak; tests/test_ess.py checks the reference counts stay balanced.
# Not cached: it takes the vector field as a dispatcher argument, and numba's cache index then
# pickles every caller's dispatcher type; an index written by another process (e.g. the tests'
# vector fields) made the next compile fail with "underlying object has vanished".
@njit(_nrt=False)
def ess_integrate(f, h, Dh, wprep, wsolve, method, ctx, x, t, tf, p, sigma, armed, pending, parked, reset, eps,
                  paper_rule, rtol, atol, hstep, h_max, live_min, on_violation, max_events, max_steps,
                  t_eval, x_eval, stats, work):
    """Integrate from (t, x) to tf in place (see module docstring).

    x (n), sigma (m, +-1.0), armed/pending/parked (m, bool) and hstep (2: step size to try in s,
    previous error norm) are updated in place so that a following call continues seamlessly. At
    most max_events projections/located events and max_steps step attempts are made per call.
    reset is the m x m bool guard reset matrix, eps the band width per guard. States at the times
    t_eval[k] (ascending) are written into x_eval[k]. work: scratch, at least work_size(n, m)
    float64 (the caller's, so a call allocates nothing). method: one of METHODS' values (the
    Rosenbrock-W methods take W from wprep/wsolve; see the module docstring). At most 30
    arguments: past 30, Python passes them as one tuple, and numba then types the dispatchers in
    it as experimental first-class functions (and warns).
    Returns (t reached, status code, guard index or -1).
    """
    n = x.shape[0]
    m = eps.shape[0]
    k1 = work[0:n]
    k2 = work[n:2 * n]
    k3 = work[2 * n:3 * n]
    k4 = work[3 * n:4 * n]
    k5 = work[4 * n:5 * n]
    k6 = work[5 * n:6 * n]
    k7 = work[6 * n:7 * n]
    xs = work[7 * n:8 * n]
    xn = work[8 * n:9 * n]
    err = work[9 * n:10 * n]
    xw = work[10 * n:11 * n]
    rc = work[11 * n:16 * n].reshape((5, n))
    hv = work[16 * n:16 * n + m]
    hn = work[16 * n + m:16 * n + 2 * m]
    hw = work[16 * n + 2 * m:16 * n + 3 * m]
    E = work[16 * n + 3 * m:16 * n + 3 * m + m * n].reshape((m, n))
    k1_valid = False
    events = 0
    attempts = 0
    err_prev = hstep[1:2]  # previous accepted error norm, kept with the step size between calls
    n_eval = t_eval.shape[0]
    n_done = 0  # t_eval[:n_done] are recorded
    hv_valid = False  # hv holds h(x) (reused from the end of the previous step)
    ros = method != METHOD_DOPRI5  # a Rosenbrock-W method: wprep/wsolve supply W
    no_end = method == METHOD_ROS21  # no f at the step's end: k1 is evaluated afresh at each step
    expo = 0.5 if no_end else (1.0 / 3.0 if ros else 0.2)  # 1 / (order of the error estimate)
    while t < tf:
        if not _finite(x):
            return t, NON_FINITE, -1
        if not hv_valid:
            h(x, p, ctx, hv)
        hv_valid = False
        in_band = False
        for k in range(m):
            if armed[k] and hv[k] >= -eps[k]:
                in_band = True
                break
        if in_band:
            # ---------------- projection step ----------------
            f(t, x, sigma, p, ctx, k1)
            stats[S_FEVALS] += 1
            Dh(x, p, ctx, E)
            best = np.inf
            j = -1
            bad = -1
            for k in range(m):
                if armed[k] and hv[k] >= -eps[k]:
                    rate = 0.0
                    for i in range(n):
                        rate += E[k, i] * k1[i]
                    if rate > live_min:
                        dtk = max(-hv[k] / rate, 0.0)
                        if dtk < best:
                            best = dtk
                            j = k
                    else:
                        bad = k
            if j < 0:
                if on_violation == 0:
                    return t, LIVENESS, bad
                # park: locate its zero crossing conventionally instead
                armed[bad] = False
                parked[bad] = True
                k1_valid = False
                continue
            if ros and on_violation != 0 and best > hstep[0]:
                # a slow crossing: the projection would be an explicit step longer than the
                # Rosenbrock step the error control chose, across a vector field that may be stiff
                # (a sticking foot's friction); locate this crossing conventionally instead
                armed[j] = False
                parked[j] = True
                stats[S_SLOW_PARKED] += 1
                k1_valid = False
                continue
            dt = best
            if t + dt > tf:  # cross after this call: move part of the way, stay armed
                dt = tf - t
                n_done = _record_line(t_eval, x_eval, n_done, t, x, k1, t + dt)
                for i in range(n):
                    x[i] += k1[i] * dt
                t = tf
                break
            n_done = _record_line(t_eval, x_eval, n_done, t, x, k1, t + dt)
            for i in range(n):
                x[i] += k1[i] * dt
            t += dt
            _cross(j, sigma, armed, pending, parked, reset)
            stats[S_PROJECTIONS] += 1
            events += 1
            k1_valid = False
            if events > max_events:
                return t, TOO_MANY_EVENTS, j
            continue

        # ---------------- Dormand-Prince or ROS23 step ----------------
        if tf - t <= 1e-13 * max(1.0, abs(tf)):  # a rounding sliver before tf: the interval is done
            t = tf
            break
        if not k1_valid:
            f(t, x, sigma, p, ctx, k1)
            stats[S_FEVALS] += 1
            if ros:
                wprep(t, x, sigma, p, ctx, 1.0)
            k1_valid = True
        hs = min(hstep[0], h_max, tf - t)
        if tf - t - hs < 1e-12 * max(1.0, abs(tf)):
            hs = tf - t  # finish the interval: never leave a sliver that looks like step underflow
        rejected = False
        while True:
            if hs < 1e-14 * max(1.0, abs(t)):
                return t, STEP_UNDERFLOW, -1
            attempts += 1
            if attempts > max_steps:
                return t, TOO_MANY_STEPS, -1
            if method == METHOD_ROS21:
                en = _ros21_attempt(f, wsolve, ctx, t, x, hs, sigma, p, k1, k2, k3, k4, xs, xn, err, rtol, atol,
                                    stats)
            elif ros:
                en = _ros23_attempt(f, wsolve, ctx, t, x, hs, sigma, p, k1, k2, k3, k4, k5, xs, xn, k7, err, rtol,
                                    atol, stats)
            else:
                en = _dopri_attempt(f, ctx, t, x, hs, sigma, p, k1, k2, k3, k4, k5, k6, k7, xs, xn, err, rtol, atol,
                                    stats)
            if en <= 1.0 and _finite(xn):
                break
            stats[S_REJECTS] += 1
            rejected = True
            if not np.isfinite(en):
                hs *= 0.1
            else:
                if ros and _finite(xn):
                    # W where the failed attempt ended (any W keeps the order): it carries the
                    # stiffness reached within the step (a foot that stuck), where W at x had not
                    wprep(t + hs, xn, sigma, p, ctx, en)
                hs *= max(0.2, 0.9 * en ** -expo)
        stats[S_STEPS] += 1
        en = max(en, 1e-10)
        if ros:
            if not no_end:  # k7 = f(xn) was the attempt's last evaluation: W at xn for the next step
                # a step the error control did not size (the interval's end or h_max bounded it)
                # passes its error norm; one it sized passes 1
                bounded = not rejected and (hs >= h_max or tf - (t + hs) < 1e-13 * max(1.0, abs(tf)))
                wprep(t + hs, xn, sigma, p, ctx, en if bounded else 1.0)
            fac = 0.9 * en ** -expo
        else:
            # Hairer's PI controller (beta = 0.04) damps the step-size oscillation at the
            # stability boundary of stiff contacts
            fac = 0.9 * en ** (-0.2 + 0.75 * 0.04) * err_prev[0] ** 0.04
        # growth capped at 5x, none after a reject
        hstep[0] = hs * min(1.0 if rejected else 5.0, max(0.2, fac))
        err_prev[0] = max(en, 1e-4)
        # events inside the step: band entry of armed guards, zero crossing of parked guards
        h(xn, p, ctx, hn)
        theta_hit = 2.0
        watch_all = False  # paper rule: with nothing armed, any guard's band entry ends the step
        if paper_rule:
            watch_all = True
            for k in range(m):
                if armed[k]:
                    watch_all = False
                    break
        dense = False  # the dense output's coefficients, computed only to locate a crossing or record a t_eval
        for k in range(m):
            if (armed[k] or watch_all) and hv[k] < -eps[k] and hn[k] >= -eps[k]:
                level = -eps[k]
            elif (parked[k] or pending[k]) and hv[k] < 0.0 and hn[k] >= 0.0:
                level = 0.0  # crossed before it could be armed (grazing) or while parked
            else:
                continue
            if not dense:
                _dense_coefficients(rc, x, xn, k1, k3, k4, k5, k6, k7, hs, ros, no_end)
                dense = True
            # Illinois false position on g(theta) = h_k(dense(theta)) - level
            a, b = 0.0, 1.0
            ga, gb = hv[k] - level, hn[k] - level
            side = 0
            for _ in range(60):
                c = (a * gb - b * ga) / (gb - ga) if gb != ga else 0.5 * (a + b)
                dense_eval(rc, c, xw)
                h(xw, p, ctx, hw)
                gc = hw[k] - level
                if gc >= 0.0:
                    b, gb = c, gc
                    if side == -1:
                        ga *= 0.5
                    side = -1
                else:
                    a, ga = c, gc
                    if side == 1:
                        gb *= 0.5
                    side = 1
                if b - a < 1e-13 or gc == 0.0:
                    break
            if b < theta_hit:
                theta_hit = b
            stats[S_LOCATED] += 1
        cut = theta_hit <= 1.0 and theta_hit < 1.0 - 1e-15
        t_end = t + hs * theta_hit if cut else t + hs
        if n_done < n_eval and t_eval[n_done] <= t_end and not dense:
            _dense_coefficients(rc, x, xn, k1, k3, k4, k5, k6, k7, hs, ros, no_end)
        while n_done < n_eval and t_eval[n_done] <= t_end:
            dense_eval(rc, (t_eval[n_done] - t) / hs, xw)
            for i in range(n):
                x_eval[n_done, i] = xw[i]
            n_done += 1
        if theta_hit <= 1.0:
            if cut:
                dense_eval(rc, theta_hit, x)
                t = t_end
                k1_valid = False
            else:
                for i in range(n):
                    x[i] = xn[i]
                    k1[i] = k7[i]
                k1_valid = not no_end
                t = tf if tf - (t + hs) < 1e-13 * max(1.0, abs(tf)) else t + hs
            h(x, p, ctx, hn)
            for k in range(m):  # a parked or pending guard that reached zero is crossed
                if (parked[k] or pending[k]) and hv[k] < 0.0 and hn[k] >= -1e-12:
                    _cross(k, sigma, armed, pending, parked, reset)
                    stats[S_EXACT] += 1
                    events += 1
                    k1_valid = False
        else:
            for i in range(n):
                x[i] = xn[i]
                k1[i] = k7[i]
            k1_valid = not no_end
            t = tf if tf - (t + hs) < 1e-13 * max(1.0, abs(tf)) else t + hs
        # a pending guard that did not go below zero during the step (re-armed a hair past zero by
        # the crossing that made it pending, and moving on) is in its crossed region: cross it, so
        # the modes stay consistent with the guards' signs (else it could never be crossed again);
        # so is a parked one that started the step at or past zero
        for k in range(m):
            if (pending[k] or parked[k]) and hv[k] >= 0.0 and hn[k] > 0.0:
                _cross(k, sigma, armed, pending, parked, reset)
                stats[S_EXACT] += 1
                events += 1
                k1_valid = False
        # re-arming
        for k in range(m):
            if pending[k] and hn[k] < -eps[k]:
                pending[k] = False
                armed[k] = True
            elif parked[k] and hn[k] < -eps[k]:
                parked[k] = False
                armed[k] = True
        for k in range(m):
            hv[k] = hn[k]
        hv_valid = True
        if watch_all and theta_hit <= 1.0:  # the integration step ended at a band: re-arm
            for k in range(m):
                if hn[k] < 0.0:
                    armed[k] = True
                    sigma[k] = -1.0
                    k1_valid = False
        if events > max_events:
            return t, TOO_MANY_EVENTS, -1
    if paper_rule:
        any_armed = False
        for k in range(m):
            if armed[k]:
                any_armed = True
        if not any_armed:
            h(x, p, ctx, hn)
            for k in range(m):
                if hn[k] < -eps[k]:
                    armed[k] = True
                    sigma[k] = -1.0
    return t, OK, -1
