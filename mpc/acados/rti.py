"""The contact-implicit OCP as an acados SQP-RTI solver (HPIPM), and its per-tick timing.

Problem (any of mpc.problem; the planar one is mpc.wholebody.ocp, the 3D one
mpc.centroidal.ocp): state (x, tau) where tau is the gait clock (tau+ = tau + dt), controls
(planar: torques, contact forces, sliding slacks), discrete dynamics = the OCP's semi-implicit
Euler step, stage constraints = the smoothed complementarity residuals as equalities softened
by L1 + L2 penalised slacks (every QP feasible), cost = weighted least squares of
(x - xref(tau), u - uref(tau)) with the symbolic gait reference. Generated once per content
hash (mpc.acados.runtime.cached_ocp_solver).

    rti = RtiSolver(ContactOcp(model, options), reference, weights)
    rti.feedback(x0) -> status ; rti.shift() ; rti.prepare() ; rti.take_stats()
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import casadi as ca
import numpy as np

from ..problem import cost_features, soft_constraints
from ..reference import FourierReference
from .io import STAT_NAMES, HorizonIO
from .runtime import acados_template, cached_ocp_solver
from .smoke import set_horizon


@dataclass(frozen=True)
class CostWeights:
    """Diagonal least-squares weights. w_x (nx), w_u (nu) per stage; terminal = w_x * terminal_factor.
    z_l1, z_l2: L1 and L2 penalties on the complementarity slacks (the L1 penalty is exact,
    i.e. buys no violation, only above the constraints' multipliers; see MpcOptions.z_l1).
    soft_scale: None, or one factor per softened stage constraint (the problem's `h`) that
    multiplies both penalties there (e.g. a dearer rule). first_stage_price: both penalties on
    stage 0 (the stage a tick executes) are this many times the other stages'. On stages of
    differing length every stage's penalties are those of a stage of the first length (acados
    would otherwise scale them with the stage's length, making a fine stage's violation cheap)."""

    w_x: np.ndarray
    w_u: np.ndarray
    terminal_factor: float = 10.0
    z_l1: float = 100.0
    z_l2: float = 1e4
    soft_scale: np.ndarray | None = None
    first_stage_price: float = 1.0


@dataclass(frozen=True)
class RtiOptions:
    """qp_iter_max: HPIPM iteration cap (bounds the feedback time); hpipm_mode: HPIPM preset;
    nlp_solver: "SQP_RTI" (real time) or "SQP" (iterate to convergence, for tests);
    sqp_iter_max: SQP iterations when nlp_solver == "SQP"."""

    qp_iter_max: int = 50
    hpipm_mode: str = "ROBUST"
    cond_n: int | None = None
    warm_start: int = 1
    qp_tol: float = 1e-6
    nlp_solver: str = "SQP_RTI"
    sqp_iter_max: int = 100
    tol: float = 1e-8


def build_acados_ocp(problem, reference: FourierReference, weights: CostWeights,
                     options: RtiOptions = RtiOptions(), name: str | None = None,
                     joint_limits: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None):
    """The AcadosOcp of the contact-implicit problem (mpc.problem: a `ContactOcp` or a
    `CentroidalOcp`) with the clock state (no solver built).

    joint_limits: (state indices, lower, upper) kept as soft bounds (L1 + L2 penalised) on
    stages 1..N-1."""
    tpl = acados_template()
    x, u = problem.x, problem.u
    y_x, y_u = cost_features(problem)
    if np.shape(weights.w_x) != (y_x.numel(),) or np.shape(weights.w_u) != (y_u.numel(),):
        raise ValueError(f"CostWeights: w_x must have {y_x.numel()} entries and w_u {y_u.numel()}, "
                         f"got {np.shape(weights.w_x)} and {np.shape(weights.w_u)}")
    tau = ca.SX.sym("tau")
    model = tpl.AcadosModel()
    model.name = name or f"cimpc_{problem.model.name}"
    model.x = ca.vertcat(x, tau)
    model.u = u
    dts = stage_lengths(problem)
    dt_param = getattr(problem, "dt_param", None)  # stages of differing length: dt is a parameter
    if dt_param is not None:
        model.p = dt_param
        model.disc_dyn_expr = ca.vertcat(problem.x_next, tau + dt_param)
    else:
        model.disc_dyn_expr = ca.vertcat(problem.x_next, tau + problem.options.dt)
    h, h_lb, h_ub = soft_constraints(problem)
    model.con_h_expr = h
    model.cost_y_expr = ca.vertcat(y_x - reference.x(tau), y_u - reference.u(tau))
    model.cost_y_expr_e = y_x - reference.x(tau)
    ocp = tpl.AcadosOcp()
    ocp.model = model
    n = problem.options.n_stages
    set_horizon(ocp, n)
    ocp.solver_options.tf = float(np.sum(dts))
    if dt_param is not None:
        ocp.parameter_values = np.array([dts[0]])
        ocp.solver_options.time_steps = dts  # acados scales each stage's cost by its length
    ocp.cost.cost_type = "NONLINEAR_LS"
    ocp.cost.cost_type_e = "NONLINEAR_LS"
    ocp.cost.W = np.diag(np.concatenate([weights.w_x, weights.w_u]))
    ocp.cost.W_e = np.diag(weights.terminal_factor * np.asarray(weights.w_x))
    ocp.cost.yref = np.zeros(y_x.numel() + y_u.numel())
    ocp.cost.yref_e = np.zeros(y_x.numel())
    nh = h.numel()
    ocp.constraints.lh = h_lb
    ocp.constraints.uh = h_ub
    ocp.constraints.idxsh = np.arange(nh)
    nsbx = 0
    if joint_limits is not None and len(joint_limits[0]):
        idx, lo, hi = joint_limits
        nsbx = len(idx)
        ocp.constraints.idxbx = np.asarray(idx, int)
        ocp.constraints.lbx = np.asarray(lo, float)
        ocp.constraints.ubx = np.asarray(hi, float)
        ocp.constraints.idxsbx = np.arange(nsbx)
    # slack penalties are ordered [soft x bounds, soft h]
    scale = np.ones(nsbx + nh)
    if weights.soft_scale is not None:
        if np.shape(weights.soft_scale) != (nh,):
            raise ValueError(f"CostWeights.soft_scale must have one factor per softened constraint ({nh}), "
                             f"got shape {np.shape(weights.soft_scale)}")
        scale[nsbx:] = weights.soft_scale
    ocp.cost.zl = ocp.cost.zu = weights.z_l1 * scale
    ocp.cost.Zl = ocp.cost.Zu = weights.z_l2 * scale
    ocp.constraints.lbu = problem.u_lb
    ocp.constraints.ubu = problem.u_ub
    ocp.constraints.idxbu = np.arange(problem.nu)
    ocp.constraints.x0 = np.zeros(problem.nx + 1)
    so = ocp.solver_options
    so.integrator_type = "DISCRETE"
    so.nlp_solver_type = options.nlp_solver
    so.qp_solver = "PARTIAL_CONDENSING_HPIPM"
    so.hpipm_mode = options.hpipm_mode
    so.hessian_approx = "GAUSS_NEWTON"
    so.qp_solver_iter_max = options.qp_iter_max
    so.qp_solver_warm_start = options.warm_start
    if options.cond_n is not None:
        so.qp_solver_cond_N = options.cond_n
    so.nlp_solver_max_iter = options.sqp_iter_max
    so.tol = options.tol
    so.qp_tol = options.qp_tol
    so.print_level = 0
    return ocp


def stage_lengths(problem) -> np.ndarray:
    """Every stage's length (s): the problem's own `stage_lengths()` if it has stages of
    differing length, else options.dt repeated."""
    if hasattr(problem, "stage_lengths"):
        return np.asarray(problem.stage_lengths(), dtype=float)
    return np.full(problem.options.n_stages, problem.options.dt)


class RtiSolver:
    """One compiled acados solver of the OCP plus warm-start and timing helpers."""

    def __init__(self, problem, reference: FourierReference, weights: CostWeights,
                 options: RtiOptions = RtiOptions(), *, joint_limits=None, cache_dir=None, verbose: bool = True):
        self.problem, self.reference, self.options = problem, reference, options
        self.n = problem.options.n_stages
        self.nx = problem.nx + 1
        ocp = build_acados_ocp(problem, reference, weights, options, joint_limits=joint_limits)
        self.solver = cached_ocp_solver(ocp, cache_dir=cache_dir, verbose=verbose)
        self.built_now = self.solver.legmpc_built_now
        self.dts = stage_lengths(problem)
        self._uniform = bool(np.all(self.dts == self.dts[0]))  # shift by whole stages
        self.grid = np.concatenate([[0.0], np.cumsum(self.dts)])  # stage start times from stage 0, s
        if getattr(problem, "dt_param", None) is not None:
            for k, dt in enumerate(self.dts):
                self.solver.set(k, "p", np.array([dt]))
        # acados scales a stage's whole cost, slack penalties included, by its length; a violated
        # constraint costs the same on every stage (what a stage of the first length pays), and
        # on the executed stage 0 `weights.first_stage_price` times that
        if weights.first_stage_price != 1.0 and joint_limits is not None and len(joint_limits[0]):
            raise ValueError("CostWeights.first_stage_price needs a problem without soft joint limits (stage 0 has "
                             "none of their slacks)")
        for k, dt in enumerate(self.dts):
            factor = (self.dts[0] / dt) * (weights.first_stage_price if k == 0 else 1.0)
            if factor != 1.0:
                for field, value in (("zl", ocp.cost.zl), ("zu", ocp.cost.zu), ("Zl", ocp.cost.Zl),
                                     ("Zu", ocp.cost.Zu)):
                    self.solver.cost_set(k, field, np.asarray(value, float) * factor)
        self.io = HorizonIO(self.solver, self.n, self.nx, problem.nu, rti=options.nlp_solver == "SQP_RTI")
        self._shift_maps = None
        self._acc = np.zeros(len(STAT_NAMES))  # statistics summed since the last take_stats()

    def initialize(self, x0: np.ndarray, tau0: float) -> None:
        """Set the whole horizon's guess to the reference from gait time tau0 (state x0 at stage 0)."""
        taus = tau0 + self.grid
        xs = np.column_stack([self.reference.x_at(taus), taus])
        xs[0, :-1] = x0
        us = np.clip(self.reference.u_at(taus[:-1]), self.problem.u_lb, self.problem.u_ub)
        self.io.set(xs, us)

    def restart(self, x0: np.ndarray, tau0: float) -> None:
        """After a failed QP: drop the iterate and the QP solver's memory (its warm start would
        carry the failure into the next QPs) and start again from the reference at gait time
        tau0 with state x0 at stage 0."""
        self.solver.reset()
        self.initialize(x0, tau0)

    def shift(self, xs: np.ndarray | None = None, us: np.ndarray | None = None) -> None:
        """Warm start for the next tick, one first stage (dt) later: with equal stages, move every
        stage's x and u one stage earlier, the new last stage repeating the old last state and
        control (its clock advanced by dt); with stages of differing length, the iterate
        interpolated at the new stage times (`shift_maps`). xs, us: the iterate to shift
        (default: the solver's current one)."""
        dt = self.problem.options.dt
        if self._uniform:
            if xs is None or us is None:
                self.io.shift(dt)
            else:
                self.io.set_shifted(xs, us, dt)
            return
        if xs is None or us is None:
            xs, us = self.io.get()
        A, B = self.shift_maps()
        xs2 = A @ xs
        xs2[:, -1] = xs[0, -1] + dt + self.grid  # the clock: exact
        self.io.set(xs2, B @ us)

    def shift_maps(self) -> tuple[np.ndarray, np.ndarray]:
        """(A, B): the iterate one first stage later as linear maps, xs' = A xs, us' = B us.
        States are interpolated linearly at the new stage times (held after the horizon's end);
        each new control is the time average of the old controls over its stage (so the feet's
        displacement matches the interpolated positions), the last one held past the end."""
        if self._shift_maps is None:
            dt, grid, n = self.problem.options.dt, self.grid, self.n
            new = np.minimum(grid + dt, grid[-1])
            A = np.zeros((n + 1, n + 1))
            for k, t in enumerate(new):
                j = min(np.searchsorted(grid, t, side="right") - 1, n - 1)
                w = (t - grid[j]) / (grid[j + 1] - grid[j])
                A[k, j], A[k, j + 1] = 1.0 - w, w
            B = np.zeros((n, n))
            for k in range(n):
                t0, t1 = grid[k] + dt, grid[k + 1] + dt
                for j in range(n):
                    lo, hi = max(t0, grid[j]), min(t1, grid[j + 1] if j < n - 1 else np.inf)
                    if hi > lo:
                        B[k, j] = (hi - lo) / (t1 - t0)
            self._shift_maps = (A, B)
        return self._shift_maps

    def feedback(self, x0: np.ndarray) -> int:
        """Feedback phase at the measured state x0 (nx + 1, clock last); returns acados status.
        The resulting iterate is then in `iterate()`."""
        self.io.x0[:] = x0
        status = self.io.rti_phase(2, set_x0=True, read=True)
        self._acc += self.io.last_stats
        return status

    def prepare(self) -> int:
        """Preparation phase (linearize around the current, shifted guess) for the next tick."""
        status = self.io.rti_phase(1)
        self._acc += self.io.last_stats
        return status

    def solve_to_convergence(self, x0: np.ndarray) -> int:
        """Full solve (nlp_solver == "SQP"); returns acados status."""
        self.io.set_x0(x0)
        return self.solver.solve()

    def take_stats(self) -> dict:
        """Accumulated acados times (s) and iteration counts since the last call, then reset."""
        out = dict(zip(STAT_NAMES, self._acc.tolist()))
        out["sqp_iter"], out["qp_iter"] = int(out["sqp_iter"]), int(out["qp_iter"])
        self._acc[:] = 0.0
        return out

    def trajectory(self) -> tuple[np.ndarray, np.ndarray]:
        """Current iterate (copies): states (N+1, nx + 1, clock last) and controls (N, nu)."""
        return self.io.get()

    def iterate(self) -> tuple[np.ndarray, np.ndarray]:
        """The iterate last read, i.e. right after feedback() its result (views of the I/O
        buffers, overwritten by the next feedback(), trajectory() or shift()): states
        (N+1, nx + 1) and controls (N, nu)."""
        return self.io.xs, self.io.us


def timed(fn, *args):
    """(fn(*args), wall seconds)."""
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0
