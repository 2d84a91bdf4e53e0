"""The contact-implicit OCP solved to convergence with CasADi + IPOPT (offline and as oracle).

It solves exactly the problem acados solves (the same problem's expressions, mpc.problem; the
same least-squares cost with acados's 1/2 factor, the same L1 + L2 penalised slacks on the
smoothed complementarity equalities), so the two can be compared number for number. It also solves variants that only
an offline solver needs: a free initial state and extra constraints (periodic gaits).

    sol = solve_ipopt(ocp, cost, x0=x0)                  # the MPC problem at one state
    sol.x (N+1, nx), sol.u (N, nu), sol.cost, sol.status
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Callable

import casadi as ca
import numpy as np

from .problem import cost_features, soft_constraints


@dataclass(frozen=True)
class TrackingCost:
    """Least-squares tracking cost over the horizon, the same for both solvers.

    stage k:  stage_scale [0.5 (y_k - yref_k)^T diag(w) (y_k - yref_k) + slack penalty],
              y_k = (x_k, u_k); slack penalty per softened complementarity residual r:
              z_l1 |r| + 0.5 z_l2 r^2 (as in acados: r = s_upper - s_lower, s >= 0)
    terminal: 0.5 (x_N - xref_N)^T diag(w_e) (x_N - xref_N)
    stage_scale: acados (0.2) multiplies every stage cost, slacks included, by the stage length
    dt; pass dt here (or one per stage, (N,), for stages of differing length) to solve exactly
    acados's problem.
    yref: (N, nx + nu); xref_e: (nx,).
    """

    w: np.ndarray
    w_e: np.ndarray
    yref: np.ndarray
    xref_e: np.ndarray
    z_l1: float = 100.0
    z_l2: float = 1e4
    stage_scale: float | np.ndarray = 1.0

    def check(self, ocp) -> "TrackingCost":
        """Raise ValueError if a size does not match `ocp` (a problem, mpc.problem); return self."""
        y_x, y_u = cost_features(ocp)
        ny, nx, n = y_x.numel() + y_u.numel(), y_x.numel(), ocp.options.n_stages
        for name, arr, shape in (("w", self.w, (ny,)), ("w_e", self.w_e, (nx,)), ("yref", self.yref, (n, ny)),
                                 ("xref_e", self.xref_e, (nx,))):
            if np.shape(arr) != shape:
                raise ValueError(f"TrackingCost.{name} has shape {np.shape(arr)}, expected {shape}")
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"TrackingCost.{name} contains non-finite values")
        if np.any(np.asarray(self.w) < 0) or np.any(np.asarray(self.w_e) < 0):
            raise ValueError("TrackingCost weights w and w_e must be >= 0")
        return self


@dataclass
class IpoptSolution:
    """x (N+1, nx), u (N, nu), slacks (N, 2, n_comp), cost, IPOPT status string, iterations, cpu s."""

    x: np.ndarray
    u: np.ndarray
    slacks: np.ndarray
    cost: float
    status: str
    success: bool
    iterations: int
    cpu_s: float
    log: list = field(default_factory=list)


def _ls(r: ca.SX, w: np.ndarray) -> ca.SX:
    return 0.5 * ca.sum1(ca.DM(w) * r * r)


def solve_ipopt(ocp, cost: TrackingCost, *, x0: np.ndarray | None = None,
                x_init: np.ndarray | None = None, u_init: np.ndarray | None = None,
                extra_constraints: Callable[[list, list], tuple[list, list, list]] | None = None,
                tol: float = 1e-10, max_iter: int = 3000, verbose: bool = False) -> IpoptSolution:
    """Solve the OCP to convergence (multiple shooting, exact Hessian). ocp: a problem
    (mpc.problem: a `ContactOcp` or a `CentroidalOcp`); one with stages of differing length
    (`stage_dts`, mpc.centroidal.ocp) is stepped with each stage's own.

    x0: fixed initial state (None: free, then `extra_constraints` should pin it down).
    x_init, u_init: initial guess, (N+1, nx) and (N, nu); default: x0 (or zeros) repeated,
    controls at the bounds' midpoint for forces clipped to [0, 1].
    extra_constraints(X, U) -> (g, lbg, ubg): more constraints on the stage symbols.
    """
    cost.check(ocp)
    h_expr, h_lb, h_ub = soft_constraints(ocp)
    n, nx, nu, nco = ocp.options.n_stages, ocp.nx, ocp.nu, h_expr.numel()
    y_x, y_u = cost_features(ocp)
    features = ca.Function("features", [ocp.x, ocp.u], [y_x, y_u])
    dts = getattr(ocp, "stage_dts", None)
    if dts is not None:
        def step(X, U, k):
            return ocp.step_dt(X, U, dts[k])

        def soft_k(X, U, k):
            return ocp.soft_dt(X, U, dts[k])
    else:
        soft = ca.Function("soft", [ocp.x, ocp.u], [h_expr])

        def step(X, U, k):
            return ocp.step(X, U)

        def soft_k(X, U, k):
            return soft(X, U)
    scale = np.broadcast_to(np.asarray(cost.stage_scale, dtype=float), (n,))
    X = [ca.SX.sym(f"x{k}", nx) for k in range(n + 1)]
    U = [ca.SX.sym(f"u{k}", nu) for k in range(n)]
    SL = [ca.SX.sym(f"sl{k}", nco) for k in range(n)]
    SU = [ca.SX.sym(f"su{k}", nco) for k in range(n)]
    J = 0
    g, lbg, ubg = [], [], []
    for k in range(n):
        y = ca.vertcat(*features(X[k], U[k]))
        J += scale[k] * (_ls(y - cost.yref[k], cost.w) + cost.z_l1 * ca.sum1(SL[k] + SU[k])
                         + 0.5 * cost.z_l2 * ca.sum1(SL[k] ** 2 + SU[k] ** 2))
        g += [step(X[k], U[k], k) - X[k + 1]]
        lbg += [np.zeros(nx)]
        ubg += [np.zeros(nx)]
        r = soft_k(X[k], U[k], k)
        g += [r + SL[k], r - SU[k]]  # lh - sl <= r <= uh + su (lh = uh = 0 for complementarity)
        lbg += [h_lb, np.full(nco, -np.inf)]
        ubg += [np.full(nco, np.inf), h_ub]
    J += _ls(features(X[n], U[n - 1])[0] - cost.xref_e, cost.w_e)
    if extra_constraints is not None:
        ge, lbe, ube = extra_constraints(X, U)
        g += list(ge)
        lbg += [np.atleast_1d(np.asarray(a, float)) for a in lbe]
        ubg += [np.atleast_1d(np.asarray(a, float)) for a in ube]
    w = ca.vertcat(*X, *U, *SL, *SU)
    lbx = [np.full(nx, -np.inf)] * (n + 1) + [ocp.u_lb] * n + [np.zeros(nco)] * (2 * n)
    ubx = [np.full(nx, np.inf)] * (n + 1) + [ocp.u_ub] * n + [np.full(nco, np.inf)] * (2 * n)
    lbx, ubx = np.concatenate(lbx), np.concatenate(ubx)
    if x0 is not None:
        x0 = np.asarray(x0, float)
        lbx[:nx] = ubx[:nx] = x0
    if x_init is None:
        base = x0 if x0 is not None else np.zeros(nx)
        x_init = np.tile(base, (n + 1, 1))
    if u_init is None:
        u_init = np.tile(np.clip(0.5 * (ocp.u_lb + ocp.u_ub), ocp.u_lb, np.minimum(ocp.u_ub, 1.0)), (n, 1))
        u_init[:, : ocp.n_tau] = 0.0
    w0 = np.concatenate([np.ravel(x_init), np.ravel(u_init), np.zeros(2 * n * nco)])
    nlp = {"x": w, "f": J, "g": ca.vertcat(*g)}
    opts = {"ipopt.tol": tol, "ipopt.max_iter": max_iter, "ipopt.print_level": 5 if verbose else 0,
            "print_time": False, "ipopt.sb": "yes", "ipopt.mu_strategy": "adaptive",
            "ipopt.bound_relax_factor": 0.0}  # bounds held exactly (IPOPT relaxes them by 1e-8 by default)
    solver = ca.nlpsol("contact_ocp", "ipopt", nlp, opts)
    t0 = time.process_time()
    res = solver(x0=w0, lbx=lbx, ubx=ubx, lbg=np.concatenate(lbg), ubg=np.concatenate(ubg))
    cpu = time.process_time() - t0
    stats = solver.stats()
    wopt = np.asarray(res["x"]).ravel()
    xs = wopt[: (n + 1) * nx].reshape(n + 1, nx)
    off = (n + 1) * nx
    us = wopt[off: off + n * nu].reshape(n, nu)
    off += n * nu
    sl = wopt[off: off + n * nco].reshape(n, nco)
    su = wopt[off + n * nco:].reshape(n, nco)
    if verbose:
        print(f"[ipopt] {stats['return_status']} after {stats['iter_count']} iterations, {cpu:.2f} s", file=sys.stderr)
    return IpoptSolution(xs, us, np.stack([sl, su], axis=1), float(res["f"]), stats["return_status"],
                         bool(stats["success"]), int(stats["iter_count"]), cpu)
