"""A minimal acados OCP (a double integrator steered to the origin), used to prove that the
acados toolchain works end to end: generate, compile with gcc, load, solve with SQP-RTI/HPIPM."""
from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np

from .runtime import acados_template, cached_ocp_solver


@dataclass(frozen=True)
class SmokeResult:
    """Outcome of `solve_double_integrator`: first control (N), final state, status, timing (s)."""

    u0: float
    x_final: np.ndarray
    status: int
    sqp_iters: int
    time_tot_s: float
    built_now: bool


def set_horizon(ocp, n_stages: int) -> None:
    """Set the number of shooting intervals on either acados API generation (dims.N or N_horizon)."""
    if hasattr(ocp.solver_options, "N_horizon"):
        ocp.solver_options.N_horizon = n_stages
    else:
        ocp.dims.N = n_stages


def double_integrator_ocp(n_stages: int = 20, dt: float = 0.1, u_max: float = 1.0):
    """AcadosOcp: x = (position m, velocity m/s), u = acceleration (m/s^2, |u| <= u_max),
    discrete dynamics, least-squares cost on x and u, SQP-RTI with HPIPM."""
    tpl = acados_template()
    model = tpl.AcadosModel()
    model.name = "smoke_double_integrator"
    x = ca.SX.sym("x", 2)
    u = ca.SX.sym("u", 1)
    model.x, model.u = x, u
    model.disc_dyn_expr = ca.vertcat(x[0] + dt * x[1] + 0.5 * dt**2 * u, x[1] + dt * u)
    model.cost_y_expr = ca.vertcat(x, u)
    model.cost_y_expr_e = x
    ocp = tpl.AcadosOcp()
    ocp.model = model
    set_horizon(ocp, n_stages)
    ocp.solver_options.tf = n_stages * dt
    ocp.cost.cost_type = "NONLINEAR_LS"
    ocp.cost.cost_type_e = "NONLINEAR_LS"
    ocp.cost.W = np.diag([10.0, 1.0, 0.1])
    ocp.cost.W_e = np.diag([100.0, 10.0])
    ocp.cost.yref = np.zeros(3)
    ocp.cost.yref_e = np.zeros(2)
    ocp.constraints.x0 = np.array([1.0, 0.0])
    ocp.constraints.lbu = np.array([-u_max])
    ocp.constraints.ubu = np.array([u_max])
    ocp.constraints.idxbu = np.array([0])
    ocp.solver_options.integrator_type = "DISCRETE"
    ocp.solver_options.nlp_solver_type = "SQP_RTI"
    ocp.solver_options.qp_solver = "PARTIAL_CONDENSING_HPIPM"
    ocp.solver_options.hessian_approx = "GAUSS_NEWTON"
    return ocp


def solve_double_integrator(x0=(1.0, 0.0), *, rti_iterations: int = 10, cache_dir=None, verbose=True) -> SmokeResult:
    """Build (or load) the smoke solver, run `rti_iterations` RTI steps from x0, return the result."""
    solver = cached_ocp_solver(double_integrator_ocp(), cache_dir=cache_dir, verbose=verbose)
    x0 = np.asarray(x0, dtype=float)
    solver.set(0, "lbx", x0)
    solver.set(0, "ubx", x0)
    status, time_tot = 0, 0.0
    for _ in range(rti_iterations):
        status = solver.solve()
        time_tot += float(np.ravel(solver.get_stats("time_tot"))[0])
    return SmokeResult(
        u0=float(solver.get(0, "u")[0]),
        x_final=np.array(solver.get(solver.N, "x")),
        status=int(status),
        sqp_iters=rti_iterations,
        time_tot_s=time_tot,
        built_now=solver.legmpc_built_now,
    )
