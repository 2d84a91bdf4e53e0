"""The tutorial's hybrid method (seed 003): a guard checked every fixed step plus a jump map.

Each internal step of h seconds, as in the tutorial's loop:
1. guard: contacts with gap <= 0 at the start of the step are in contact;
2. jump map for them: positions are reset onto the surface (gap = 0; Gauss-Newton along
   M^-1 Jn^T, which for the point mass is the tutorial's z <- 0), velocities get a Newton
   impulse with restitution e (v_n <- -e v_n for approaching contacts, the tutorial's
   `v_after = -e v_before`; sticking contacts also lose their tangential velocity), chosen
   among the touching contacts by the impulse-velocity rule of `sim.hybrid.modes` so that
   no contact pulls; the reported force is impulse / h (the tutorial's F = m dv / dt);
3. the free (contact-less) dynamics are integrated with explicit Euler (the tutorial's
   `integrator_euler`), or semi-implicit Euler if asked.
Penetration up to one step of motion is inherent to the method (the guard fires after it).
"""
from __future__ import annotations

import numpy as np

from robots.model import RobotModel
from sim.hybrid.kernels import constraint_rows, contact_gaps, model_terms
from sim.hybrid.modes import Mode, Snapshot, select_impact_mode
from sim.invariants import DEFAULT_PENETRATION_LIMIT_M

from .common import FixedStepPlant, check_restitution


class HybridResetPlant(FixedStepPlant):
    """Fixed-step guard + jump map plant (plant protocol).

    Args:
        model: a planar RobotModel (e.g. get_robot("point_mass")).
        restitution: e in [0, 1] (the tutorial uses 0.7; 0 is plastic).
        dt_sim: internal step, s (tutorial: 0.001).
        integrator: "euler" (explicit, the tutorial's) or "semi_implicit".
        friction: "stick" (contacts with mu > 0 lose tangential velocity at a reset) or "none".
    """

    name = "hybrid-reset"

    def __init__(self, model: RobotModel, *, restitution: float = 0.0, dt_sim: float = 1e-3,
                 integrator: str = "euler", friction: str = "stick",
                 penetration_limit_m: float = DEFAULT_PENETRATION_LIMIT_M) -> None:
        super().__init__(model, dt_sim=dt_sim, penetration_limit_m=penetration_limit_m)
        self.restitution = check_restitution(f"{model.name} {self.name}", restitution)
        if integrator not in ("euler", "semi_implicit"):
            raise ValueError(f"{model.name} {self.name}: integrator must be 'euler' or 'semi_implicit', got {integrator!r}")
        if friction not in ("stick", "none"):
            raise ValueError(f"{model.name} {self.name}: friction must be 'stick' or 'none', got {friction!r}")
        self.integrator = integrator
        self.stick = np.array([c.mu > 0 and friction == "stick" for c in model.contacts], dtype=bool)

    def _substep(self, h: float) -> None:
        gaps = contact_gaps(self.addr, self.q, self.nc)
        C = Mode(int(i) for i in np.flatnonzero(gaps <= 0.0))
        self.flags = np.zeros(self.nc, dtype=bool)
        self.fn = np.zeros(self.nc)
        self.ft = np.zeros(self.nc)
        if C:
            self._jump(C, h)
        M, hv, *_ = model_terms(self.addr, self.q, self.v, self.nv, self.nc)
        a = np.linalg.solve(M, self._gen - hv)
        if self.integrator == "euler":
            self.q = self.q + h * self.v
            self.v = self.v + h * a
        else:
            self.v = self.v + h * a
            self.q = self.q + h * self.v

    def _jump(self, C: Mode, h: float) -> None:
        """Jump map for the touching contacts C: position reset, then restitution impulse."""
        idx = np.array(sorted(C), dtype=np.int64)
        kinds = np.zeros(idx.size, dtype=np.int64)
        for _ in range(5):  # position reset: gap_i = 0 for i in C
            M, _, Jn, Jt, an, at = model_terms(self.addr, self.q, np.zeros(self.nv), self.nv, self.nc)
            A, _ = constraint_rows(Jn, Jt, an, at, idx, kinds)
            r = contact_gaps(self.addr, self.q, self.nc)[idx]
            if np.abs(r).max() <= 1e-14:
                break
            MinvAT = np.linalg.solve(M, A.T)
            self.q = self.q - MinvAT @ np.linalg.lstsq(A @ MinvAT, r, rcond=None)[0]
        snap = Snapshot(self.addr, self.q, self.v, self._gen, self.stick, self.nv, self.nc, eps=0.0,
                        tol_p=1e-12 * (1.0 + float(np.abs(M @ self.v).max())), tol_f=1e-9 * self.weight)
        J = select_impact_mode(snap, C, self.restitution)
        imp = snap.impact(J, self.restitution)
        self.v = imp.v_plus
        self.fn = imp.P / h
        self.flags = np.array([i in C for i in range(self.nc)], dtype=bool)
        # tangential impulse of sticking rows, for the reported force
        rows = snap.rows(J)
        if rows.m and np.any(rows.k == 1):
            Mm, _, Jn2, Jt2, an2, at2 = snap.terms()
            A, _ = constraint_rows(Jn2, Jt2, an2, at2, rows.c, rows.k)
            P = np.linalg.lstsq(A.T, Mm @ (imp.v_plus - snap.v), rcond=None)[0]
            for r_, (c, k) in enumerate(zip(rows.c, rows.k)):
                if k == 1:
                    self.ft[c] = P[r_] / h
