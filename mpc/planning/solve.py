"""Discretize a `TimeFreezingOcp` with FESD (nosnoc) and solve it by a Scholtes homotopy (IPOPT).

What comes from `nosnoc` 0.2: the Step representation of the PSS as a dynamic complementarity
system, the FESD Radau IIA discretization with free finite-element lengths, cross
complementarities and step equilibration, the per-interval speed-of-time variables
(`SpeedOfTimeVariableMode.LOCAL`) and the NLP. What is done here: the time-freezing system
itself (`time_freezing.py`), the clock constraints t_k = k T / N imposed as *equalities*
(nosnoc's stage clock constraint is a band of +-`time_freezing_tolerance`, 1e-3 s by default; it
is set to 0), the homotopy loop with progress on stderr and a strict success test, and the
recovery of the physical-time trajectory.
"""
from __future__ import annotations

import contextlib
import copy
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable

import casadi as ca
import numpy as np

from .ocp import PlannerOptions, TimeFreezingOcp

with warnings.catch_warnings():  # nosnoc's __init__ sets a global "always" warnings filter
    import nosnoc

Progress = Callable[[str], None]
_IPOPT_OK = ("Solve_Succeeded", "Solved_To_Acceptable_Level")


@dataclass
class Plan:
    """A solved time-freezing OCP, in numerical and physical time.

    Per point of the discretization (x0, then every Radau stage point of every finite element):
        tau: numerical time, s.  t: physical (clock) time, s (constant while frozen).
        q, v: positions and velocities.  ell: accumulated stage cost.  interval: control interval.
        mode: 0 free/persistent contact (clock running), 1 frozen (auxiliary dynamics active),
            from the Filippov multipliers of the point.
    Per control interval k: u[k] (N x nu), s[k] speed of time, t_grid[k] = k T / N (N + 1).
    Per control node k: q_grid, v_grid (N + 1 rows): states at t_grid.
    Solver figures: status (IPOPT return status of the last NLP), converged, complementarity
    (max cross-complementarity product of the last NLP), homotopy log, cpu_s, build_s.
    """

    name: str
    tau: np.ndarray
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    ell: np.ndarray
    interval: np.ndarray
    mode: np.ndarray
    u: np.ndarray
    s: np.ndarray
    t_grid: np.ndarray
    q_grid: np.ndarray
    v_grid: np.ndarray
    h_fe: np.ndarray
    status: str
    converged: bool
    complementarity: float
    cost: float
    cpu_s: float
    build_s: float
    homotopy: list[dict] = field(default_factory=list)
    clock_residual: float = float("nan")

    @property
    def physical_time_end(self) -> float:
        """Clock value at the end of the numerical horizon, s."""
        return float(self.t[-1])

    def save_npz(self, path) -> None:
        """Write the plan (physical time grid, q, v, u, plus the dense points) to an NPZ file."""
        np.savez(
            path, name=self.name, t_grid=self.t_grid, q_grid=self.q_grid, v_grid=self.v_grid, u=self.u,
            s=self.s, t=self.t, tau=self.tau, q=self.q, v=self.v, mode=self.mode, interval=self.interval,
            complementarity=self.complementarity, converged=self.converged, cost=self.cost,
        )


def solve_plan(ocp: TimeFreezingOcp, options: PlannerOptions = PlannerOptions(), *,
               progress: Progress | None = None) -> Plan:
    """Solve a time-freezing OCP from a trivial guess (x0 everywhere, u = u_guess).

    Returns a `Plan`; `plan.converged` says whether the last NLP succeeded and the
    complementarity residual reached `options.comp_tol`. Progress lines go to `progress`
    (e.g. a stderr printer); nothing is printed to stdout.
    """
    say = progress or (lambda msg: None)
    t_build = time.perf_counter()
    sys_ = ocp.system
    model, nocp, opts = _nosnoc_description(ocp, options)
    heartbeat = _Heartbeat(say, options.heartbeat_s) if options.heartbeat_s > 0 else None
    with _stdout_to_stderr():
        solver = _HomotopySolver(opts, model, nocp, heartbeat)
    prob = solver.problem
    build_s = time.perf_counter() - t_build
    say(f"[plan] {ocp.name}: NLP with {prob.w.numel()} variables, {prob.g.numel()} constraints "
        f"(N={ocp.n_intervals}, {options.n_fe} finite elements x {options.n_s} Radau stages), built in {build_s:.1f} s")

    solver.initialize()
    w = prob.w0.copy()
    lbw, ubw = prob.lbw, prob.ubw
    sigma = options.sigma_0
    log: list[dict] = []
    cpu = 0.0
    status = "not_started"
    comp = float("inf")
    for k in range(options.max_homotopy):
        tau_val = min(sigma ** 1.5, sigma)
        solver.setup_p_val(sigma, tau_val)
        if heartbeat is not None:
            heartbeat.start(f"NLP {k + 1} (sigma={sigma:.1e})")
        t0 = time.perf_counter()
        with _stdout_to_stderr():
            sol = solver.solver(x0=w, lbg=prob.lbg, ubg=prob.ubg, lbx=lbw, ubx=ubw, p=solver.p_val)
        dt = time.perf_counter() - t0
        cpu += dt
        stats = solver.solver.stats()
        status = stats["return_status"]
        w = sol["x"].full().ravel()
        comp = float(prob.comp_res(w, solver.p_val))
        entry = {"sigma": sigma, "status": status, "iters": int(stats["iter_count"]), "cpu_s": dt,
                 "complementarity": comp, "objective": float(sol["f"])}
        log.append(entry)
        say(f"[plan] NLP {k + 1}/{options.max_homotopy}: sigma={sigma:.1e} comp={comp:.2e} "
            f"obj={entry['objective']:.4g} iters={entry['iters']} {dt:.1f} s {status}")
        if comp < options.comp_tol and status in _IPOPT_OK:
            break
        if sigma < 1e-3 * options.comp_tol:
            break
        sigma = _next_sigma(sigma, options)

    plan = _extract(ocp, options, prob, w, solver.p_val)
    plan.status = status
    plan.complementarity = comp
    plan.converged = status in _IPOPT_OK and comp <= options.comp_tol
    plan.cpu_s = cpu
    plan.build_s = build_s
    plan.homotopy = log
    return plan


def _next_sigma(sigma: float, options: PlannerOptions) -> float:
    if options.superlinear:
        return min(options.homotopy_slope * sigma, sigma ** 1.5)
    return options.homotopy_slope * sigma


def _nosnoc_description(ocp: TimeFreezingOcp, options: PlannerOptions):
    """The nosnoc model, OCP and options of a time-freezing OCP."""
    sys_ = ocp.system
    cls = sys_.cls
    x0 = np.concatenate([ocp.q0, ocp.v0, [0.0, 0.0]])
    model = nosnoc.NosnocModel(x=sys_.x, F=[sys_.F], c=[sys_.c], S=[sys_.S], x0=x0, u=sys_.u,
                               t_var=sys_.t, name=f"tf_{ocp.name}")
    lbx = np.concatenate([ocp.q_lb, ocp.v_lb, [-np.inf, -np.inf]])
    ubx = np.concatenate([ocp.q_ub, ocp.v_ub, [np.inf, np.inf]])
    # path constraints are written in (q, v, u); the time-freezing state adds t and ell only.
    nocp = nosnoc.NosnocOcp(
        lbu=np.array(ocp.u_lb), ubu=np.array(ocp.u_ub), u_guess=np.array(ocp.u_guess),
        lbx=lbx, ubx=ubx, f_terminal=sys_.ell,
        g_path=ocp.path, lbg=np.array(ocp.path_lb), ubg=np.array(ocp.path_ub),
        g_terminal=ocp.terminal,
    )
    opts = nosnoc.NosnocOpts()
    # NosnocOpts keeps its IPOPT dictionary at class level (shared by every instance, and
    # preprocess() writes the tolerance into it): give this problem its own copy.
    opts.opts_casadi_nlp = copy.deepcopy(nosnoc.NosnocOpts.opts_casadi_nlp)
    ip = opts.opts_casadi_nlp["ipopt"]
    ip["max_iter"] = int(options.ipopt_max_iter)
    ip["linear_solver"] = options.linear_solver
    ip["print_level"] = 0
    tol = options.ipopt_tol if options.ipopt_tol is not None else options.comp_tol * 1e-2
    for key in ("tol", "dual_inf_tol", "compl_inf_tol", "mu_target"):
        ip[key] = tol
    ip["acceptable_tol"] = max(tol, 1e-6)
    ip["acceptable_iter"] = 5
    opts.terminal_time = float(ocp.horizon)
    opts.N_stages = int(ocp.n_intervals)
    opts.N_finite_elements = int(options.n_fe)
    opts.n_s = int(options.n_s)
    opts.irk_scheme = nosnoc.IrkSchemes.RADAU_IIA
    opts.irk_representation = nosnoc.IrkRepresentation.INTEGRAL
    opts.pss_mode = nosnoc.PssMode.STEP
    opts.use_fesd = True
    opts.cross_comp_mode = nosnoc.CrossComplementarityMode.SUM_LAMBDAS_COMPLEMENT_WITH_EVERY_THETA
    opts.mpcc_mode = nosnoc.MpccMode.SCHOLTES_INEQ
    opts.step_equilibration = nosnoc.StepEquilibrationMode.HEURISTIC_DELTA
    opts.rho_h = float(options.rho_h)
    opts.gamma_h = float(options.gamma_h)
    opts.comp_tol = float(options.comp_tol)
    opts.sigma_0 = float(options.sigma_0)
    opts.max_iter_homotopy = int(options.max_homotopy)
    opts.time_freezing = True
    opts.time_freezing_tolerance = 0.0  # t_k = k T / N exactly (Eq. 35f), not a band
    opts.equidistant_control_grid = True
    opts.speed_of_time_variables = nosnoc.SpeedOfTimeVariableMode.LOCAL
    opts.speed_of_time_min = float(options.s_min)
    opts.speed_of_time_max = float(options.s_max)
    opts.g_path_at_fe = bool(options.path_at_every_stage)
    opts.g_path_at_stg = bool(options.path_at_every_stage)
    opts.print_level = 0
    return model, nocp, opts


def _extract(ocp: TimeFreezingOcp, options: PlannerOptions, prob, w: np.ndarray, p_val) -> Plan:
    """Read the physical-time trajectory and the controls out of the primal vector."""
    sys_ = ocp.system
    nq = sys_.cls.nq
    N, n_fe = ocp.n_intervals, options.n_fe
    c_pts = np.asarray(prob.opts.irk_time_points, dtype=float)
    h = w[np.asarray(prob.ind_h, dtype=int)]
    x0 = np.asarray(prob.model.x0, dtype=float)
    xs, taus, ivals, modes = [x0], [0.0], [0], [0]
    tau0 = 0.0
    fe = 0
    aux = list(sys_.aux_columns)
    from .time_freezing import step_multipliers

    for k in range(N):
        for j in range(n_fe):
            for r in range(options.n_s):
                xs.append(w[np.asarray(prob.ind_x[k][j][r], dtype=int)])
                taus.append(tau0 + c_pts[r] * h[fe])
                ivals.append(k)
                alpha = w[np.asarray(prob.ind_alpha[k][j][r][0], dtype=int)]
                theta = step_multipliers(sys_.S, alpha)
                modes.append(1 if theta[aux].sum() > 0.5 else 0)
            tau0 += h[fe]
            fe += 1
    X = np.array(xs)
    u = np.array([w[np.asarray(i, dtype=int)] for i in prob.ind_u]).reshape(N, -1)
    s = np.array([w[np.asarray(i, dtype=int)] for i in prob.ind_sot]).reshape(N)
    node_rows = [0] + [1 + (k + 1) * n_fe * options.n_s - 1 for k in range(N)]
    t_grid = np.arange(N + 1) * ocp.dt
    t_all = X[:, sys_.index_t]
    return Plan(
        name=ocp.name, tau=np.array(taus), t=t_all, q=X[:, :nq], v=X[:, nq:2 * nq], ell=X[:, sys_.index_ell],
        interval=np.array(ivals), mode=np.array(modes), u=u, s=s, t_grid=t_grid,
        q_grid=X[node_rows, :nq], v_grid=X[node_rows, nq:2 * nq], h_fe=h, status="", converged=False,
        complementarity=float("nan"), cost=float(X[-1, sys_.index_ell]), cpu_s=0.0, build_s=0.0,
        clock_residual=float(np.max(np.abs(t_all[node_rows] - t_grid))),
    )


class _HomotopySolver(nosnoc.solver.NosnocSolverBase):
    """nosnoc's problem construction, initialization and parameters, with our own IPOPT instance
    (so that the progress callback can be attached with the NLP's sizes known)."""

    def __init__(self, opts, model, ocp, heartbeat: "_Heartbeat | None") -> None:
        super().__init__(opts, model, ocp)
        prob = self.problem
        nlp_opts = dict(opts.opts_casadi_nlp)
        if heartbeat is not None:
            heartbeat.finalize(prob.w.numel(), prob.g.numel(), prob.p.numel())
            nlp_opts["iteration_callback"] = heartbeat
        nlp = {"f": prob.cost, "x": prob.w, "g": prob.g, "p": prob.p}
        self.solver = ca.nlpsol(model.name, "ipopt", nlp, nlp_opts)


class _Heartbeat(ca.Callback):
    """IPOPT iteration callback that reports progress at most every `every_s` seconds."""

    def __init__(self, say: Progress, every_s: float) -> None:
        ca.Callback.__init__(self)
        self._say, self._every = say, every_s
        self._label, self._count, self._t0, self._last = "", 0, 0.0, 0.0
        self._sizes: dict[str, int] = {}

    def start(self, label: str) -> None:
        self._label, self._count = label, 0
        self._t0 = self._last = time.perf_counter()

    def finalize(self, nx: int, ng: int, np_: int) -> None:
        """Fix the NLP sizes and construct the CasADi callback (once)."""
        self._sizes = {"x": nx, "lam_x": nx, "g": ng, "lam_g": ng, "p": np_, "lam_p": np_}
        self.construct("plan_heartbeat", {})

    def get_n_in(self):
        return ca.nlpsol_n_out()

    def get_n_out(self):
        return 1

    def get_name_in(self, i):
        return ca.nlpsol_out(i)

    def get_name_out(self, i):
        return "ret"

    def get_sparsity_in(self, i):
        name = ca.nlpsol_out(i)
        if name == "f":
            return ca.Sparsity.scalar()
        return ca.Sparsity.dense(self._sizes.get(name, 0))

    def eval(self, arg):
        self._count += 1
        now = time.perf_counter()
        if now - self._last >= self._every:
            self._last = now
            self._say(f"[plan]   {self._label}: IPOPT iteration {self._count}, objective {float(arg[1]):.4g}, "
                      f"{now - self._t0:.0f} s")
        return [0]


@contextlib.contextmanager
def _stdout_to_stderr():
    """Send everything written to stdout (Python and C level) to stderr for the duration."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
