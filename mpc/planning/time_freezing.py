"""The time-freezing reformulation of a complementarity Lagrangian system (seed 004, Sec. 3-4).

A planar CLS with one unilateral contact, inelastic impacts and Coulomb friction,

    q' = v,  M(q) v' = B u - h(q, v) + n(q) lambda_n + b(q) lambda_t,
    0 <= lambda_n  _|_  f_c(q) >= 0,   lambda_t in -mu lambda_n sign(b(q)^T v),
    n(q)^T v(t_s+) = 0 at an impact,

is turned into a piecewise smooth (Filippov) system in the numerical time tau with the extended
state y = (q, v, t, l): t is the clock (physical time), l the quadrature of the stage cost
(Eq. 29: it integrates only while the clock runs). Switching functions (Sec. 3.2, 4.3)

    c1 = f_c(q),  c2 = n(q)^T v,  c3 = b(q)^T v        (c3 only with friction),

regions (Eq. 25; R1 is a union, so it appears as two Step-representation rows with the
same vector field)

    R1a: c1 > 0                  f1 = (v, M^-1 (B u - h), 1, L(q, v, u))    unconstrained
    R1b: c1 < 0, c2 > 0          f1 (needed for sliding modes and contact breaking)
    R2 : c1 < 0, c2 < 0, c3 > 0  (0, M^-1 (n - mu b) a_n, 0, 0)             auxiliary
    R3 : c1 < 0, c2 < 0, c3 < 0  (0, M^-1 (n + mu b) a_n, 0, 0)             auxiliary

The auxiliary fields (Prop. 3 and Eq. 24 with a_t = mu a_n) freeze q, t and l and drive the
normal velocity to zero (the impact) while the tangential one is decelerated by friction
(direction opposite to sign(b^T v)); their sliding mode on Sigma = {c1 = 0, c2 = 0} is the
persistent-contact (slip or stick) dynamics slowed down by gamma (Thm. 4 and 7).
Without friction (mu = 0) there are two switching functions and one auxiliary region.

Units: SI (m, s, kg, N, N m); a_n in the units of a generalized force per unit
normal-direction mass (N/m per metre of gap gradient, i.e. like lambda_n).
"""
from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np

from robots.model import RobotModel


TANGENTS = ("geometric", "kinetic")  # friction directions time_freezing_system accepts


@dataclass(frozen=True, eq=False)
class ContactLagrangian:
    """A planar Lagrangian system with one unilateral frictional contact (the CLS of Eq. 20).

    Attributes:
        q, v, u: SX symbols: positions (nq), velocities (nq, v = dq/dt), inputs (nu).
        mass_matrix: SX (nq x nq), M(q), kg / kg m^2.
        bias: SX (nq), h(q, v) = Coriolis + gravity (+ passive), N / N m.
        actuation: SX or numeric (nq x nu), generalized force per input.
        gap: SX scalar f_c(q), m (> 0 apart).
        tangent_coordinate: SX scalar whose gradient is the contact tangent b(q) (e.g. the
            contact point's x), m; unused when mu == 0.
        mu: Coulomb friction coefficient (>= 0).
        name: used in messages.
    """

    q: ca.SX
    v: ca.SX
    u: ca.SX
    mass_matrix: ca.SX
    bias: ca.SX
    actuation: ca.SX
    gap: ca.SX
    tangent_coordinate: ca.SX
    mu: float
    name: str = "cls"

    def __post_init__(self) -> None:
        nq = self.q.numel()
        if self.v.numel() != nq:
            raise ValueError(f"{self.name}: v has {self.v.numel()} entries, q has {nq}; they must match (v = dq/dt)")
        if self.mass_matrix.shape != (nq, nq):
            raise ValueError(f"{self.name}: mass_matrix has shape {self.mass_matrix.shape}, expected ({nq}, {nq})")
        if self.bias.shape != (nq, 1):
            raise ValueError(f"{self.name}: bias has shape {self.bias.shape}, expected ({nq}, 1)")
        act = ca.SX(self.actuation)
        if act.shape != (nq, self.u.numel()):
            raise ValueError(f"{self.name}: actuation has shape {act.shape}, expected ({nq}, {self.u.numel()})")
        object.__setattr__(self, "actuation", act)
        if self.gap.numel() != 1 or self.tangent_coordinate.numel() != 1:
            raise ValueError(f"{self.name}: gap and tangent_coordinate must be scalar SX expressions of q")
        if not np.isfinite(self.mu) or self.mu < 0:
            raise ValueError(f"{self.name}: mu must be finite and >= 0, got {self.mu}")

    @property
    def nq(self) -> int:
        """Number of generalized coordinates."""
        return self.q.numel()

    @property
    def nu(self) -> int:
        """Number of inputs."""
        return self.u.numel()

    @classmethod
    def from_robot(cls, model: RobotModel, contact: int | str = 0) -> "ContactLagrangian":
        """The CLS of one contact of a `RobotModel` (its M, h, B, gap, contact x and mu).

        The robot's own SX expressions are reused; a fresh input symbol u (nu) is created.
        """
        names = [c.name for c in model.contacts]
        if isinstance(contact, str):
            if contact not in names:
                raise ValueError(f"{model.name}: no contact named {contact!r}; contacts are {names}")
            contact = names.index(contact)
        if not 0 <= contact < len(names):
            raise ValueError(f"{model.name}: contact index {contact} out of range; the robot has {len(names)} contacts")
        c = model.contacts[contact]
        u = ca.SX.sym("u", model.nu)
        return cls(
            q=model.q, v=model.v, u=u, mass_matrix=model.mass_matrix, bias=model.bias,
            actuation=ca.SX(model.B), gap=c.gap, tangent_coordinate=c.point[0], mu=float(c.mu),
            name=f"{model.name}:{c.name}",
        )

    def in_coordinates(self, q_new: ca.SX, q_of_new: ca.SX, v_new: ca.SX | None = None,
                       name: str | None = None) -> "ContactLagrangian":
        """The same system in other generalized coordinates q_new, where q = q_of_new(q_new).

        With T = dq/dq_new (so v = T v_new): M' = T^T M T, h' = T^T (h + M T' v_new) with
        T' v_new = d(T v_new)/dq_new v_new, B' = T^T B; the gap and the tangent coordinate are
        substituted. u is kept. Units follow the new coordinates.
        """
        nq = self.nq
        if q_new.numel() != nq or q_of_new.numel() != nq:
            raise ValueError(f"{self.name}: q_new and q_of_new need {nq} entries, got {q_new.numel()} and {q_of_new.numel()}")
        v_new = ca.SX.sym("v_new", nq) if v_new is None else v_new
        T = ca.jacobian(q_of_new, q_new)
        v = T @ v_new
        dT_v = ca.jacobian(v, q_new) @ v_new

        def sub(expr):
            return ca.substitute(ca.substitute(ca.SX(expr), self.v, v), self.q, q_of_new)

        M = sub(self.mass_matrix)
        return ContactLagrangian(
            q=q_new, v=v_new, u=self.u, mass_matrix=T.T @ M @ T,
            bias=T.T @ (sub(self.bias) + M @ dT_v), actuation=T.T @ sub(self.actuation),
            gap=sub(self.gap), tangent_coordinate=sub(self.tangent_coordinate), mu=self.mu,
            name=name or f"{self.name} (new coordinates)",
        )


@dataclass(frozen=True, eq=False)
class TimeFreezingSystem:
    """The time-freezing PSS of a `ContactLagrangian`, ready for the Step representation of FESD.

    Attributes:
        cls: the underlying contact Lagrangian system.
        x: SX state (q, v, t, l): nq + nq + 2 entries.
        u: SX input (same symbol as cls.u).
        t: SX clock (an entry of x); ell: SX cost quadrature (an entry of x).
        F: SX (nx x nrows): one column per Step-representation row of S.
        c: SX switching functions (2 without friction, 3 with).
        S: numpy sign matrix (nrows x nc): +1 means c_j > 0, -1 means c_j < 0, 0 not used.
        a_n: auxiliary dynamics constant (Prop. 3).
        aux_columns: indices of the columns of F that are auxiliary (frozen-time) fields.
        functions: named CasADi Functions (gap, normal velocity, tangential velocity, D, phi,
            friction_coupling = mu |n^T M^-1 b_g| / n^T M^-1 n of the ground tangent b_g) of (x)
            or (x, u) for checks and post-processing.
    """

    cls: ContactLagrangian
    x: ca.SX
    u: ca.SX
    t: ca.SX
    ell: ca.SX
    F: ca.SX
    c: ca.SX
    S: np.ndarray
    a_n: float
    aux_columns: tuple[int, ...]
    functions: dict

    @property
    def nx(self) -> int:
        """Number of states of the time-freezing system (2 nq + 2)."""
        return self.x.numel()

    @property
    def index_t(self) -> int:
        """Index of the clock in x."""
        return 2 * self.cls.nq

    @property
    def index_ell(self) -> int:
        """Index of the cost quadrature in x."""
        return 2 * self.cls.nq + 1


def time_freezing_system(cls: ContactLagrangian, *, a_n: float, stage_cost: ca.SX | None = None,
                         gap_scale: float = 1.0, tangent: str = "geometric") -> TimeFreezingSystem:
    """Build the time-freezing PSS (Def. 2 / Def. 6 of seed 004) of a one-contact CLS.

    Args:
        cls: the complementarity Lagrangian system.
        a_n: auxiliary dynamics constant (> 0); larger means shorter frozen intervals and less
            slow-down gamma in contact (Thm. 4), but stiffer dynamics.
        stage_cost: SX scalar L(q, v, u) integrated in *physical* time into the quadrature state
            (Eq. 29); zero if None.
        gap_scale: c1 = gap_scale * f_c(q), 1/s. Only the sign of c matters to the PSS, but the
            relaxed complementarities of FESD weigh c, so a gap in metres (~0.1) next to
            velocities in m/s (~1) leaves the contact Step variable nearly free at a given
            sigma; gap_scale ~ 1 / (typical gap) evens them out.
        tangent: the friction direction b(q). "geometric" (default): the gradient b_g of the
            contact's tangent coordinate, i.e. Coulomb friction along the ground, the robot's
            own physics. "kinetic": b_g made orthogonal to n in the kinetic metric,
            b = b_g - (n^T M^-1 b_g / n^T M^-1 n) n, as Sec. 4.1 of the paper assumes
            (b^T M^-1 n = 0): both auxiliary fields then change n^T v at the rate
            a_n n^T M^-1 n > 0, whereas with b_g one of them stops only at rate
            a_n (n^T M^-1 n - mu |n^T M^-1 b_g|), which is <= 0 for some hopper poses (a
            Painleve-type impact; see functions["friction_coupling"]). The price is a tilted
            friction cone (the contact force n lambda_n + b lambda_t has normal part
            lambda_n - k lambda_t). On the contact manifold (n^T v = 0) both give the same c3,
            the contact point's tangential velocity.
    """
    if tangent not in TANGENTS:
        raise ValueError(f"tangent must be one of {TANGENTS}, got {tangent!r}")
    if not np.isfinite(a_n) or a_n <= 0:
        raise ValueError(f"a_n must be a finite positive number (auxiliary dynamics constant), got {a_n}")
    if not np.isfinite(gap_scale) or gap_scale <= 0:
        raise ValueError(f"gap_scale must be a finite positive number, got {gap_scale}")
    q, v, u = cls.q, cls.v, cls.u
    nq = cls.nq
    t = ca.SX.sym("t")
    ell = ca.SX.sym("ell")
    x = ca.vertcat(q, v, t, ell)
    L = ca.SX(0) if stage_cost is None else ca.SX(stage_cost)
    if L.numel() != 1:
        raise ValueError(f"stage_cost must be a scalar SX expression, got shape {L.shape}")
    for s in ca.symvar(L):
        if not (ca.depends_on(q, s) or ca.depends_on(v, s) or ca.depends_on(u, s)):
            raise ValueError(f"stage_cost depends on {s}, which is not one of q, v, u; express it in those symbols")

    n = ca.gradient(cls.gap, q)  # normal direction in generalized coordinates
    M = cls.mass_matrix
    tau = cls.actuation @ u - cls.bias
    zeros_q = ca.SX.zeros(nq, 1)
    # One symbolic solve for every right-hand side that needs M^-1.
    if cls.mu > 0:
        b = ca.gradient(cls.tangent_coordinate, q)
        sol = ca.solve(M, ca.horzcat(tau, n, b))
        acc, Minv_n, Minv_b = sol[:, 0], sol[:, 1], sol[:, 2]
        k = ca.dot(n, Minv_b) / ca.dot(n, Minv_n)  # n^T M^-1 b_g / n^T M^-1 n
        # mu |k| >= 1: a frictional impact along the ground tangent cannot stop the normal
        # velocity in one sliding direction (Painleve-type)
        coupling = cls.mu * ca.fabs(k)
        if tangent == "kinetic":
            b, Minv_b = b - k * n, Minv_b - k * Minv_n
    else:
        b = ca.SX.zeros(nq, 1)
        sol = ca.solve(M, ca.horzcat(tau, n))
        acc, Minv_n, Minv_b = sol[:, 0], sol[:, 1], ca.SX.zeros(nq, 1)
        coupling = ca.SX(0)

    f_ode = ca.vertcat(v, acc, 1, L)
    c1 = gap_scale * cls.gap
    c2 = ca.dot(n, v)
    if cls.mu > 0:
        c3 = ca.dot(b, v)
        # c3 > 0: sliding forward, friction impulse along -b; c3 < 0: along +b.
        f_aux_fwd = ca.vertcat(zeros_q, a_n * (Minv_n - cls.mu * Minv_b), 0, 0)
        f_aux_bwd = ca.vertcat(zeros_q, a_n * (Minv_n + cls.mu * Minv_b), 0, 0)
        F = ca.horzcat(f_ode, f_ode, f_aux_fwd, f_aux_bwd)
        c = ca.vertcat(c1, c2, c3)
        S = np.array([[1, 0, 0], [-1, 1, 0], [-1, -1, 1], [-1, -1, -1]], dtype=float)
        aux = (2, 3)
    else:
        c3 = ca.SX(0)
        f_aux = ca.vertcat(zeros_q, a_n * Minv_n, 0, 0)
        F = ca.horzcat(f_ode, f_ode, f_aux)
        c = ca.vertcat(c1, c2)
        S = np.array([[1, 0], [-1, 1], [-1, -1]], dtype=float)
        aux = (2,)

    D = ca.dot(n, Minv_n)  # Delassus scalar n^T M^-1 n
    # phi = d/dt (n^T v) along the unconstrained dynamics (Eq. 11b): contact persists if <= 0.
    phi = ca.jacobian(c2, q) @ v + ca.dot(n, acc)
    xs = [x]
    functions = {
        "gap": ca.Function("gap", xs, [cls.gap], ["x"], ["f_c"]),
        "normal_velocity": ca.Function("normal_velocity", xs, [c2], ["x"], ["vn"]),
        "tangential_velocity": ca.Function("tangential_velocity", xs, [c3], ["x"], ["vt"]),
        "delassus": ca.Function("delassus", xs, [D], ["x"], ["D"]),
        "friction_coupling": ca.Function("friction_coupling", xs, [coupling], ["x"], ["ratio"]),
        "phi": ca.Function("phi", [x, u], [phi], ["x", "u"], ["phi"]),
        "switching": ca.Function("switching", xs, [c], ["x"], ["c"]),
        "F": ca.Function("F", [x, u], [F], ["x", "u"], ["F"]),
    }
    return TimeFreezingSystem(cls=cls, x=x, u=u, t=t, ell=ell, F=F, c=c, S=S, a_n=float(a_n),
                              aux_columns=aux, functions=functions)


def dense_regions(system: TimeFreezingSystem) -> tuple[ca.SX, np.ndarray, tuple[int, ...]]:
    """The same PSS with one region per sign pattern of c (for Stewart's representation).

    Returns (F, S, aux_columns): S has all 2^nc sign rows (no zeros), so each row is one orthant
    and Stewart's indicator -S c picks the orthant of c; F repeats the field of the region
    (Eq. 25) that contains that orthant.
    """
    nc = system.S.shape[1]
    rows, cols, aux = [], [], []
    for k in range(2 ** nc):
        signs = np.array([1.0 if (k >> (nc - 1 - j)) & 1 == 0 else -1.0 for j in range(nc)])
        for i, row in enumerate(system.S):
            if all(r == 0 or r == sg for r, sg in zip(row, signs)):
                break
        else:  # pragma: no cover - the rows of S cover every orthant by construction
            raise RuntimeError(f"sign pattern {signs} is in no region of S")
        if i in system.aux_columns:
            aux.append(len(rows))
        rows.append(signs)
        cols.append(system.F[:, i])
    return ca.horzcat(*cols), np.array(rows), tuple(aux)


def lifted_step_field(system: TimeFreezingSystem) -> tuple[ca.SX, ca.SX, ca.SX, ca.SX]:
    """The Step-representation field with its products lifted (nosnoc-MATLAB's pss_lift_step_functions).

    In the rows of S the two "clock runs" fields are the same f_ode, so with
    beta = (1 - alpha_1)(1 - alpha_2) (the weight of "in contact and approaching") the field is

        f = (1 - beta) f_ode + beta (alpha_3 f_aux,fwd + (1 - alpha_3) f_aux,bwd)

    (without friction the bracket is the single auxiliary field). beta is an algebraic
    variable with the equation g_z = beta - (1 - alpha_1)(1 - alpha_2) = 0, so the field is
    bilinear in (alpha, beta) instead of a triple product. Same solutions, less curvature.
    Returns (alpha, beta, f_x, g_z) as SX; alpha and beta are fresh symbols (dimensionless).
    """
    nc = system.S.shape[1]
    alpha = ca.SX.sym("alpha", nc)
    beta = ca.SX.sym("beta")
    F = system.F
    if nc == 3:
        aux = alpha[2] * F[:, 2] + (1 - alpha[2]) * F[:, 3]
    elif nc == 2:
        aux = F[:, 2]
    else:  # pragma: no cover - time_freezing_system builds only these two shapes
        raise ValueError(f"expected 2 or 3 switching functions, got {nc}")
    f_x = (1 - beta) * F[:, 0] + beta * aux
    g_z = beta - (1 - alpha[0]) * (1 - alpha[1])
    return alpha, beta, f_x, g_z


def step_multipliers(S: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Filippov multipliers theta (one per row of S) from Step values alpha in [0, 1] (Eq. 32).

    theta_i = prod_j over S_ij != 0 of (alpha_j if S_ij > 0 else 1 - alpha_j); dimensionless.
    """
    alpha = np.asarray(alpha, dtype=float)
    theta = np.ones(S.shape[0])
    for i, row in enumerate(S):
        for j, sij in enumerate(row):
            if sij > 0:
                theta[i] *= alpha[j]
            elif sij < 0:
                theta[i] *= 1.0 - alpha[j]
    return theta
