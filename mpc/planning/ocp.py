"""A pure description of a time-freezing OCP (seed 004, Eq. 27 / 33 / 35) and the planner options.

The description holds no solver state: build it, hand it to `mpc.planning.solve.solve_plan`.
Physical horizon T equals the numerical horizon T~ (Example 5 and Sec. 6 of the paper); the
speed-of-time s_k in [1, s_max] per control interval and the clock constraints t_k = k T / N
make the control grid equidistant in physical time and give t(T~) = T.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import casadi as ca
import numpy as np

from .time_freezing import TimeFreezingSystem


_IPOPT_LINEAR_SOLVERS = ("mumps", "spral", "ma27", "ma57", "ma77", "ma86", "ma97", "pardiso", "pardisomkl", "wsmp")


@dataclass(frozen=True)
class PlannerOptions:
    """How the OCP is discretized (FESD) and solved (homotopy + IPOPT).

    Attributes:
        n_s: Radau IIA stages per finite element (order 2 n_s - 1).
        n_fe: finite elements per control interval (their lengths are free: switch detection).
        sigma_0: first complementarity relaxation (Scholtes: products <= sigma).
        homotopy_slope: sigma_{k+1} = slope * sigma_k (or superlinear, see below).
        superlinear: use sigma_{k+1} = min(slope sigma_k, sigma_k^1.5).
        comp_tol: stop the homotopy when the complementarity residual is below this.
        max_homotopy: maximum number of NLPs in the homotopy.
        s_max: upper bound of the speed-of-time variables (dimensionless, >= 1).
        s_min: lower bound of the speed-of-time variables. The paper writes 1 <= s_k (Eq. 35g),
            but the clock constraints already imply s_k >= 1 (t' = s theta_1 with theta_1 <= 1
            must average 1 over each interval), so the bound is redundant; at s_k = 1 in flight
            it is active together with the clock equality, which breaks LICQ and stalls IPOPT.
            A lower value (default 0.5) leaves the solution set unchanged and the NLP regular.
        gamma_h: finite element length may vary in [(1 - gamma_h) h0, (1 + gamma_h) h0].
        h_max: if set, the upper bound of every finite element length in units of h0 (the
            nominal length, interval / n_fe), replacing 1 + gamma_h; at most n_fe (a whole
            interval). An interval whose active set changes twice holds three phases; if two
            of them are short, the third needs more than 2 h0 (docs/history/PLANNING-sessions.md,
            session 12).
        rho_h: weight of the step-equilibration penalty (FESD heuristic), 1/s^2.
        step_equilibration: "delta" (h_k vs h_(k-1) in the same interval), "mean" (h_k vs h0)
            or "relaxed" (delta, switched off where the complementarity indicator says a switch
            happens: FESD's L2_RELAXED_SCALED).
        ipopt_max_iter: IPOPT iterations per NLP.
        ipopt_tol: IPOPT tolerance (None: comp_tol / 100, nosnoc's rule).
        linear_solver: IPOPT linear solver ("mumps" and "spral" ship with casadi; the HSL ones,
            e.g. "ma57" as in the paper, need an HSL library IPOPT can load).
        path_at_every_stage: evaluate path constraints at every Radau stage point (else
            only at the ends of control intervals, nosnoc's default).
        heartbeat_s: seconds between progress messages during one NLP (0: only per NLP).
        rho_alpha: weight of sum (alpha - 1/2)^2 over all Step variables. On Sigma (foot on the
            ground, c1 = c2 = 0) only the product (1 - alpha1)(1 - alpha2) is determined by the
            dynamics, a one-dimensional family of solutions that makes the NLP degenerate; the
            small penalty picks one member and leaves determined alphas (forced to 0 or 1 by the
            complementarity) unchanged as sigma -> 0. Step representation only.
        clock_switch_sigma: while sigma is above this, impose only t(T~) = T (plus the penalty
            rho_sot sum (s_k - 1)^2), then every t_k = k T / N; None: stagewise from the start.
        rho_sot: weight of the speed-of-time penalty in the terminal-clock phase.
        init: "x0" (the paper: y0 at every node, controls zero) or "interpolate" (positions on
            the straight line from q0 to the OCP's q_end_guess, constant velocity, clock = tau;
            still no contact information).
        ipopt_extra: further IPOPT options as ((name, value), ...).
        first_nlp_max_iter: stop the first NLP (sigma_0, the loosest relaxation) after this many
            IPOPT iterations (None: ipopt_max_iter). Its solution only starts the homotopy, and on
            the hopper and the particle it is by far the slowest NLP (hundreds of iterations
            wandering with a huge dual infeasibility before any progress).
        mpcc: "scholtes" (products <= sigma, the paper's homotopy) or "elastic" (products <=
            s_e with s_e / sigma added to the cost: every relaxed NLP stays feasible).
        pss: "step" (the paper's Eq. 31-32: alpha in [0, 1] per switching function, theta as
            products) or "stewart" (one theta per orthant of c, dynamics linear in theta).
        lift_step: with pss="step", write the field with one lifted product
            beta = (1 - alpha_1)(1 - alpha_2) as an algebraic variable (see
            time_freezing.lifted_step_field) instead of nosnoc's triple products (the authors'
            MATLAB default, pss_lift_step_functions). Same solution; Example 5 solves 1.8-2.6x
            faster (docs/PLANNING.md). Ignored with pss="stewart" (linear in theta already).
        alpha_init: initial guess of every Step variable alpha (nosnoc-py uses 1/2, nosnoc-MATLAB
            1). At 1 the initial field is f_ode alone; at 1/2 a quarter of the stiff auxiliary
            field is mixed in, a large defect at the trivial initial guess.
        polish_below: after every NLP whose complementarity residual is at most this, try the
            active-set polish (`active_set.py`: fix the zero side of every complementarity
            pair as the relaxed solution shows it and solve that smooth NLP once); if IPOPT
            solves it, the homotopy ends there with every product exactly zero. None: never.
            Step representation only.
        polish_c_eps: |c| below which a switching function counts as zero in the polish
            classification (units of c: m, m/s).
        polish_rounds: polish attempts per call (1: the exact active set once). With more, a
            failed round leaves the control intervals with violated constraint rows relaxed
            (sigma shrinking), the rest fixed, and tries the exact set again from there
            (`solve._polish`).
        polish_violation: constraint violation above which a row counts as violated when
            choosing the intervals to relax (units of the row).
        stop_on_failure: end the homotopy at the first NLP that IPOPT does not solve (for
            warm-started continuation steps, where a failed NLP means the step was too long).
    """

    n_s: int = 3
    n_fe: int = 3
    sigma_0: float = 1.0
    homotopy_slope: float = 0.1
    superlinear: bool = True
    comp_tol: float = 1e-7
    max_homotopy: int = 12
    s_max: float = 10.0
    s_min: float = 0.5
    gamma_h: float = 1.0
    h_max: float | None = None
    rho_h: float = 1.0
    step_equilibration: str = "delta"
    ipopt_max_iter: int = 3000
    ipopt_tol: float | None = None
    linear_solver: str = "mumps"
    path_at_every_stage: bool = True
    heartbeat_s: float = 15.0
    pss: str = "step"
    mpcc: str = "scholtes"
    init: str = "x0"
    ipopt_extra: tuple = ()
    first_nlp_max_iter: int | None = None
    clock_switch_sigma: float | None = None
    rho_sot: float = 0.01
    rho_alpha: float = 0.0
    lift_step: bool = True
    alpha_init: float = 0.5
    polish_below: float | None = None
    polish_c_eps: float = 3e-3
    polish_rounds: int = 1
    polish_violation: float = 1e-6
    stop_on_failure: bool = False

    def __post_init__(self) -> None:
        if self.n_s < 1 or self.n_fe < 1:
            raise ValueError(f"n_s and n_fe must be >= 1, got n_s={self.n_s}, n_fe={self.n_fe}")
        if not 0 < self.homotopy_slope < 1:
            raise ValueError(f"homotopy_slope must be in (0, 1), got {self.homotopy_slope}")
        if self.sigma_0 <= 0 or self.comp_tol <= 0:
            raise ValueError(f"sigma_0 and comp_tol must be > 0, got {self.sigma_0}, {self.comp_tol}")
        if self.s_max < 1:
            raise ValueError(f"s_max must be >= 1 (speed of time can only catch up), got {self.s_max}")
        if not 0 < self.s_min <= 1:
            raise ValueError(f"s_min must be in (0, 1], got {self.s_min}")
        if not 0 <= self.gamma_h <= 1:
            raise ValueError(f"gamma_h must be in [0, 1], got {self.gamma_h}")
        if self.h_max is not None and not 1 <= self.h_max <= self.n_fe:
            raise ValueError(f"h_max must be in [1, n_fe = {self.n_fe}] (units of the nominal element length) "
                             f"or None, got {self.h_max}")
        if self.linear_solver not in _IPOPT_LINEAR_SOLVERS:
            raise ValueError(f"linear_solver must be one of {_IPOPT_LINEAR_SOLVERS} (IPOPT's names), "
                             f"got {self.linear_solver!r}")
        if self.mpcc not in ("scholtes", "elastic"):
            raise ValueError(f"mpcc must be 'scholtes' or 'elastic', got {self.mpcc!r}")
        if self.step_equilibration not in ("delta", "mean", "relaxed"):
            raise ValueError(f"step_equilibration must be 'delta', 'mean' or 'relaxed', got {self.step_equilibration!r}")
        if self.init not in ("x0", "interpolate"):
            raise ValueError(f"init must be 'x0' or 'interpolate', got {self.init!r}")
        if self.pss not in ("step", "stewart"):
            raise ValueError(f"pss must be 'step' or 'stewart', got {self.pss!r}")
        if not 0 <= self.alpha_init <= 1:
            raise ValueError(f"alpha_init must be in [0, 1], got {self.alpha_init}")
        if self.polish_below is not None and (self.polish_below <= 0 or self.pss != "step"):
            raise ValueError(f"polish_below must be > 0 (or None) and needs pss='step', got {self.polish_below} "
                             f"with pss={self.pss!r}")
        if self.polish_c_eps <= 0:
            raise ValueError(f"polish_c_eps must be > 0, got {self.polish_c_eps}")
        if self.polish_rounds < 1 or self.polish_violation <= 0:
            raise ValueError(f"polish_rounds must be >= 1 and polish_violation > 0, got {self.polish_rounds} "
                             f"and {self.polish_violation}")
        if self.first_nlp_max_iter is not None and self.first_nlp_max_iter < 1:
            raise ValueError(f"first_nlp_max_iter must be >= 1 or None, got {self.first_nlp_max_iter}")
        if self.max_homotopy < 1 or self.ipopt_max_iter < 1:
            raise ValueError("max_homotopy and ipopt_max_iter must be >= 1")


@dataclass(frozen=True, eq=False)
class TimeFreezingOcp:
    """min l(T) (the physical-time integral of the stage cost) subject to the time-freezing system.

    Attributes:
        system: the time-freezing PSS (its quadrature state carries the stage cost).
        q0, v0: initial configuration and velocity (at rest: v0 = 0), SI units.
        horizon: physical horizon T, s (also the numerical horizon).
        n_intervals: number N of control intervals (piecewise-constant u and s).
        u_lb, u_ub: input bounds (nu), N or N m.
        q_lb, q_ub, v_lb, v_ub: box bounds on q and v (nq each; +-inf for none).
        path: SX path constraints g(q, v, u) with bounds path_lb <= g <= path_ub.
        path_names: one label per row of `path`, for messages.
        terminal: SX equality constraints r(q, v) = 0 at the end.
        u_guess: initial guess of every control (nu); zero by default (trivial guess).
        q_end_guess: where the straight-line initial guess ends (options.init == "interpolate").
        name: scenario name, used in messages and files.
        to_robot: CasADi Function (q, v) -> (q_robot, v_robot) when the system is written in
            other coordinates than the robot's (`ContactLagrangian.in_coordinates`); the plan is
            reported in robot coordinates. None: the same coordinates.
    """

    system: TimeFreezingSystem
    q0: np.ndarray
    v0: np.ndarray
    horizon: float
    n_intervals: int
    u_lb: np.ndarray
    u_ub: np.ndarray
    q_lb: np.ndarray | None = None
    q_ub: np.ndarray | None = None
    v_lb: np.ndarray | None = None
    v_ub: np.ndarray | None = None
    path: ca.SX = field(default_factory=lambda: ca.SX(0, 1))
    path_lb: np.ndarray = field(default_factory=lambda: np.zeros(0))
    path_ub: np.ndarray = field(default_factory=lambda: np.zeros(0))
    path_names: tuple[str, ...] = ()
    terminal: ca.SX = field(default_factory=lambda: ca.SX(0, 1))
    u_guess: np.ndarray | None = None
    q_end_guess: np.ndarray | None = None
    name: str = "ocp"
    to_robot: ca.Function | None = None

    def __post_init__(self) -> None:
        nq, nu = self.system.cls.nq, self.system.cls.nu
        for fname, size in (("q0", nq), ("v0", nq), ("u_lb", nu), ("u_ub", nu)):
            object.__setattr__(self, fname, _vector(self.name, fname, getattr(self, fname), size))
        for fname, size, fill in (("q_lb", nq, -np.inf), ("q_ub", nq, np.inf), ("v_lb", nq, -np.inf),
                                  ("v_ub", nq, np.inf), ("u_guess", nu, 0.0), ("q_end_guess", nq, np.nan)):
            value = getattr(self, fname)
            if value is None:
                arr = np.full(size, fill)
                arr.setflags(write=False)
            else:
                arr = _vector(self.name, fname, value, size, allow_inf=True)
            object.__setattr__(self, fname, arr)
        if not np.all(self.u_lb <= self.u_ub):
            raise ValueError(f"{self.name}: u_lb must be <= u_ub elementwise, got {self.u_lb} and {self.u_ub}")
        if not (np.isfinite(self.horizon) and self.horizon > 0):
            raise ValueError(f"{self.name}: horizon must be a positive number of seconds, got {self.horizon}")
        if int(self.n_intervals) != self.n_intervals or self.n_intervals < 1:
            raise ValueError(f"{self.name}: n_intervals must be a positive integer, got {self.n_intervals}")
        ng = self.path.numel()
        for fname in ("path_lb", "path_ub"):
            object.__setattr__(self, fname, _vector(self.name, fname, getattr(self, fname), ng, allow_inf=True))
        if self.path_names and len(self.path_names) != ng:
            raise ValueError(f"{self.name}: {len(self.path_names)} path_names for {ng} path constraints")
        allowed = ca.vertcat(self.system.cls.q, self.system.cls.v, self.system.u)
        for expr, what in ((self.path, "path"), (self.terminal, "terminal")):
            for s in ca.symvar(expr):
                if not ca.depends_on(allowed, s):
                    raise ValueError(f"{self.name}: {what} constraints depend on {s}; use the system's q, v, u symbols")
        if ca.depends_on(self.terminal, self.system.u):
            raise ValueError(f"{self.name}: terminal constraints must depend on q and v only")

    @property
    def dt(self) -> float:
        """Length of one control interval in physical time, s."""
        return self.horizon / self.n_intervals


def _vector(owner: str, name: str, value, size: int, *, allow_inf: bool = False) -> np.ndarray:
    arr = np.asarray(value, dtype=float).reshape(-1)
    if arr.shape != (size,):
        raise ValueError(f"{owner}: {name} has {arr.size} entries, expected {size}")
    bad = np.isnan(arr) if allow_inf else ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{owner}: {name} has non-finite entries at {np.flatnonzero(bad).tolist()}; pass finite numbers")
    arr.setflags(write=False)
    return arr
