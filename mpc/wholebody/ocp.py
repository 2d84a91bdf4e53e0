"""The contact-implicit optimal control problem, as a pure description (no solver).

One `ContactOcp` is built from a `RobotModel` and `OcpOptions`; the acados solver
(`mpc.acados.rti`) and the IPOPT solver (`mpc.ipopt_ocp`) both read their CasADi expressions
from it, so the two solve exactly the same problem.

Variables of stage k (h = options.dt seconds per stage)
    x = (q, v)                                    state, SI units
    u = (tau, and per contact: fn, ft+, ft-, gamma)
        tau    joint torques, N m (|tau| <= model.u_max)
        fn     normal contact force in units of the robot's weight (m g), >= 0
        ft+-   the two tangential force components (+x, -x), same unit, >= 0
        gamma  sliding-speed slack of maximal dissipation, m/s, >= 0
Dynamics: semi-implicit Euler with the contact forces held over the stage,
    v+ = v + h M(q)^-1 (B tau - h(q, v) + W (Jn^T fn + Jt^T (ft+ - ft-))),   q+ = q + h v+,
W = m g. Contact conditions at the next state (gap phi(q+), tangential speed vt = Jt(q+) v+):
    0 <= phi + c fn _|_ fn >= 0     (no penetration, force only at contact; c = W / k is the
                                     compliance of a contact with stiffness k, 0 if rigid, so
                                     that a compliant foot sinks by the spring's static deflection)
    0 <= gamma + vt _|_ ft+ >= 0    (maximal dissipation, planar: the force opposes sliding)
    0 <= gamma - vt _|_ ft- >= 0
    0 <= mu fn - ft+ - ft- _|_ gamma >= 0   (Coulomb cone; slides only on its boundary)
Each pair 0 <= a _|_ b >= 0 is relaxed to the smoothed equality
    FB_s(a, b) = a + b - sqrt(a^2 + b^2 + 2 s) = 0   <=>   a > 0, b > 0, a b = s,
(the Fischer-Burmeister function, smoothed): a relaxation that is differentiable everywhere,
so its linearization in a real-time iteration is never degenerate. s = sigma for the gap pair
and sigma_friction for the three friction pairs. The solvers soften these equalities with
slacks so that every QP stays feasible. No contact schedule appears anywhere: which stage is
in contact follows from the optimization.
"""
from __future__ import annotations

import casadi as ca
import numpy as np

from robots.model import RobotModel
from robots.mass_solve import block_solve, mass_matrix_pattern

from ..problem import OcpOptions, fischer_burmeister

CONTACT_VARS = ("fn", "ft_pos", "ft_neg", "gamma")
# the complementarity pairs (a, b) of each contact, in the order of `ContactOcp.pairs` (kind-major:
# pair k is kind k // nc of contact k % nc); a in m or m/s, b in weights (N / (m g)) or m/s
PAIR_NAMES = ("(gap + compliance fn) * fn", "(gamma + vt) * ft_pos", "(gamma - vt) * ft_neg",
              "(mu fn - ft_pos - ft_neg) * gamma")


class ContactOcp:
    """Symbolic pieces of the contact-implicit OCP for one robot (see module docstring).

    Attributes: model, options, nx, nu (total controls), n_tau, nc, x, u (SX symbols),
    x_next (SX expression of x, u), comp (SX, 4 nc smoothed complementarity residuals),
    products (SX, 4 nc pair products a*b), weight (m g, N), u_lb/u_ub (bounds), plus
    CasADi Functions `step(x, u) -> x+`, `residuals(x, u) -> comp`, `pairs(x, u) -> (a, b)`.
    """

    def __init__(self, model: RobotModel, options: OcpOptions = OcpOptions()):
        options.validate()
        if model.nc == 0:
            raise ValueError(f"robot {model.name!r} has no contacts: the contact-implicit OCP needs at least one")
        self.model, self.options = model, options
        nq, nv, nc, n_tau = model.nq, model.nv, model.nc, model.nu
        self.nx, self.nc, self.n_tau = nq + nv, nc, n_tau
        self.nu = n_tau + 4 * nc
        mass = float(ca.Function("m", [model.q], [model.mass_matrix])(model.q0)[1, 1]) if "z" in model.q_names else 1.0
        self.weight = mass * model.gravity
        x = ca.SX.sym("x", self.nx)
        u = ca.SX.sym("u", self.nu)
        q, v = x[:nq], x[nq:]
        tau = u[:n_tau]
        cvars = ca.reshape(u[n_tau:], 4, nc)  # column i: (fn, ft+, ft-, gamma) of contact i
        fn, ftp, ftn, gamma = (cvars[j, :].T for j in range(4))
        subs = lambda expr: ca.substitute(expr, ca.vertcat(model.q, model.v), ca.vertcat(q, v))  # noqa: E731
        M = subs(model.mass_matrix)
        hb = subs(model.bias)
        Jn = subs(model.normal_jacobian())
        Jt = subs(model.tangent_jacobian())
        rhs = model.B @ tau - hb + self.weight * (Jn.T @ fn + Jt.T @ (ftp - ftn))
        h = options.dt
        v_next = v + h * block_solve(M, rhs, mass_matrix_pattern(model))
        q_next = q + h * v_next
        x_next = ca.vertcat(q_next, v_next)
        at_next = lambda expr: ca.substitute(subs(expr), q, q_next)  # noqa: E731
        gap_next = at_next(model.contact_gaps())
        vt_next = at_next(model.tangent_jacobian()) @ v_next
        mu = np.array([c.mu for c in model.contacts])
        # compliant contacts (stiffness k > 0): the spring is compressed by W fn / k in stance
        compliance = np.array([self.weight / c.stiffness if c.stiffness > 0 else 0.0 for c in model.contacts])
        a = ca.vertcat(gap_next + compliance * fn, gamma + vt_next, gamma - vt_next, mu * fn - ftp - ftn)
        b = ca.vertcat(fn, ftp, ftn, gamma)
        s = np.concatenate([np.full(nc, options.sigma), np.full(3 * nc, options.sigma_friction)])
        self.x, self.u, self.x_next = x, u, x_next
        self.comp = fischer_burmeister(a, b, s)
        self.products = a * b
        self.n_comp = 4 * nc
        self.step = ca.Function("step", [x, u], [x_next], ["x", "u"], ["x_next"])
        self.residuals = ca.Function("residuals", [x, u], [self.comp], ["x", "u"], ["fb"])
        self.pairs = ca.Function("pairs", [x, u], [a, b], ["x", "u"], ["a", "b"])
        big = 1e3
        lb_c = np.zeros((4, nc))
        ub_c = np.vstack([np.full(nc, 20.0), np.full((2, nc), 20.0), np.full(nc, big)])
        self.u_lb = np.concatenate([-model.u_max, lb_c.T.ravel()])
        self.u_ub = np.concatenate([model.u_max, ub_c.T.ravel()])

    # -- index helpers -------------------------------------------------------------------
    def contact_index(self, contact: int, var: str) -> int:
        """Index in u of `var` (one of CONTACT_VARS) of contact number `contact`."""
        return self.n_tau + 4 * contact + CONTACT_VARS.index(var)

    @property
    def fn_columns(self) -> slice:
        """The columns of u holding the contacts' normal forces fn (weights), one per contact,
        as a slice (indexing with it is a view)."""
        return slice(self.n_tau, self.n_tau + len(CONTACT_VARS) * self.nc, len(CONTACT_VARS))

    def normal_forces(self, u: np.ndarray) -> np.ndarray:
        """Normal contact forces in N from control vector(s) u (..., nu) -> (..., nc)."""
        u = np.asarray(u)
        return self.weight * u[..., self.fn_columns]

    def complementarity_max(self, xs: np.ndarray, us: np.ndarray) -> float:
        """Largest violation of exact complementarity along a trajectory: max over stages and
        pairs of |min(a, b)| (m, m/s or weights; 0 means exactly complementary)."""
        worst = 0.0
        for k in range(us.shape[0]):
            a, b = (np.asarray(z).ravel() for z in self.pairs(xs[k], us[k]))
            worst = max(worst, float(np.max(np.abs(np.minimum(a, b)))))
        return worst
