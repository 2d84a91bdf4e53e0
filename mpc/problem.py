"""What every contact-implicit problem of the MPCs shares, and how the solvers read one.

A problem is a pure description (no solver): the planar whole-body `ContactOcp`
(mpc/wholebody/ocp.py) and the 3D single-rigid-body `CentroidalOcp` (mpc/centroidal/ocp.py)
both offer x, u (SX symbols), x_next, comp (the smoothed complementarity residuals, see
`fischer_burmeister`), n_comp, nx, nu, u_lb/u_ub, options (`OcpOptions`), model, and the CasADi
Functions step, residuals and pairs. A problem may add cost features (`cost_x`, `cost_u`) and
softened inequalities (`h`, `h_lb`, `h_ub`); `cost_features` and `soft_constraints` read them
with their defaults. The acados SQP-RTI solver (mpc/acados/rti.py) and the IPOPT solver
(mpc/ipopt_ocp.py) read a problem only through these, so they solve either problem unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np


@dataclass(frozen=True)
class OcpOptions:
    """Discretization and relaxation of the contact-implicit OCP.

    dt: stage length, s. n_stages: number of stages (horizon = n_stages * dt).
    sigma: gap/normal-force relaxation, m x weights (standing on one foot: gap = sigma m).
    sigma_friction: relaxation of the friction pairs, (m/s) x weights.
    """

    dt: float = 0.01
    n_stages: int = 30
    sigma: float = 1e-4
    sigma_friction: float = 1e-3

    def validate(self) -> "OcpOptions":
        """Raise ValueError naming the bad field and the fix; return self."""
        if not (np.isfinite(self.dt) and self.dt > 0):
            raise ValueError(f"OcpOptions.dt must be a positive stage length in s, got {self.dt}")
        if not (isinstance(self.n_stages, (int, np.integer)) and self.n_stages >= 1):
            raise ValueError(f"OcpOptions.n_stages (the horizon) must be an integer >= 1, got {self.n_stages!r}")
        for name in ("sigma", "sigma_friction"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"OcpOptions.{name} must be > 0 (it is the complementarity relaxation), got {value}")
        return self


def fischer_burmeister(a: ca.SX, b: ca.SX, s: float | ca.SX) -> ca.SX:
    """Smoothed Fischer-Burmeister function a + b - sqrt(a^2 + b^2 + 2 s); zero iff a, b > 0, a b = s."""
    return a + b - ca.sqrt(a * a + b * b + 2 * s)


def cost_features(problem) -> tuple[ca.SX, ca.SX]:
    """The expressions (of x, of u) the least-squares cost compares with the reference: the
    problem's `cost_x`, `cost_u` if it defines them (the 3D MPC's heading-invariant features),
    else x and u themselves."""
    return getattr(problem, "cost_x", problem.x), getattr(problem, "cost_u", problem.u)


def soft_constraints(problem) -> tuple[ca.SX, np.ndarray, np.ndarray]:
    """(h, lower, upper): every softened stage constraint of a problem. The smoothed
    complementarity residuals (bounds 0, 0), plus the problem's own `h`, `h_lb`, `h_ub` if it
    defines them (the 3D MPC's reach boxes and foot lift rule)."""
    if hasattr(problem, "h"):
        return problem.h, np.asarray(problem.h_lb, float), np.asarray(problem.h_ub, float)
    return problem.comp, np.zeros(problem.n_comp), np.zeros(problem.n_comp)


def robot_options(model, controller: str, option_class, options: dict, *, label: str = "") -> dict:
    """The options a controller is built with, as a dict of `option_class` fields: the robot's
    `controller_defaults[controller]` (its data), then `options` (the scenario's) over them.
    Unknown keys in either raise ValueError naming where they came from and the valid ones."""
    from dataclasses import fields

    valid = {f.name for f in fields(option_class)}
    defaults = dict(model.controller_defaults.get(controller, {})) if model is not None else {}
    name = getattr(model, "name", "")
    for given, source in ((defaults, f"{name}'s controller_defaults['{controller}']"), (options, "the scenario")):
        bad = set(given) - valid
        if bad:
            import difflib

            close = [m for b in sorted(bad) for m in difflib.get_close_matches(b, sorted(valid), n=1)]
            hint = f"did you mean {', '.join(map(repr, close))}? " if close else ""
            raise ValueError(f"unknown {controller} options {sorted(bad)}{label} (from {source}); "
                             f"{hint}valid: {sorted(valid)}")
    return {**defaults, **options}
