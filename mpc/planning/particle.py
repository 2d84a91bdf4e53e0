"""The paper's guiding example (seed 004, Examples 1, 2, 5): a particle that lands on a table.

Point mass m = 1 kg in the x-z plane, gravity 9.81 m/s^2, a table at z = 0 with Coulomb
friction mu = 0.6 (Example 4; mu = 0 gives the frictionless Example 2), horizontal thrust u1
(|u1| <= 10 N), u2 = 0. From rest at (0, 1) it must be at (3, 0) with zero
velocity at t = 2 s, minimising the integral of u1^2; on the way it falls onto the table
(an inelastic impact: the vertical velocity jumps to zero) and then slides.
Example 5 discretizes with FESD Radau IIA order 3 (n_s = 2), N = 20, 3 finite elements per
interval; a_n = g as in Example 3 (then gamma = 1/2 in contact and s_k = 2 there). With friction
the optimum pushes hardest before the impact, where moving is cheap (no friction yet).
"""
from __future__ import annotations

import casadi as ca
import numpy as np

from .ocp import PlannerOptions, TimeFreezingOcp
from .time_freezing import ContactLagrangian, time_freezing_system

GRAVITY = 9.81  # m/s^2
MASS = 1.0  # kg
MU = 0.6  # Example 4


def particle_system(*, a_n: float = GRAVITY, mu: float = MU):
    """The time-freezing system of the particle on a table (Examples 2 and 4), cost L = u1^2."""
    q = ca.SX.sym("q", 2)
    v = ca.SX.sym("v", 2)
    u = ca.SX.sym("u", 1)
    cls = ContactLagrangian(
        q=q, v=v, u=u, mass_matrix=MASS * ca.SX.eye(2), bias=ca.vertcat(0, MASS * GRAVITY),
        actuation=ca.SX(np.array([[1.0], [0.0]])), gap=q[1], tangent_coordinate=q[0], mu=mu, name="particle",
    )
    return time_freezing_system(cls, a_n=a_n, stage_cost=u[0] ** 2)


def particle_ocp(*, horizon: float = 2.0, n_intervals: int = 20, u_max: float = 10.0,
                 a_n: float = GRAVITY, mu: float = MU) -> TimeFreezingOcp:
    """Example 5: reach q = (3, 0), v = 0 at t = horizon (s) from rest at (0, 1), |u1| <= u_max (N)."""
    system = particle_system(a_n=a_n, mu=mu)
    q, v = system.cls.q, system.cls.v
    return TimeFreezingOcp(
        system=system, q0=np.array([0.0, 1.0]), v0=np.zeros(2), horizon=horizon, n_intervals=n_intervals,
        u_lb=np.array([-u_max]), u_ub=np.array([u_max]),
        terminal=ca.vertcat(q - ca.DM([3.0, 0.0]), v), name="particle",
    )


def particle_options(**overrides) -> PlannerOptions:
    """Example 5's discretization: Radau IIA order 3 (n_s = 2), 3 finite elements per interval.

    The first NLP (sigma = 1) is cut at 100 iterations: solved fully it takes 1000+ iterations
    (70 s, Restoration_Failed) and the homotopy ends at the same optimum (cost 88.65).
    The cut NLP is sensitive: rho_h = 0.99999 instead of 1 lands on another optimum (72.6).
    """
    base = dict(n_s=2, n_fe=3, sigma_0=1.0, homotopy_slope=0.1, comp_tol=1e-9, max_homotopy=12,
                s_max=25.0, heartbeat_s=0.0, path_at_every_stage=False, ipopt_max_iter=1000,
                first_nlp_max_iter=100)
    base.update(overrides)
    return PlannerOptions(**base)
