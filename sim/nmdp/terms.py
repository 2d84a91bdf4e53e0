"""The NMDP contact model and backward-Euler residual, symbolic (CasADi) and compiled to C.

Contact model (seed 002, Remark 4). Contact i has depth d_i(q) = -phi_i(q) (m) and a force
polytope: the linearised friction cone scaled by a smooth, saturating capacity,

    cap_i(q) = F_i S(d_i(q) / delta_i)  (N),   S(x) = 0 (x <= 0), 3 x^2 - 2 x^3 (0 < x < 1), 1 (x >= 1),

the convex hull of 0 and E vertices cap_i (n + mu_i t_e). The paper weights the vertices,
f_i = cap_i sum_e alpha_ie (n + mu_i t_e) with alpha_i >= 0, sum_e alpha_ie <= 1. Here the
unknowns are the weighted sums themselves, lam_i = sum_e alpha_ie (1, mu_i t_e): the contact's
force as a fraction of its capacity, f_i = cap_i (lam_in n + lam_it t), one number per force
direction (2 planar, 3 in 3D) instead of one per vertex (2 planar, E = 8 in 3D). The feasible
set is the same polytope, written by its faces (`sim.nmdp.kernel._solve_qp`):

    0 <= lam_in <= 1,   u_e . lam_it <= mu_i cos(pi / E) lam_in  (e = 0 .. E - 1),

u_e the unit normal of polygon edge e in the ground plane. Planar robots: E = 2 vertices
n +- mu t, faces |lam_it| <= mu_i lam_in. 3D robots: E = EDGES_3D vertices at angles
a_e = theta_i + pi + 2 pi e / E, turned so that vertex 0 opposes the foot's tangential velocity
at the start of the step (theta_i = its direction, 0 when it is below SLIP_EPS): a sliding foot
then gets Coulomb's friction exactly opposite its motion, as with a cone, and a sticking foot
a polygon whose inscribed radius is cos(pi / E) of the cone's (0.92 for E = 8). theta depends
on the step's start (q, v) only, so it is a constant of the step. On go1 standing the QP over
lam has 12 unknowns where the vertex weights would be 32, and its metric is regular where
theirs is singular on the 20 weight combinations that give no force (docs/NMDP.md).

So 0 <= fn_i <= cap_i and |ft_i| <= mu_i fn_i. S is C1, so the forces are differentiable in
q (assumption A V.3 of the paper). F_i is the force limit (N) and delta_i the depth over which
the capacity builds up; the stiffness k_i = 1.5 F_i / delta_i (N/m) is the steepest slope of
cap_i. The capacity saturates on purpose: with an unbounded one (k times depth), maximal
dissipation at large steps "buys" friction by sinking a loaded foot deeper within one step
(measured: 16-40 mm penetrations of the trotting quadruped at 20 ms; docs/NMDP.md).
In generalized coordinates f_i acts through the columns of W(q) (nv x D nc, D = 1 + the
tangent directions): W[:, D i + k] = cap_i J_ik^T for the normal (k = 0) and tangent rows of
contact i's Jacobian, so the generalized contact force is W(q) lam.

Backward-Euler step of length dt from (q, v) to v1, q1 = q (+) dt v1 (`RobotModel.integrate`:
q + dt v1 for planar robots; velocity form of the paper's (q_next - 2 q + q_prev) / dt^2, so
that steps may change size), residual in N s:

    R(v1; lam) = M(q1) (v1 - v) + dt [h(q1, v1) - B tau(q1, v1) - W(q1) lam],
    tau = clip(tau_ff + kp (q_des - q1_j) + kd (v_des - v1_j), -u_max, u_max),

i.e. the joint impedance law evaluated at the end of the step (a stable PD). Its Jacobian
K = dR/dv1 is exact for first-order PGM; `Kzo` drops the derivative of the capacity with
respect to q (zeroth-order PGM keeps J(q)'s own derivative, which is robot kinematics, not
contact model).

Generated functions (flat C, inputs concatenated, outputs row-major):
- nmdp_implicit(q, v, v1, lam, dt, cmd[5 nu], cp[3 nc]) -> R, K, 0, W(q1), cap(q1), theta (nc), and
  nmdp_implicit_zo -> R, 0, Kzo, W(q1), cap(q1), theta (the zeroth-order method's)
- nmdp_residual(q, v, v1, lam, dt, cmd, cp) -> R, cap(q1): the residual alone
- nmdp_explicit(q, v, cp) -> M(q), h(q, v), W(q), cap(q), theta (nc)
- nmdp_integrate(q, v1, dt) -> q1
- nmdp_mass(q) -> M(q): the PGM objective's metric (nmdp_explicit without h, W, cap, theta)
with cp = [F (nc), delta (nc), mu (nc)] (mu enters the QP's faces, not these functions). The
explicit one serves the linearised MDP baseline.
"""
from __future__ import annotations

from pathlib import Path

import casadi as ca
import numpy as np

from robots.codegen import CompiledLibrary, compile_functions
from robots.model import RobotModel


def smoothstep(x: ca.SX) -> ca.SX:
    """S(x): 0 for x <= 0, 3 x^2 - 2 x^3 on (0, 1), 1 for x >= 1 (C1, dimensionless)."""
    return ca.if_else(x <= 0, 0, ca.if_else(x < 1, x * x * (3 - 2 * x), 1))


EDGES_3D = 8  # friction polygon vertices (and faces) per contact of a 3D robot (module docstring)
SLIP_EPS = 1e-6  # m/s: below this tangential speed the pyramid keeps its default orientation


def n_faces(model: RobotModel) -> int:
    """Friction faces per contact of the force polytope: 2 (planar) or EDGES_3D."""
    return 2 if model.n_tangent == 1 else EDGES_3D


def n_force(model: RobotModel) -> int:
    """Force unknowns per contact, D: the normal and the tangent directions (2 planar, 3 in 3D)."""
    return 1 + model.n_tangent


def slip_angles(model: RobotModel, q: ca.SX, v: ca.SX) -> ca.SX:
    """theta (nc, rad): the direction of each foot's tangential velocity at (q, v) in the ground
    plane (0 below SLIP_EPS, and for planar robots)."""
    if model.n_tangent == 1:
        return ca.SX.zeros(model.nc)
    vt = ca.substitute(ca.substitute(model.tangent_jacobian(), model.q, q), model.v, v) @ v
    out = []
    for i in range(model.nc):
        vx, vy = vt[2 * i], vt[2 * i + 1]
        out.append(ca.if_else(vx * vx + vy * vy > SLIP_EPS ** 2, ca.atan2(vy, vx), 0.0))
    return ca.vertcat(*out)


def force_matrix(model: RobotModel, q: ca.SX, force: ca.SX, delta: ca.SX,
                 cap_override: ca.SX | None = None) -> tuple[ca.SX, ca.SX]:
    """(W, cap) at q: the generalized directions of the contact forces, scaled by the
    capacities (nv x D nc: cap_i times the transposed normal and tangent rows of contact i's
    Jacobian, N per unit of lam), and the capacities (nc, N).

    With `cap_override` the capacities are that symbol (used to drop their q-derivatives).
    """
    phi = ca.substitute(model.contact_gaps(), model.q, q)
    jn = ca.substitute(model.normal_jacobian(), model.q, q)
    jt = ca.substitute(model.tangent_jacobian(), model.q, q)
    cap = ca.vertcat(*[force[i] * smoothstep(-phi[i] / delta[i]) for i in range(model.nc)])
    c = cap if cap_override is None else cap_override
    nt = model.n_tangent
    cols = []
    for i in range(model.nc):
        cols.append(c[i] * jn[i, :].T)
        for k in range(nt):
            cols.append(c[i] * jt[nt * i + k, :].T)
    return ca.horzcat(*cols), cap


def joint_torque(model: RobotModel, q1: ca.SX, v1: ca.SX, cmd: ca.SX) -> ca.SX:
    """Clipped joint impedance torques (nu, N m) at (q1, v1) for cmd = [tau_ff, q_des, v_des, kp, kd]."""
    from sim.protocol import actuated_joints, actuated_positions

    nu = model.nu
    tau_ff, q_des, v_des = cmd[0:nu], cmd[nu:2 * nu], cmd[2 * nu:3 * nu]
    kp, kd = cmd[3 * nu:4 * nu], cmd[4 * nu:5 * nu]
    qj = ca.vertcat(*[q1[int(j)] for j in actuated_positions(model)]) if nu else ca.SX(0, 1)
    vj = ca.vertcat(*[v1[int(j)] for j in actuated_joints(model)]) if nu else ca.SX(0, 1)
    tau = tau_ff + kp * (q_des - qj) + kd * (v_des - vj)
    umax = ca.DM(np.where(np.isfinite(model.u_max), model.u_max, 1e300))
    return ca.fmin(ca.fmax(tau, -umax), umax)


def nmdp_functions(model: RobotModel) -> list[ca.Function]:
    """The CasADi Functions of the module docstring for `model`."""
    nv, nu, nc = model.nv, model.nu, model.nc
    q, v = model.q, model.v
    v1 = ca.SX.sym("v1", nv)
    lam = ca.SX.sym("lam", n_force(model) * nc)
    dt = ca.SX.sym("dt")
    cmd = ca.SX.sym("cmd", 5 * nu)
    cp = ca.SX.sym("cp", 3 * nc)
    force, delta = cp[0:nc], cp[nc:2 * nc]
    B = ca.DM(model.B)

    q1 = model.integrate(q, v1, dt)
    theta = slip_angles(model, q, v)  # the friction polygons' orientations (the QP's faces)
    M1 = ca.substitute(model.mass_matrix, q, q1)
    h1 = ca.substitute(ca.substitute(model.bias, q, q1), v, v1)
    tau1 = joint_torque(model, q1, v1, cmd)
    W1, cap1 = force_matrix(model, q1, force, delta)
    R = M1 @ (v1 - v) + dt * (h1 - B @ tau1 - W1 @ lam)
    K = ca.jacobian(R, v1)
    frozen = ca.SX.sym("cap_frozen", nc)
    W1f, _ = force_matrix(model, q1, force, delta, cap_override=frozen)
    Rf = M1 @ (v1 - v) + dt * (h1 - B @ tau1 - W1f @ lam)
    Kzo = ca.substitute(ca.jacobian(Rf, v1), frozen, cap1)
    # one function per method, the same output layout: each computes only the Jacobian its method
    # uses (the other slot is zeros); both Jacobians in one function cost 1.4x per Newton iteration
    zeros = ca.SX.zeros(nv, nv)
    names_in, names_out = ["q", "v", "v1", "lam", "dt", "cmd", "cp"], ["R", "K", "Kzo", "W", "cap", "theta"]
    implicit = ca.Function("nmdp_implicit", [q, v, v1, lam, dt, cmd, cp], [R, K, zeros, W1, cap1, theta],
                           names_in, names_out)
    implicit_zo = ca.Function("nmdp_implicit_zo", [q, v, v1, lam, dt, cmd, cp], [R, zeros, Kzo, W1, cap1, theta],
                              names_in, names_out)

    # the residual alone (R and the capacities): the projection's convergence checks and chord
    # steps, a fifth of the cost of a Jacobian's evaluation
    residual = ca.Function("nmdp_residual", [q, v, v1, lam, dt, cmd, cp], [R, cap1], names_in, ["R", "cap"])

    W0, cap0 = force_matrix(model, q, force, delta)
    explicit = ca.Function("nmdp_explicit", [q, v, cp], [model.mass_matrix, model.bias, W0, cap0, theta],
                           ["q", "v", "cp"], ["M", "h", "W", "cap", "theta"])
    step = ca.Function("nmdp_integrate", [q, v1, dt], [q1], ["q", "v1", "dt"], ["q1"])
    mass = ca.Function("nmdp_mass", [q], [model.mass_matrix], ["q"], ["M"])  # PGM's metric needs M alone
    return [implicit, implicit_zo, residual, explicit, step, mass]


def nmdp_library(model: RobotModel, cache_dir: Path | str | None = None, verbose: bool = True) -> CompiledLibrary:
    """Compile (once per content hash) and load the model's NMDP functions."""
    return compile_functions(nmdp_functions(model), lib_name=f"{model.name}-nmdp", cache_dir=cache_dir,
                             verbose=verbose)
