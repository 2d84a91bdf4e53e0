"""Discretize a `TimeFreezingOcp` with FESD (nosnoc) and solve it by a Scholtes homotopy (IPOPT).

What comes from `nosnoc` 0.2: the Step representation of the PSS as a dynamic complementarity
system, the FESD Radau IIA discretization with free finite-element lengths, cross
complementarities and step equilibration, the per-interval speed-of-time variables
(`SpeedOfTimeVariableMode.LOCAL`) and the NLP. What is done here: the time-freezing system
itself and its lifted Step field (`time_freezing.py`), the clock constraints t_k = k T / N as
*equalities* (nosnoc's own stage clock constraint is a band of +-`time_freezing_tolerance`,
1e-3 s by default, and cannot be switched between homotopy steps), the speed-of-time penalty,
the homotopy loop with progress on stderr and a strict success test, and the recovery of the
physical-time trajectory.
"""
from __future__ import annotations

import contextlib
import copy
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Sequence

import casadi as ca
import numpy as np

from .active_set import classify, interval_of_variables, violated_intervals
from .ocp import PlannerOptions, TimeFreezingOcp
from .time_freezing import dense_regions, lifted_step_field, step_multipliers

with warnings.catch_warnings():  # nosnoc's __init__ sets a global "always" warnings filter
    import nosnoc
    from nosnoc.utils import flatten

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
    The NLP itself: w, the primal vector of the last NLP (a warm start: `solve_plan(...,
    w_start=plan.w)`), and state_index (N x n_fe * n_s x nx ints), where each stage state
    sits in w.
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
    w: np.ndarray = field(default_factory=lambda: np.zeros(0))
    state_index: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0), dtype=int))

    @property
    def physical_time_end(self) -> float:
        """Clock value at the end of the numerical horizon, s."""
        return float(self.t[-1])

    def save_npz(self, path, **extra) -> None:
        """Write the plan (physical time grid, q, v, u, the dense points, and the NLP's primal
        vector w with its state_index, for a later warm start) to an NPZ file; `extra` arrays
        (e.g. the terrain the plan avoids) are stored beside them under their own names."""
        np.savez(
            path, name=self.name, t_grid=self.t_grid, q_grid=self.q_grid, v_grid=self.v_grid, u=self.u,
            s=self.s, t=self.t, tau=self.tau, q=self.q, v=self.v, mode=self.mode, interval=self.interval,
            complementarity=self.complementarity, converged=self.converged, cost=self.cost,
            w=self.w, state_index=self.state_index, **extra,
        )


def solve_plan(ocp: TimeFreezingOcp, options: PlannerOptions = PlannerOptions(), *,
               progress: Progress | None = None, on_iterate: Callable[[dict, np.ndarray], None] | None = None,
               w_start: np.ndarray | None = None) -> Plan:
    """Solve a time-freezing OCP from a trivial guess (x0 everywhere, u = u_guess).

    Homotopy on the Scholtes relaxation sigma. While sigma > options.clock_switch_sigma only
    the terminal clock constraint t(T~) = T is imposed and (s_k - 1)^2 is penalised with
    options.rho_sot; from then on every t_k = k T / N (Eq. 35f) holds and the penalty is off.
    The first NLP (the loosest relaxation, whose solution is only a starting point) stops
    after options.first_nlp_max_iter IPOPT iterations if that is set.
    Returns a `Plan`; `plan.converged` says whether the last NLP succeeded with the stagewise
    clock and the complementarity residual reached `options.comp_tol`. Progress lines go to
    `progress`; nothing is printed to stdout. `on_iterate(entry, w)` is called after every NLP;
    `w_start` replaces the initial guess by a primal vector of the same problem.
    """
    say = progress or (lambda msg: None)
    t_build = time.perf_counter()
    need_callback = options.heartbeat_s > 0 or options.first_nlp_max_iter is not None
    heartbeat = _Heartbeat(say, options.heartbeat_s) if need_callback else None
    model, nocp, opts = _nosnoc_description(ocp, options)
    with _stdout_to_stderr():
        solver = _HomotopySolver(opts, model, nocp, ocp, options, heartbeat)
    prob = solver.problem
    build_s = time.perf_counter() - t_build
    say(f"[plan] {ocp.name}: NLP with {solver.n_w} variables, {solver.n_g} constraints "
        f"(N={ocp.n_intervals}, {options.n_fe} finite elements x {options.n_s} Radau stages), built in {build_s:.1f} s")

    solver.initialize()
    w = prob.w0.copy()
    if options.pss == "step":
        w[np.asarray(flatten(prob.ind_alpha), dtype=int)] = options.alpha_init  # nosnoc uses 1/2
    if options.init == "interpolate":
        _interpolate_guess(w, prob, ocp, options)
    if w_start is not None:
        w_start = np.asarray(w_start, dtype=float)
        if w_start.shape != w.shape:
            raise ValueError(f"w_start has shape {w_start.shape}, this problem has {w.shape[0]} variables")
        w = w_start.copy()
    sigma = options.sigma_0
    log: list[dict] = []
    cpu = 0.0
    status = "not_started"
    comp = float("inf")
    stagewise = False
    for k in range(options.max_homotopy):
        stagewise = stagewise or options.clock_switch_sigma is None or sigma <= options.clock_switch_sigma
        label = f"NLP {k + 1} (sigma={sigma:.1e}, clock={'stagewise' if stagewise else 'terminal'})"
        if heartbeat is not None:
            heartbeat.start(label, limit=options.first_nlp_max_iter if k == 0 else None)
        t0 = time.perf_counter()
        with _stdout_to_stderr():
            w, stats, obj = solver.solve(w, sigma, stagewise=stagewise)
        dt = time.perf_counter() - t0
        cpu += dt
        status = stats["return_status"]
        if status == "Invalid_Option":
            raise RuntimeError(
                f"IPOPT rejected its options (linear_solver={options.linear_solver!r}, ipopt_extra="
                f"{dict(options.ipopt_extra)}): the HSL solvers (ma27, ma57, ...) need an HSL library IPOPT "
                "can load (libhsl.so on the library path); 'mumps' ships with casadi")
        comp = solver.complementarity(w, sigma)
        entry = {"sigma": sigma, "stagewise_clock": stagewise, "status": status,
                 "iters": int(stats["iter_count"]), "cpu_s": dt, "complementarity": comp, "objective": obj}
        log.append(entry)
        if on_iterate is not None:
            on_iterate(entry, w)
        say(f"[plan] {label}: comp={comp:.2e} obj={obj:.4g} iters={entry['iters']} {dt:.1f} s {status}")
        if options.polish_below is not None and stagewise and comp <= options.polish_below:
            polished, polish_s = _polish(solver, w, sigma, ocp, options, say)
            cpu += polish_s
            if polished is not None:
                w, status, comp, entry = polished
                log.append(entry)
                if on_iterate is not None:
                    on_iterate(entry, w)
                break
        if options.stop_on_failure and status not in _IPOPT_OK:
            say(f"[plan] stopping: {status} and stop_on_failure is set")
            break
        if comp < options.comp_tol and status in _IPOPT_OK:
            if stagewise:
                break
            stagewise = True  # re-solve at the same sigma with the equidistant physical grid
            continue
        if sigma < 1e-3 * options.comp_tol:
            if stagewise:
                break
            stagewise = True  # sigma is exhausted: finish with the equidistant physical grid
            continue
        sigma = _next_sigma(sigma, options)

    plan = _extract(ocp, options, prob, w)
    plan.status = status
    plan.complementarity = comp
    plan.converged = status in _IPOPT_OK and comp <= options.comp_tol and stagewise
    plan.cpu_s = cpu
    plan.build_s = build_s
    plan.homotopy = log
    return plan


def check_primal(ocp: TimeFreezingOcp, options: PlannerOptions, w: np.ndarray, *, sigma: float) -> tuple[Plan, dict]:
    """Evaluate the NLP that `solve_plan(ocp, options)` solves at a given primal vector w.

    The NLP is built as solve_plan builds it (stagewise clock t_k = k T / N, the Scholtes
    relaxation at `sigma`), but not solved. Returns the plan read out of w (as solve_plan
    returns it; its status is "checked") and the figures:
    equality_residual: max |g - g_ref| over the equality rows (the collocation equations of the
        dynamics, continuity, the lifted Step products, the clock and terminal constraints);
    inequality_violation: max violation of the inequality rows (path constraints with the
        holes, the relaxed complementarities at `sigma`);
    bound_violation: max violation of the variable bounds (controls, states, speed of time,
        element lengths); complementarity: max cross-complementarity product (nosnoc's measure).
    Units are those of each row. Raises ValueError if w does not have the NLP's size."""
    model, nocp, opts = _nosnoc_description(ocp, options)
    with _stdout_to_stderr():
        solver = _HomotopySolver(opts, model, nocp, ocp, options, None)
    prob = solver.problem
    solver.initialize()
    w = np.asarray(w, dtype=float).ravel()
    if w.shape != (solver.n_w,):
        raise ValueError(f"w has {w.size} entries, the NLP of {ocp.name} has {solver.n_w} variables "
                         "(another discretization or problem: n_s, n_fe, N)")
    lbg, ubg, _ = solver._bounds_and_p(sigma, stagewise=True)
    violation = solver.row_violation(w, sigma, stagewise=True)
    eq = lbg == ubg
    lbw, ubw = np.asarray(prob.lbw, dtype=float), np.asarray(prob.ubw, dtype=float)
    figures = {
        "equality_residual": float(violation[eq].max(initial=0.0)),
        "inequality_violation": float(violation[~eq].max(initial=0.0)),
        "bound_violation": float(np.maximum(np.maximum(lbw - w, w - ubw), 0.0).max(initial=0.0)),
        "complementarity": abs(solver.complementarity(w, sigma)),
    }
    plan = _extract(ocp, options, prob, w)
    plan.status, plan.complementarity = "checked", figures["complementarity"]
    return plan, figures


def _polish(solver, w: np.ndarray, sigma: float, ocp: TimeFreezingOcp, options: PlannerOptions, say: Progress):
    """Active-set polish of the relaxed point w (solved at `sigma`).

    Returns ((w, status, comp, log entry) or None if no round succeeded exactly, seconds spent).

    Round 1 fixes the active set read off w everywhere (active_set.py) and solves once. If
    IPOPT fails, the control intervals whose constraint rows are still violated at its end
    point (by more than options.polish_violation) are left relaxed in the next round, at a
    sigma a factor min(options.homotopy_slope, 0.1) below `sigma`, while every other
    interval keeps its fixed active set. A successful relaxed round gives the start point (and
    the classification) of the next exact round, and the next relaxed round's sigma is a
    factor lower again. Up to options.polish_rounds rounds.
    """
    prob = solver.problem
    owner = None  # variable -> control interval, built on the first failed round that has a successor
    relaxed: set[int] = set()
    shrink = min(options.homotopy_slope, 0.1)
    base, sigma_r = w, sigma * shrink
    t_all, iters = 0.0, 0
    for rnd in range(1, options.polish_rounds + 1):
        active = classify(prob, base, n_intervals=ocp.n_intervals, n_fe=options.n_fe, n_s=options.n_s,
                          c_eps=options.polish_c_eps, alpha_eps=0.1, relaxed=frozenset(relaxed))
        sig = sigma_r if relaxed else options.comp_tol
        t0 = time.perf_counter()
        with _stdout_to_stderr():
            w_new, stats, obj = solver.solve(active.w, sig, stagewise=True, lbx=active.lbx, ubx=active.ubx)
        dt = time.perf_counter() - t0
        t_all += dt
        iters += int(stats["iter_count"])
        status = stats["return_status"]
        comp = abs(solver.complementarity(w_new, sig))  # exactly zero products print as -0.0
        where = f"intervals {sorted(relaxed)} relaxed at sigma={sig:.1e}" if relaxed else "exact"
        say(f"[plan] active-set polish round {rnd} ({where}; {active.counts()}): comp={comp:.2e} "
            f"obj={obj:.4g} iters={stats['iter_count']} {dt:.1f} s {status}")
        if status in _IPOPT_OK:
            if not relaxed:
                entry = {"sigma": 0.0, "stagewise_clock": True, "status": status, "iters": iters, "cpu_s": t_all,
                         "complementarity": comp, "objective": obj, "polish": active.counts(), "polish_rounds": rnd}
                return (w_new, status, comp, entry), t_all
            base, relaxed = w_new, set()  # next: the exact active set read off this better point
            sigma_r *= shrink
            continue
        if rnd == options.polish_rounds:
            break
        if owner is None:
            owner = interval_of_variables(prob, ocp.n_intervals, options.n_fe)
        bad = violated_intervals(solver.row_violation(w_new, sig, stagewise=True), *solver.jacobian_triplets(),
                                 owner, options.polish_violation)
        if not bad - relaxed or len(relaxed | bad) == ocp.n_intervals:
            break  # nothing new to relax, or everything: that is the relaxed NLP already solved
        relaxed |= bad
    return None, t_all


def _interpolate_guess(w: np.ndarray, prob, ocp: TimeFreezingOcp, options: PlannerOptions) -> None:
    """Straight-line guess from q0 to ocp.q_end_guess at constant velocity, clock = tau (in place)."""
    if np.isnan(ocp.q_end_guess).any():
        raise ValueError(f"{ocp.name}: init='interpolate' needs q_end_guess in the OCP; pass it or use init='x0'")
    nq = ocp.system.cls.nq
    q0, q1 = np.asarray(ocp.q0), np.asarray(ocp.q_end_guess)
    vel = (q1 - q0) / ocp.horizon
    c_pts = np.asarray(prob.opts.irk_time_points, dtype=float)
    for k in range(ocp.n_intervals):
        for j in range(options.n_fe):
            for r in range(options.n_s):
                frac = (k + (j + c_pts[r]) / options.n_fe) / ocp.n_intervals
                idx = np.asarray(prob.ind_x[k][j][r], dtype=int)
                w[idx[:nq]] = q0 + frac * (q1 - q0)
                w[idx[nq:2 * nq]] = vel
                w[idx[ocp.system.index_t]] = frac * ocp.horizon


def _next_sigma(sigma: float, options: PlannerOptions) -> float:
    if options.superlinear:
        return min(options.homotopy_slope * sigma, sigma ** 1.5)
    return options.homotopy_slope * sigma


def _nosnoc_description(ocp: TimeFreezingOcp, options: PlannerOptions):
    """The nosnoc model, OCP and options of a time-freezing OCP."""
    sys_ = ocp.system
    x0 = np.concatenate([ocp.q0, ocp.v0, [0.0, 0.0]])
    if options.lift_step and options.pss == "step":
        alpha, beta, f_x, g_z = lifted_step_field(sys_)
        # beta where g_z = 0 with every alpha at alpha_init (solve_plan's start): g_z is beta
        # minus a function of alpha, so beta0 = -g_z(alpha_init, beta = 0)
        start = ca.vertcat(ca.DM.ones(alpha.numel()) * options.alpha_init, 0.0)
        beta0 = -ca.evalf(ca.substitute(g_z, ca.vertcat(alpha, beta), start)).full().ravel()
        model = nosnoc.NosnocModel(x=sys_.x, f_x=[f_x], alpha=[alpha], c=[sys_.c], z=beta, z0=beta0,
                                   g_z=g_z, x0=x0, u=sys_.u, t_var=sys_.t, name=f"tf_{ocp.name}")
    else:
        if options.pss == "stewart":
            F, S, _ = dense_regions(sys_)
        else:
            F, S = sys_.F, sys_.S
        model = nosnoc.NosnocModel(x=sys_.x, F=[F], c=[sys_.c], S=[S], x0=x0, u=sys_.u,
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
    ip.update(dict(options.ipopt_extra))
    opts.terminal_time = float(ocp.horizon)
    opts.N_stages = int(ocp.n_intervals)
    opts.N_finite_elements = int(options.n_fe)
    opts.n_s = int(options.n_s)
    opts.irk_scheme = nosnoc.IrkSchemes.RADAU_IIA
    opts.irk_representation = nosnoc.IrkRepresentation.INTEGRAL
    opts.pss_mode = nosnoc.PssMode.STEWART if options.pss == "stewart" else nosnoc.PssMode.STEP
    opts.use_fesd = True
    opts.cross_comp_mode = nosnoc.CrossComplementarityMode.SUM_LAMBDAS_COMPLEMENT_WITH_EVERY_THETA
    opts.mpcc_mode = nosnoc.MpccMode.ELASTIC_INEQ if options.mpcc == "elastic" else nosnoc.MpccMode.SCHOLTES_INEQ
    opts.s_elastic_max = 10.0
    opts.step_equilibration = {
        "delta": nosnoc.StepEquilibrationMode.HEURISTIC_DELTA,
        "mean": nosnoc.StepEquilibrationMode.HEURISTIC_MEAN,
        "relaxed": nosnoc.StepEquilibrationMode.L2_RELAXED_SCALED,
    }[options.step_equilibration]
    opts.rho_h = float(options.rho_h)
    opts.gamma_h = float(options.gamma_h)
    opts.comp_tol = float(options.comp_tol)
    opts.sigma_0 = float(options.sigma_0)
    opts.max_iter_homotopy = int(options.max_homotopy)
    opts.time_freezing = False  # the clock constraints are added in _HomotopySolver (exact, switchable)
    opts.equidistant_control_grid = True
    opts.speed_of_time_variables = nosnoc.SpeedOfTimeVariableMode.LOCAL
    opts.speed_of_time_min = float(options.s_min)
    opts.speed_of_time_max = float(options.s_max)
    opts.g_path_at_fe = bool(options.path_at_every_stage)
    opts.g_path_at_stg = bool(options.path_at_every_stage)
    opts.print_level = 0
    return model, nocp, opts


def _extract(ocp: TimeFreezingOcp, options: PlannerOptions, prob, w: np.ndarray) -> Plan:
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
    stewart = options.pss == "stewart"
    aux = list(dense_regions(sys_)[2] if stewart else sys_.aux_columns)

    for k in range(N):
        for j in range(n_fe):
            for r in range(options.n_s):
                xs.append(w[np.asarray(prob.ind_x[k][j][r], dtype=int)])
                taus.append(tau0 + c_pts[r] * h[fe])
                ivals.append(k)
                if stewart:
                    theta = w[np.asarray(prob.ind_theta[k][j][r][0], dtype=int)]
                else:
                    theta = step_multipliers(sys_.S, w[np.asarray(prob.ind_alpha[k][j][r][0], dtype=int)])
                modes.append(1 if theta[aux].sum() > 0.5 else 0)
            tau0 += h[fe]
            fe += 1
    X = np.array(xs)
    if ocp.to_robot is not None:  # report q, v in the robot's coordinates
        q_rob, v_rob = ocp.to_robot(X[:, :nq].T, X[:, nq:2 * nq].T)
        X[:, :nq], X[:, nq:2 * nq] = np.asarray(q_rob).T, np.asarray(v_rob).T
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
        w=np.array(w, dtype=float),
        state_index=np.array([[prob.ind_x[k][j][r] for j in range(n_fe) for r in range(options.n_s)]
                              for k in range(N)], dtype=int),
    )


def tile_primal(tiles: Sequence[tuple[Plan, np.ndarray]]) -> np.ndarray:
    """Primal vector of the problem whose control intervals are those of the tiles, in order.

    tiles: (plan, shift) pairs; shift (nx) is added to every stage state of that plan (e.g. the
    x distance, clock time and cost the earlier tiles covered). All plans must come from
    problems with the same system, n_fe and n_s (their horizons and N may differ). Why this
    works: nosnoc lays out the controls and speed of time of every interval first (interval
    after interval), then each interval's finite elements as one block of the same size, so
    the long problem's vector is the tiles' heads followed by the tiles' blocks.
    Returns w (n_w of the long problem); pass it as `solve_plan(..., w_start=)`.
    """
    if not tiles:
        raise ValueError("tile_primal needs at least one (plan, shift) tile")
    heads, blocks = [], []
    size = None
    for i, (plan, shift) in enumerate(tiles):
        n = plan.u.shape[0]
        head = n * (plan.u.shape[1] + 1)  # u and the speed of time, per interval
        if plan.w.size == 0 or plan.state_index.shape[0] != n:
            raise ValueError(f"tile {i}: the plan carries no primal vector (plan.w); solve it with solve_plan")
        if (plan.w.size - head) % n or plan.state_index.min() < head:
            raise ValueError(f"tile {i}: primal vector of {plan.w.size} entries is not nosnoc's "
                             f"[{head} controls/speeds | {n} equal blocks] layout")
        block = (plan.w.size - head) // n
        if size is not None and (block, plan.state_index.shape[1:]) != size:
            raise ValueError(f"tile {i}: blocks of {block} variables / states {plan.state_index.shape[1:]}, "
                             f"the first tile has {size}: same system, n_fe and n_s needed")
        size = (block, plan.state_index.shape[1:])
        shift = np.asarray(shift, dtype=float)
        if shift.shape != (plan.state_index.shape[2],):
            raise ValueError(f"tile {i}: shift has shape {shift.shape}, the state has {plan.state_index.shape[2]} entries")
        w = plan.w.copy()
        w[plan.state_index] += shift
        heads.append(w[:head])
        blocks.append(w[head:])
    return np.concatenate(heads + blocks)


class _HomotopySolver(nosnoc.solver.NosnocSolverBase):
    """nosnoc's FESD problem (variables, discretization, complementarities, initialization),
    extended here with the clock constraints t_k = k T / N, the speed-of-time penalty and the
    optional alpha regularization, solved by our own IPOPT instance."""

    def __init__(self, opts, model, nocp, ocp: TimeFreezingOcp, options: PlannerOptions,
                 heartbeat: "_Heartbeat | None") -> None:
        super().__init__(opts, model, nocp)
        prob = self.problem
        if options.h_max is not None:  # nosnoc's bound is (1 + gamma_h) h0; h0 is the initial guess
            ih = np.asarray(prob.ind_h, dtype=int)
            prob.ubw[ih] = options.h_max * np.asarray(prob.w0)[ih]
        it = ocp.system.index_t
        N = ocp.n_intervals
        # clock at the end of every control interval (last stage point of its last element)
        t_end = ca.vertcat(*[prob.w[prob.ind_x[k][-1][-1][it]] for k in range(N)])
        clock = t_end - ca.DM(ocp.dt * np.arange(1, N + 1))
        rho_sot = ca.SX.sym("rho_sot")
        sot = prob.w[np.asarray(prob.ind_sot, dtype=int).ravel().tolist()]
        cost = prob.cost + rho_sot * ca.sumsqr(sot - 1.0)
        if options.rho_alpha > 0 and options.pss == "step":
            alpha = prob.w[np.asarray(flatten(prob.ind_alpha), dtype=int).tolist()]
            cost = cost + options.rho_alpha * ca.sumsqr(alpha - 0.5)
        self.n_w = prob.w.numel()
        g = ca.vertcat(prob.g, clock)
        self.n_g = g.numel()
        self.n_clock = N
        self.rho_sot = options.rho_sot
        nlp_opts = dict(opts.opts_casadi_nlp)
        p = ca.vertcat(prob.p, rho_sot)
        if heartbeat is not None:
            heartbeat.bind_sizes(self.n_w, self.n_g, p.numel())
            nlp_opts["iteration_callback"] = heartbeat
        nlp = {"f": cost, "x": prob.w, "g": g, "p": p}
        self.solver = ca.nlpsol(model.name, "ipopt", nlp, nlp_opts)
        self._g, self._p = g, p  # for row_violation / jacobian_triplets (the polish only)
        self._g_fun = None
        self._jac_triplets = None

    def _bounds_and_p(self, sigma: float, stagewise: bool):
        prob = self.problem
        self.setup_p_val(sigma, min(sigma ** 1.5, sigma))
        lb_clock = np.full(self.n_clock, -np.inf)
        ub_clock = np.full(self.n_clock, np.inf)
        if stagewise:
            lb_clock[:] = ub_clock[:] = 0.0
        else:
            lb_clock[-1] = ub_clock[-1] = 0.0  # t(T~) = T
        p = np.append(self.p_val, 0.0 if stagewise else self.rho_sot)
        return np.concatenate([prob.lbg, lb_clock]), np.concatenate([prob.ubg, ub_clock]), p

    def solve(self, w0: np.ndarray, sigma: float, *, stagewise: bool, lbx=None, ubx=None):
        """One NLP of the homotopy: returns (w, IPOPT stats, objective)."""
        prob = self.problem
        lbg, ubg, p = self._bounds_and_p(sigma, stagewise)
        args = dict(x0=w0, lbg=lbg, ubg=ubg, lbx=prob.lbw if lbx is None else lbx,
                    ubx=prob.ubw if ubx is None else ubx, p=p)
        sol = self.solver(**args)
        return sol["x"].full().ravel(), self.solver.stats(), float(sol["f"])

    def row_violation(self, w: np.ndarray, sigma: float, *, stagewise: bool) -> np.ndarray:
        """Violation of every constraint row at w for the relaxation sigma (0 where satisfied)."""
        lbg, ubg, p = self._bounds_and_p(sigma, stagewise)
        if self._g_fun is None:
            self._g_fun = ca.Function("g", [self.problem.w, self._p], [self._g])
        g = self._g_fun(w, p).full().ravel()
        return np.maximum(np.maximum(lbg - g, g - ubg), 0.0)

    def jacobian_triplets(self) -> tuple[np.ndarray, np.ndarray]:
        """(row, column) index arrays of the constraint Jacobian's structural nonzeros (cached)."""
        if self._jac_triplets is None:
            rows, cols = ca.jacobian_sparsity(self._g, self.problem.w).get_triplet()
            self._jac_triplets = (np.asarray(rows, dtype=int), np.asarray(cols, dtype=int))
        return self._jac_triplets

    def complementarity(self, w: np.ndarray, sigma: float) -> float:
        """Max cross-complementarity product at w (nosnoc's measure) for the relaxation sigma."""
        self.setup_p_val(sigma, min(sigma ** 1.5, sigma))
        return float(self.problem.comp_res(w, self.p_val))


class _Heartbeat(ca.Callback):
    """IPOPT iteration callback: reports progress at most every `every_s` seconds (never if 0)
    and stops IPOPT (status User_Requested_Stop) after `limit` iterations if one is set."""

    def __init__(self, say: Progress, every_s: float) -> None:
        ca.Callback.__init__(self)
        self._say, self._every = say, every_s
        self._label, self._count, self._t0, self._last, self._limit = "", 0, 0.0, 0.0, None
        self._sizes: dict[str, int] = {}

    def start(self, label: str, limit: int | None = None) -> None:
        self._label, self._count, self._limit = label, 0, limit
        self._t0 = self._last = time.perf_counter()

    def bind_sizes(self, nx: int, ng: int, np_: int) -> None:
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
        if self._every > 0 and now - self._last >= self._every:
            self._last = now
            self._say(f"[plan]   {self._label}: IPOPT iteration {self._count}, objective {float(arg[1]):.4g}, "
                      f"{now - self._t0:.0f} s")
        return [1 if self._limit is not None and self._count >= self._limit else 0]


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
