"""The tutorial's smooth (penalty) contact method (seed 003): a spring-damper force acting always.

Normal force of contact i with gap phi and gap rate dphi (the whole step loop is one numba
kernel over the robot's generated C functions):
- law "tanh" (the tutorial's `get_grf`): c = amp / (2 k), d = c (1 - tanh(sharpness phi)),
  fn = k d - b dphi d. Tutorial constants: k = 0.01, b = 0.1, amp = 1500 N, sharpness = 100 /m.
  The force never vanishes: the mass rests where fn = its weight, above the ground.
- law "linear": fn = max(0, -k phi - b dphi) while phi < 0 (Hunt-Crossley-free Kelvin-Voigt),
  with each contact's own stiffness and damping from the robot model.
Tangential force (contacts with mu > 0): regularized Coulomb, ft = -mu fn tanh(vt / v_slip).
Integrator: explicit Euler as in the tutorial, or semi-implicit (symplectic) Euler, which is
stable for stiffer springs at the same step.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from robots.model import RobotModel
from sim.hybrid.kernels import contact_gaps, model_terms
from sim.invariants import DEFAULT_PENETRATION_LIMIT_M

from .common import FixedStepPlant, check_positive

TUTORIAL_TANH = {"k": 0.01, "b": 0.1, "amp": 1500.0, "sharpness": 100.0}


@njit(cache=True)
def penalty_forces(addr, q, v, law, k, b, amp, sharpness, mu, v_slip, nv, nc):
    """Normal and tangential penalty forces (nc each, N) and the generalized contact force (nv)."""
    M, hv, Jn, Jt, an, at = model_terms(addr, q, v, nv, nc)
    gaps = contact_gaps(addr, q, nc)
    fn = np.zeros(nc)
    ft = np.zeros(nc)
    gen = np.zeros(nv)
    for i in range(nc):
        dphi = Jn[i] @ v
        if law == 0:
            c = amp * 0.5 / k[i]
            d = c * (1.0 - np.tanh(sharpness * gaps[i]))
            fn[i] = k[i] * d - b[i] * dphi * d
        elif gaps[i] < 0.0:
            fn[i] = max(0.0, -k[i] * gaps[i] - b[i] * dphi)
        if mu[i] > 0.0 and fn[i] > 0.0:
            ft[i] = -mu[i] * fn[i] * np.tanh((Jt[i] @ v) / v_slip)
        gen += Jn[i] * fn[i] + Jt[i] * ft[i]
    return M, hv, fn, ft, gen


@njit(cache=True)
def penalty_step(addr, q, v, h, semi_implicit, law, k, b, amp, sharpness, mu, v_slip, gen_applied, nv, nc):
    """One explicit / semi-implicit Euler step of h seconds; returns q, v, fn, ft."""
    M, hv, fn, ft, gen = penalty_forces(addr, q, v, law, k, b, amp, sharpness, mu, v_slip, nv, nc)
    a = np.linalg.solve(M, gen_applied - hv + gen)
    if semi_implicit:
        v2 = v + h * a
        return q + h * v2, v2, fn, ft
    return q + h * v, v + h * a, fn, ft


class PenaltyPlant(FixedStepPlant):
    """Penalty-contact plant (plant protocol).

    Args:
        model: a planar RobotModel.
        law: "tanh" (the tutorial's law, constants in `tanh`) or "linear" (the model's contact
            stiffness/damping, N/m and N s/m).
        dt_sim: internal step, s (tutorial: 0.001).
        integrator: "euler" (tutorial) or "semi_implicit".
        tanh: overrides of TUTORIAL_TANH (k, b, amp in N, sharpness in 1/m).
        v_slip: velocity scale of the regularized friction, m/s.
        contact_threshold: a contact counts as "in contact" when fn exceeds this fraction of the
            robot's weight (for the transition count and PlantState.contact).
    """

    name = "penalty"

    def __init__(self, model: RobotModel, *, law: str = "tanh", dt_sim: float = 1e-3, integrator: str = "euler",
                 tanh: dict | None = None, v_slip: float = 1e-3, contact_threshold: float = 1e-3,
                 penetration_limit_m: float = DEFAULT_PENETRATION_LIMIT_M) -> None:
        super().__init__(model, dt_sim=dt_sim, penetration_limit_m=penetration_limit_m)
        owner = f"{model.name} {self.name}"
        if law not in ("tanh", "linear"):
            raise ValueError(f"{owner}: law must be 'tanh' or 'linear', got {law!r}")
        if integrator not in ("euler", "semi_implicit"):
            raise ValueError(f"{owner}: integrator must be 'euler' or 'semi_implicit', got {integrator!r}")
        self.law, self.integrator = law, integrator
        p = {**TUTORIAL_TANH, **(tanh or {})}
        unknown = set(p) - set(TUTORIAL_TANH)
        if unknown:
            raise ValueError(f"{owner}: unknown tanh-law parameters {sorted(unknown)}")
        for key, value in p.items():
            check_positive(owner, f"tanh {key}", value, allow_zero=(key == "b"))
        self.tanh_params = p
        self.v_slip = check_positive(owner, "v_slip", v_slip)
        self.threshold = check_positive(owner, "contact_threshold", contact_threshold, allow_zero=True) * self.weight
        cs = model.contacts
        if law == "tanh":
            self.k = np.full(self.nc, p["k"])
            self.b = np.full(self.nc, p["b"])
        else:
            self.k = np.array([c.stiffness for c in cs], dtype=float)
            self.b = np.array([c.damping for c in cs], dtype=float)
            missing = [c.name for c in cs if c.stiffness <= 0]
            if missing:
                raise ValueError(f"{owner}: contacts {missing} have no stiffness for the linear law")
        self.mu = np.array([c.mu for c in cs], dtype=float)

    def _substep(self, h: float) -> None:
        p = self.tanh_params
        self.q, self.v, self.fn, self.ft = penalty_step(
            self.addr, self.q, self.v, h, self.integrator == "semi_implicit", 0 if self.law == "tanh" else 1,
            self.k, self.b, p["amp"], p["sharpness"], self.mu, self.v_slip, self._gen, self.nv, self.nc)
        self.flags = self.fn > self.threshold
