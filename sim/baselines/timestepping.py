"""The tutorial's time-stepping method (seed 003): one relaxed complementarity problem per step,
solved with CasADi + IPOPT.

Semi-implicit Euler with contact impulses lam (N s) over a step h (the tutorial's scheme,
written for any planar robot with the model quantities frozen at the start of the step):

    M (v+ - v) = h (B tau - h(q, v)) + Jn^T lam_n + Jt^T (beta+ - beta-),   q+ = q + h v+
    gap+ = phi(q) + h Jn v+ >= 0,  lam_n >= 0,  lam_n_i gap+_i <= s
and, for contacts with mu > 0, the polyhedral (Stewart-Trinkle) friction with sliding speed gamma:
    gamma + Jt v+ >= 0, gamma - Jt v+ >= 0, mu lam_n - beta+ - beta- >= 0, beta+-, gamma >= 0,
    each product of complementary pairs <= s.
The tutorial's objective min s^2 with s >= 0 relaxes the complementarity; IPOPT then stops
with s ~ 1e-4 and contacts carry force across gaps of ~ s / lam (millimetres for a 10 kg body at
h = 1 ms). objective="s" (min s) is offered as a tighter variant (gaps ~ 1e-7 m). For the point mass
the linearised gap is exact and this is the tutorial's problem. The NLP is built once per
(nv, nc, friction) shape with the step's numbers as parameters; IPOPT is warm-started from the
previous step. The reported force is lam / h.
"""
from __future__ import annotations

import casadi as ca
import numpy as np

from robots.model import RobotModel
from sim.hybrid.kernels import contact_gaps, model_terms
from sim.invariants import DEFAULT_PENETRATION_LIMIT_M

from .common import FixedStepPlant, check_positive

_SOLVERS: dict = {}


def _build_solver(nv: int, nc: int, friction: np.ndarray, objective: str, tol: float, max_iter: int):
    """IPOPT solver of the step problem for a (nv, nc, friction mask) shape (memoized)."""
    key = (nv, nc, tuple(bool(f) for f in friction), objective, tol, max_iter)
    if key in _SOLVERS:
        return _SOLVERS[key]
    nf = int(np.count_nonzero(friction))
    fidx = [i for i in range(nc) if friction[i]]
    vp = ca.SX.sym("v_plus", nv)
    lam = ca.SX.sym("lam_n", nc)
    bp = ca.SX.sym("beta_p", nf)
    bm = ca.SX.sym("beta_m", nf)
    gam = ca.SX.sym("gamma", nf)
    s = ca.SX.sym("s")
    M = ca.SX.sym("M", nv, nv)
    rhs = ca.SX.sym("rhs", nv)  # M v + h (B tau - h)
    Jn = ca.SX.sym("Jn", nc, nv)
    Jt = ca.SX.sym("Jt", nc, nv)
    phi = ca.SX.sym("phi", nc)
    mu = ca.SX.sym("mu", nc)
    h = ca.SX.sym("h")
    Jtf = Jt[fidx, :] if nf else ca.SX(0, nv)
    dyn = M @ vp - rhs - Jn.T @ lam - (Jtf.T @ (bp - bm) if nf else 0)
    gap_next = phi + h * (Jn @ vp)
    g = [dyn, gap_next, s - lam * gap_next]
    lbg = [np.zeros(nv), np.zeros(nc), np.zeros(nc)]
    if nf:
        vt = Jtf @ vp
        cone = mu[fidx] * lam[fidx] - bp - bm
        g += [gam + vt, gam - vt, cone, s - bp * (gam + vt), s - bm * (gam - vt), s - gam * cone]
        lbg += [np.zeros(nf)] * 6
    x = ca.vertcat(vp, lam, bp, bm, gam, s)
    p = ca.vertcat(ca.vec(M), rhs, ca.vec(Jn), ca.vec(Jt), phi, mu, h)
    nlp = {"x": x, "p": p, "f": s**2 if objective == "s2" else s, "g": ca.vertcat(*g)}
    opts = {"print_time": 0, "ipopt.print_level": 0, "ipopt.sb": "yes", "ipopt.tol": tol,
            "ipopt.max_iter": max_iter}
    solver = ca.nlpsol("timestepping", "ipopt", nlp, opts)
    ng = int(sum(np.size(b) for b in lbg))
    lbx = np.concatenate([np.full(nv, -np.inf), np.zeros(nc + 3 * nf + 1)])
    out = (solver, lbx, np.full(x.numel(), np.inf), np.concatenate(lbg), np.concatenate(
        [np.zeros(nv), np.full(ng - nv, np.inf)]), nf)
    _SOLVERS[key] = out
    return out


class TimeSteppingPlant(FixedStepPlant):
    """Time-stepping complementarity plant (plant protocol), one IPOPT solve per internal step.

    Args:
        model: a planar RobotModel.
        dt_sim: internal step h, s (tutorial: 0.001).
        friction: "polyhedral" (contacts with mu > 0 get Coulomb friction) or "none".
        objective: "s2" (the tutorial's min s^2) or "s" (min s).
        tol, max_iter: IPOPT tolerance and iteration limit (tutorial: 1e-6, 500).
        contact_threshold: "in contact" when lam_n / h exceeds this fraction of the robot's weight.
    Attributes (beyond the base): stats["ipopt_failures"] counts steps whose solve did not
    report success (the returned iterate is used anyway, as the tutorial does).
    """

    name = "time-stepping"

    def __init__(self, model: RobotModel, *, dt_sim: float = 1e-3, friction: str = "polyhedral",
                 objective: str = "s2", tol: float = 1e-8, max_iter: int = 500, contact_threshold: float = 1e-3,
                 penetration_limit_m: float = DEFAULT_PENETRATION_LIMIT_M) -> None:
        super().__init__(model, dt_sim=dt_sim, penetration_limit_m=penetration_limit_m)
        owner = f"{model.name} {self.name}"
        if friction not in ("polyhedral", "none"):
            raise ValueError(f"{owner}: friction must be 'polyhedral' or 'none', got {friction!r}")
        if objective not in ("s2", "s"):
            raise ValueError(f"{owner}: objective must be 's2' or 's', got {objective!r}")
        self.tol = check_positive(owner, "tol", tol)
        if not isinstance(max_iter, int) or max_iter < 1:
            raise ValueError(f"{owner}: max_iter must be an integer >= 1, got {max_iter!r}")
        self.mu = np.array([c.mu for c in model.contacts], dtype=float)
        self.friction = (self.mu > 0) & (friction == "polyhedral")
        self.threshold = check_positive(owner, "contact_threshold", contact_threshold, allow_zero=True) * self.weight
        self._solver = _build_solver(self.nv, self.nc, self.friction, objective, self.tol, max_iter)

    def _reset_hook(self) -> None:
        self._x0 = None
        self.stats["ipopt_failures"] = 0

    def _substep(self, h: float) -> None:
        solver, lbx, ubx, lbg, ubg, nf = self._solver
        M, hv, Jn, Jt, _, _ = model_terms(self.addr, self.q, self.v, self.nv, self.nc)
        phi = contact_gaps(self.addr, self.q, self.nc)
        rhs = M @ self.v + h * (self._gen - hv)
        p = np.concatenate([M.ravel(order="F"), rhs, Jn.ravel(order="F"), Jt.ravel(order="F"), phi, self.mu, [h]])
        x0 = self._x0
        if x0 is None:
            x0 = np.concatenate([self.v, np.zeros(self.nc + 3 * nf + 1)])
        sol = solver(x0=x0, p=p, lbx=lbx, ubx=ubx, lbg=lbg, ubg=ubg)
        if not solver.stats()["success"]:
            self.stats["ipopt_failures"] += 1
        x = np.array(sol["x"]).ravel()
        self._x0 = x
        v_plus = x[: self.nv]
        lam = x[self.nv: self.nv + self.nc]
        self.fn = lam / h
        self.ft = np.zeros(self.nc)
        if nf:
            fidx = np.flatnonzero(self.friction)
            bp = x[self.nv + self.nc: self.nv + self.nc + nf]
            bm = x[self.nv + self.nc + nf: self.nv + self.nc + 2 * nf]
            self.ft[fidx] = (bp - bm) / h
        self.flags = self.fn > self.threshold
        self.v = v_plus
        self.q = self.q + h * v_plus
