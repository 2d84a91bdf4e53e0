"""ESS vector field, events and plant for robots with compliant contacts.

Contact model (per contact i, gap phi_i, normal velocity vn_i = Jn_i v, tangential vt_i):
- stance force fn_i = -k_i phi_i - b_i vn_i (spring-damper), ft_i = -mu_i fn_i tanh(vt_i / v_s);
- two guards per contact: touchdown and liftoff. liftoff="force" (default): h_lo = -fn =
  k phi + b vn (crossed when the force would turn tensile: a clamped Kelvin-Voigt contact, no
  adhesion), and h_td = -phi while the foot approaches (vn <= 0), -(phi + b vn / k) = fn / k
  while it separates (vn > 0): crossed when the gap closes, or when the spring-damper force
  turns compressive again below ground. Damping releases a rebounding foot *below* ground
  (phi < 0, moving up); a touchdown guard of -phi alone would then already be past zero, could
  never cross again and the robot fell through the floor. With this h_td a contact
  in flight below ground always has a tensile spring-damper force and re-touches as soon as
  it pushes. liftoff="gap": h_lo = phi and h_td = -phi, as in the paper's plate model (the
  force may turn tensile, sticky, until the gap opens). The reset matrix re-arms each
  contact's other guard; a re-armed guard must first leave its eps-band (hysteresis), or it is
  crossed where it reaches zero (located exactly).
- stance = touchdown crossed and liftoff not crossed (from the integrator's sign vector).

Friction: Coulomb's law regularised by tanh(vt / v_s), vt the slip velocity of the body's
material point at the contact (`RobotModel.slip_jacobian`: a rolling sphere foot does not
slip). It is smooth inside each contact mode, so it adds no events, and ESS's assumptions
(vector field selected by the signs of event functions, liveness at each guard) hold. A body
inside its friction cone creeps at v_s atanh(ft / (mu fn)); the default v_s = 2e-4 m/s
(`SLIP_SPEED`) keeps that under 0.4 mm/s up to 95 % of the cone (`bench incline`). The law is
stiff (slope mu fn / v_s) and bends sharply at |vt| ~ v_s; the Rosenbrock-W methods take it
implicitly, with W's friction terms the law's secant slope (`_friction_3d`) and W rebuilt when
a contact starts or stops sticking (`_stick_flags`), so a tick of a standing robot stays one
step. dopri5 is bound by it (pass a larger slip_speed to use dopri5 on robots).
Where liveness can fail: a foot grazing the ground (vn -> 0 inside the band) or a force that
reaches zero with zero rate. The plant then *locates* that guard's crossing exactly
(on_violation="locate") instead of projecting, so it never stops; the count is in `stats`.

The joint impedance law tau = clip(tau_ff + kp (q_des - q_j) + kd (v_des - v_j), +-u_max) is
evaluated continuously inside f (the limit of a fast servo loop), command held over a step.

The whole vector field (impedance torques, contact forces, and the accelerations: by the
articulated-body algorithm for a 3D robot, `RobotModel.forward_dynamics`, else M^-1 by the
tree's block solve) is one CasADi function generated to C (`vector_field`); the integrator's
numba kernel calls it by address, so no Python runs inside a step.
"""
from __future__ import annotations

from pathlib import Path

import casadi as ca
import numpy as np
from numba import njit

from robots import ccall
from robots.ccall import call_flat
from robots.codegen import compile_functions
from robots.mass_solve import block_solve, mass_matrix_pattern
from robots.model import RobotModel

from .. import command_check, invariants as _invariants
from ..command_check import fields_ok
from ..invariants import DEFAULT_PENETRATION_LIMIT_M, Invariants, LatchedViolation, _first_failure
from ..protocol import (JointCommand, PlantState, actuated_joints, actuated_positions, checked_reset, pack_command,
                        packed_commands_ok)
from . import kernel as K
from . import static_call
from .static_call import static
from .integrator import EssIntegrationError, EssSystem, GuardState, LivenessError

# No fastmath: with reassociation and contraction (FMA) the rounding of these loops depended on
# how numba inlined them, which differs between a fresh compile and code loaded from its cache, so
# one scenario gave two trajectories (a go1 trot 3 mm apart after 4 s, the chaos of contact
# events growing the rounding) depending on the cache's state; without it they are bit-identical,
# for ~4 % of an ESS step (test_ess_results_do_not_depend_on_numbas_cache)
HEADER = 9  # p = [nq, nv, nu, nc, slip_speed, liftoff_force, w_reuse, nt, floating, k(nc), b(nc), mu(nc),
#               joint(nu), u_max(nu), command(5 nu)]; nt tangent rows per contact (1 planar, 2 in 3D),
#               floating 1 for a floating base (q = (position, quaternion, joints), dq/dt = G(q) v)
# ctx = (addr, fin, fout, bt, bc, bg, gen, W, piv, memo):
#   addr: C function pointers (ess_rhs, ess_terms, ess_contact, ess_dJnv, ess_out)
#   fin, fout: ess_rhs's input (x, stance flags, command, slip speed) and output (xdot, phi, vn,
#     force (nc x 2), tau) from its last call; bt, bc, bg: outputs of the other three
#   gen (nv), W (4 x nv x nv: M, K, D, factor), piv (nv): ROS23's and ROS21's W and its LU factor
#   memo: [what fout holds (FOUT_*, below), then robot_wprep's bookkeeping (see there)]
C_RHS, C_TERMS, C_CONTACT, C_DJNV, C_OUT = 0, 1, 2, 3, 4


def friction_force(mu: float, fn, vt, vs):
    """The regularised Coulomb force (N) on a contact sliding at vt (1 or 2 tangent velocities,
    m/s) under normal force fn: -mu fn tanh(vt / vs) in the plane; in 3D the isotropic
    -mu fn tanh(|vt| / vs) vt / |vt| (smooth at vt = 0: tanh(r) / r -> 1 - r^2 / 3)."""
    if vt.numel() == 1:
        return -mu * fn * ca.tanh(vt / vs)
    r = ca.sqrt(ca.sumsqr(vt)) / vs
    ratio = ca.if_else(r < 1e-4, 1.0 - r * r / 3.0, ca.tanh(r) / (r + 1e-300))
    return -mu * fn * ratio * vt / vs


def vector_field(model: RobotModel) -> ca.Function:
    """The plant's whole vector field as one CasADi function, generated to C:

    ess_rhs(x, s, u, vs) -> (xdot, phi, vn, force, tau), with x = (q, v), s the stance flags
    (nc, 1 in stance, 0 in flight), u the held command (tau_ff, q_des, v_des, kp, kd; 5 nu),
    vs the friction law's slip speed (m/s). tau = clip(tau_ff + kp (q_des - q_j) + kd (v_des - v_j),
    +-u_max) (N m); per contact in stance fn = -k phi - b vn, ft = `friction_force` (N), zero
    in flight; dv/dt = M^-1 (B tau - h + sum Jn^T fn + Jt^T ft) by the tree's block solve, or
    by `RobotModel.forward_dynamics` (the same, each foot's force at its touching point), and
    dq/dt = G(q) v (v itself for planar robots). Outputs: xdot (n), the gaps phi (nc, m) and
    normal velocities vn (nc, m/s) for the event functions, force (nc x (1 + nt): normal, then
    tangential along x (and y)) and tau (nu) for the plant's outputs."""
    q, v = model.q, model.v
    nu, nc, nt = model.nu, model.nc, model.n_tangent
    joints, joints_q = actuated_joints(model), actuated_positions(model)
    s = ca.SX.sym("s", nc)
    u = ca.SX.sym("u", 5 * nu)
    vs = ca.SX.sym("vs")
    tau_ff, q_des, v_des, kp, kd = (u[k * nu:(k + 1) * nu] for k in range(5))
    tau = ca.SX(0, 1)
    for a, (j, jq) in enumerate(zip(joints, joints_q)):
        raw = tau_ff[a] + kp[a] * (q_des[a] - q[int(jq)]) + kd[a] * (v_des[a] - v[int(j)])
        umax = model.u_max[a]
        tau = ca.vertcat(tau, ca.fmin(ca.fmax(raw, -umax), umax) if np.isfinite(umax) else raw)
    phi = model.contact_gaps()
    aba = model.forward_dynamics is not None
    if aba:  # the touching points' velocities themselves, no Jacobians formed; the normal one is the gap's
        # rate (a sphere's lowest point moves vertically with its centre: omega x (0, 0, -r) has no z part)
        touching = [model.touching_velocity(c) for c in model.contacts]
        vt = ca.vertcat(*[w[:nt] for w in touching]) if nc else ca.SX(0, 1)
        vn = ca.vertcat(*[w[nt] for w in touching]) if nc else ca.SX(0, 1)
    else:
        Jn, Jt = model.normal_jacobian(), model.slip_jacobian()
        vn, vt = Jn @ v, Jt @ v
    force, pairs = ca.SX(nc, 1 + nt), []
    for i, c in enumerate(model.contacts):
        fn = ca.if_else(s[i] > 0.5, -c.stiffness * phi[i] - c.damping * vn[i], 0.0)
        ft = friction_force(c.mu, fn, vt[nt * i:nt * (i + 1)], vs) if c.mu > 0 else ca.SX.zeros(nt)
        force[i, 0] = fn
        force[i, 1:] = ft.T
        pairs.append((fn, ft))
    tau_gen = model.B @ tau if nu else ca.SX.zeros(model.nv)
    if aba:  # each contact's world force (x, y, z: tangential, then normal) at its touching point
        dv = model.forward_dynamics(tau_gen - model.passive, [ca.vertcat(ft, fn) for fn, ft in pairs])
    else:
        gen = tau_gen - model.bias
        for i, (fn, ft) in enumerate(pairs):
            gen = gen + Jn[i, :].T * fn + Jt[nt * i:nt * (i + 1), :].T @ ft
        dv = block_solve(model.mass_matrix, gen, mass_matrix_pattern(model))
    qdot = model.velocity_map @ v if model.floating_base else v
    return ca.Function("ess_rhs", [ca.vertcat(q, v), s, u, vs], [ca.vertcat(qdot, dv), phi, vn, force, tau],
                       ["x", "s", "u", "vs"], ["xdot", "phi", "vn", "force", "tau"])


def _lib(model: RobotModel, cache_dir=None, verbose: bool = True):
    """Compile the C functions the ESS plant needs from the model's expressions: the vector field
    (every f), the plant's outputs, the dynamics terms (W's rebuilds), the contact gaps and
    Jacobians (events)."""
    q, v = model.q, model.v
    M = model.mass_matrix
    phi, Jn, Jt = model.contact_gaps(), model.normal_jacobian(), model.slip_jacobian()
    rhs = vector_field(model)
    point = rhs.sx_in()
    fns = [
        rhs,
        # the plant's outputs alone (no mass matrix: ~1/5 of ess_rhs's instructions), for a tick
        # that does not end with an ess_rhs evaluation (ROS21)
        ca.Function("ess_out", point, rhs.call(point)[1:], rhs.name_in(), rhs.name_out()[1:]),
        # W's rebuild needs no bias h (a quarter of the instructions): M and the contact terms
        ca.Function("ess_terms", [q, v], [M, phi, Jn, Jt], ["q", "v"], ["M", "phi", "Jn", "Jt"]),
        ca.Function("ess_contact", [q], [phi, Jn, ca.jacobian(phi, q)], ["q"], ["phi", "Jn", "Jq"]),
        ca.Function("ess_dJnv", [q, v], [ca.jacobian(Jn @ v, q)], ["q", "v"], ["dJnv_dq"]),
    ]
    return compile_functions(fns, lib_name=f"{model.name}-ess", cache_dir=cache_dir, verbose=verbose)


# Every compiled function here is compiled with _nrt=False like the kernel (see
# kernel.ess_integrate): they borrow every array and allocate nothing, down from the entry points
# (the step, integrate_robot, rollout_robot) through the views of the arenas (`_context`,
# `_arrays`). A view made without reference counting and released with it (or the reverse) would
# unbalance the count (test_compiled_calls_leave_reference_counts_balanced), so none of them
# returns a view to reference-counted code, and Python takes its views by their py_func. With
# the counting, its atomic increments and decrements took ~5 % of a go1 tick.

# memo[0], what fout holds for the input in fin: nothing, ess_out's part (phi, vn, force, tau) or
# all of ess_rhs's outputs
FOUT_NONE, FOUT_TAIL, FOUT_FULL = 0.0, 1.0, 2.0


@njit(cache=True, _nrt=False)
def _load_point(x, sigma, p, ctx, need):
    """Write ess_rhs's input for x, the contact modes of sigma and the command held in p into fin;
    True if fout already holds (at least `need`: FOUT_TAIL or FOUT_FULL) the outputs at exactly
    that input (the integrator asks f, h and the outputs at one point several times per step: f
    at a step's end is the next step's first stage, h follows f)."""
    fin, memo = ctx[1], ctx[9]
    nu, nc = int(p[2]), int(p[3])
    n = x.shape[0]
    same = memo[0] >= need
    for i in range(n):
        if fin[i] != x[i]:
            same = False
            fin[i] = x[i]
    for i in range(nc):
        s = 1.0 if sigma[i] > 0.0 and sigma[nc + i] < 0.0 else 0.0
        if fin[n + i] != s:
            same = False
            fin[n + i] = s
    off = p.shape[0] - 5 * nu
    for k in range(5 * nu):
        if fin[n + nc + k] != p[off + k]:
            same = False
            fin[n + nc + k] = p[off + k]
    return same


@njit(cache=True, _nrt=False)
def _rhs_at(x, sigma, p, ctx):
    """Evaluate ess_rhs at x under the contact modes of sigma and the command held in p into fout,
    unless fout already holds exactly that."""
    addr, fin, fout, memo = ctx[0], ctx[1], ctx[2], ctx[9]
    if not _load_point(x, sigma, p, ctx, FOUT_FULL):
        call_flat(addr[C_RHS], fin.ctypes.data, fout.ctypes.data)
        memo[0] = FOUT_FULL


@njit(cache=True, _nrt=False)
def fill_outputs(x, sigma, p, ctx, force, tau, contact):
    """Contact flags, forces (nc x (1 + nt): normal, tangential, N) and applied torques (nu, N m) at x:
    from fout if ess_rhs or ess_out was evaluated there (ROS23's last stage, or the events at the
    step's end), else by ess_out (a fifth of ess_rhs: no mass matrix) into fout's tail."""
    addr, fin, fout, memo = ctx[0], ctx[1], ctx[2], ctx[9]
    nu, nc = int(p[2]), int(p[3])
    n = x.shape[0]
    if not _load_point(x, sigma, p, ctx, FOUT_TAIL):
        call_flat(addr[C_OUT], fin.ctypes.data, fout[n:].ctypes.data)
        memo[0] = FOUT_TAIL
    o = n + 2 * nc
    nf = int(p[7]) + 1
    for i in range(nc):
        contact[i] = sigma[i] > 0.0 and sigma[nc + i] < 0.0
        for k in range(nf):
            force[i, k] = fout[o + nf * i + k]
    for a in range(nu):
        tau[a] = fout[o + nf * nc + a]


@njit(cache=True, _nrt=False)
def robot_f(t, x, sigma, p, ctx, out):
    """dx/dt = (G(q) v, M^-1 (B tau + sum Jn^T fn + Jt^T ft - h)) for the current contact modes."""
    fout = ctx[2]
    _rhs_at(x, sigma, p, ctx)
    for i in range(x.shape[0]):
        out[i] = fout[i]


@njit(cache=True, _nrt=False)
def robot_h(x, p, ctx, out):
    """Events: touchdown (rows 0..nc-1: -phi, or with the force rule and vn > 0, -(phi + b vn / k))
    and liftoff k phi + b vn (or phi) (rows nc..2nc-1); see the module docstring."""
    addr, fin, fout, memo = ctx[0], ctx[1], ctx[2], ctx[9]
    nc = int(p[3])
    n = x.shape[0]
    fresh = memo[0] >= FOUT_TAIL  # phi and vn at x already (h follows f at one point)
    for i in range(n):
        if fin[i] != x[i]:
            fresh = False
            fin[i] = x[i]
    if not fresh:  # ess_out at x with the stance flags and command in fin (phi, vn depend on x only)
        call_flat(addr[C_OUT], fin.ctypes.data, fout[n:].ctypes.data)
        memo[0] = FOUT_TAIL
    force_liftoff = p[5] > 0.0
    for i in range(nc):
        phi, vn = fout[n + i], fout[n + nc + i]
        if force_liftoff:
            k_i, b_i = p[HEADER + i], p[HEADER + nc + i]
            # -phi approaching (vn <= 0); separating, the spring-damper force over k: crossed when
            # the force -k phi - b vn turns compressive below ground (a foot released below
            # ground by the force rule re-touches as soon as the spring pushes again)
            out[i] = -phi - (b_i / k_i) * vn if vn > 0.0 else -phi
            out[nc + i] = k_i * phi + b_i * vn
        else:
            out[i] = -phi
            out[nc + i] = phi


@njit(cache=True, _nrt=False)
def robot_Dh(x, p, ctx, out):
    """Jacobian (2nc x (nq + nv)) of `robot_h`."""
    addr, fin, fout, bt, bc, bg, gen, W, piv, memo = ctx
    nq, nv, nc = int(p[0]), int(p[1]), int(p[3])
    call_flat(addr[C_CONTACT], x.ctypes.data, bc.ctypes.data)
    force_liftoff = p[5] > 0.0
    if force_liftoff:
        call_flat(addr[C_DJNV], x.ctypes.data, bg.ctypes.data)
    out[:, :] = 0.0
    for i in range(nc):
        k_i, b_i = p[HEADER + i], p[HEADER + nc + i]
        vn = 0.0
        if force_liftoff:
            for c in range(nv):
                vn += bc[nc + i * nv + c] * x[nq + c]
        sep = force_liftoff and vn > 0.0  # the touchdown guard's separating branch (see robot_h)
        o_q = nc + nc * nv + i * nq  # d phi / dq (nq): the gap's own gradient, bc's third block
        for c in range(nq):  # derivatives in q: the gap's gradient, and d(vn)/dq = bg
            jq = bc[o_q + c]
            out[i, c] = -jq
            if sep:
                out[i, c] = -jq - (b_i / k_i) * bg[i * nq + c]
            if force_liftoff:
                out[nc + i, c] = k_i * jq + b_i * bg[i * nq + c]
            else:
                out[nc + i, c] = jq
        for c in range(nv):  # derivatives in v: vn = Jn v
            jn = bc[nc + i * nv + c]
            if sep:
                out[i, nq + c] = -(b_i / k_i) * jn
            if force_liftoff:
                out[nc + i, nq + c] = b_i * jn


@njit(cache=True, _nrt=False)
def terms_offsets(nv, nc):
    """Offsets of phi, Jn and Jt in `ess_terms`' output (M, phi, Jn, Jt, back to back)."""
    return nv * nv, nv * nv + nc, nv * nv + nc + nc * nv


@njit(cache=True, _nrt=False)
def _w_book(memo, nu):
    """Offset in memo of robot_wprep's bookkeeping after W's x, sigma and valid flag: the gains
    kp, kd (2 nu) W was built with, its age in steps, the g of the current factor, a stale flag."""
    return memo.shape[0] - 2 * nu - 3


@njit(cache=True, _nrt=False)
def robot_wprep(t, x, sigma, p, ctx, en):
    """The Rosenbrock-W methods' W at x: the stiff force elements linearised, W = [[0, I], [-M^-1 K, -M^-1 D]].

    K = -dF/dq and D = -dF/dv of the generalised force F from the joint impedance (unless
    saturated) and the stance contacts (spring-damper normal force, tanh friction), with the
    Jacobians' own derivatives, gravity and Coriolis left out (a W-method keeps order 2 for any W).
    Stores M, K, D in W[0:3] from one `ess_terms` call at x.

    Reuse (a W-method's licence: any W keeps order 2, a stale one only costs step size): W is
    kept while the contact modes, the command's gains and the stance contacts' stick flags are
    those it was built with, for up to p[6] (`w_reuse`) further calls at points other than its
    own, or up to W_REUSE_EASY while the step that ended at x was easy (the interval's end or
    h_max bounded it and its error norm en is below W_EASY_ERR: a W that stopped fitting shows
    there first; not with w_reuse 0); at its own x, or at the point of the last call that kept
    it, it is kept without counting. A rebuild marks the factor of `robot_wsolve` stale.
    """
    addr, fin, fout, bt, bc, bg, gen, W, piv, memo = ctx
    nq, nv, nu, nc = int(p[0]), int(p[1]), int(p[2]), int(p[3])
    n, m = x.shape[0], sigma.shape[0]
    # memo[o:o+n] = x of the last W, then sigma (m), a valid flag, the stick flags (nc), the point
    # of the last call that kept W (n), then the bookkeeping at og
    o = 1
    og = _w_book(memo, nu)
    gains = p.shape[0] - 2 * nu
    if memo[o + n + m] != 0.0:
        same = True
        for k in range(m):
            if sigma[k] != memo[o + n + k]:
                same = False
                break
        if same:
            for k in range(2 * nu):
                if p[gains + k] != memo[og + k]:
                    same = False
                    break
        if same:
            same = not _stick_flags(x, sigma, p, bt, memo[o + n + m + 1:o + n + m + 1 + nc], False)
        if same:
            same_x = True
            for i in range(n):
                if x[i] != memo[o + i]:
                    same_x = False
                    break
            if same_x:
                return
            ol = o + n + m + 1 + nc  # the point of the last call that kept W
            asked = True
            for i in range(n):
                if x[i] != memo[ol + i]:
                    asked = False
                    memo[ol + i] = x[i]
            if asked:  # e.g. a call's first step at the last call's final point: decided there
                return
            age = memo[og + 2 * nu]
            if age < p[6] or (p[6] > 0.0 and en < W_EASY_ERR and age < W_REUSE_EASY):
                memo[og + 2 * nu] += 1.0
                return
    for i in range(n):
        memo[o + i] = x[i]
    for k in range(m):
        memo[o + n + k] = sigma[k]
    memo[o + n + m] = 1.0
    for k in range(2 * nu):
        memo[og + k] = p[gains + k]
    memo[og + 2 * nu] = 0.0  # age
    memo[og + 2 * nu + 2] = 1.0  # the factor is stale
    call_flat(addr[C_TERMS], x.ctypes.data, bt.ctypes.data)
    _stick_flags(x, sigma, p, bt, memo[o + n + m + 1:o + n + m + 1 + nc], True)
    Mx, Kx, Dx = W[0], W[1], W[2]
    for i in range(nv):
        for j in range(nv):
            Mx[i, j] = bt[i * nv + j]
            Kx[i, j] = 0.0
            Dx[i, j] = 0.0
    base = HEADER + 3 * nc
    cmd = base + 2 * nu
    shift = nq - nv  # a joint's index in q past its index j in v (the quaternion's extra entry)
    for a in range(nu):
        j = int(p[base + a])
        tau = (p[cmd + a] + p[cmd + 3 * nu + a] * (p[cmd + nu + a] - x[j + shift])
               + p[cmd + 4 * nu + a] * (p[cmd + 2 * nu + a] - x[nq + j]))
        if abs(tau) < p[base + nu + a]:  # a saturated motor has no stiffness
            Kx[j, j] += p[cmd + 3 * nu + a]
            Dx[j, j] += p[cmd + 4 * nu + a]
    o_phi, o_jn, o_jt = terms_offsets(nv, nc)
    nt = int(p[7])
    for i in range(nc):
        if not (sigma[i] > 0.0 and sigma[nc + i] < 0.0):
            continue
        k_i, b_i, mu = p[HEADER + i], p[HEADER + nc + i], p[HEADER + 2 * nc + i]
        jn = bt[o_jn + i * nv:o_jn + (i + 1) * nv]
        jt = bt[o_jt + nt * i * nv:o_jt + (nt * i + 1) * nv]
        vn = 0.0
        vt = 0.0
        for k in range(nv):
            vn += jn[k] * x[nq + k]
            vt += jt[k] * x[nq + k]
        # normal force fn = -k phi - b vn: K += k Jn^T Jn, D += b Jn^T Jn
        for r in range(nv):
            if jn[r] != 0.0:  # contact Jacobians are sparse (one leg and the base)
                kr, br = k_i * jn[r], b_i * jn[r]
                for c in range(nv):
                    Kx[r, c] += kr * jn[c]
                    Dx[r, c] += br * jn[c]
        if mu <= 0.0:
            continue
        if nt == 2:
            _friction_3d(Kx, Dx, jn, bt[o_jt + 2 * i * nv:o_jt + (2 * i + 2) * nv], x[nq:], mu, k_i, b_i,
                         -k_i * bt[o_phi + i] - b_i * vn, p[4], nv)
            continue
        # friction ft = -mu fn tanh(vt / v_s): K += -mu k th Jt^T Jn,
        # D += Jt^T (mu fn tanh(vt / v_s) / vt Jt - mu b th Jn), the secant slope (see _friction_3d)
        fn = -k_i * bt[o_phi + i] - b_i * vn
        th = np.tanh(vt / p[4])
        cq = -mu * k_i * th
        cn = -mu * b_i * th
        ct = mu * fn / p[4] if abs(vt) < 1e-4 * p[4] else mu * fn * th / vt  # the secant slope
        for r in range(nv):
            if jt[r] != 0.0:
                qr, nr, tr = cq * jt[r], cn * jt[r], ct * jt[r]
                for c in range(nv):
                    Kx[r, c] += qr * jn[c]
                    Dx[r, c] += nr * jn[c] + tr * jt[c]


@njit(cache=True, _nrt=False)
def _stick_flags(x, sigma, p, bt, flags, store):
    """Which stance contacts stick (|vt| < STICK_BAND v_s, where the friction law's slope mu fn / v_s
    acts) at x, with the tangent Jacobian W was built with (bt): store them in flags (store True),
    or return whether any differs from flags. W is rebuilt when one does: a foot that starts or
    stops slipping changes W's friction terms from ~0 to mu fn / v_s (or back), and a W reused
    across that switch costs steps (go1 dropped 0.1 m: 2.6 steps a tick while landing with these
    rebuilds, 5.5 without)."""
    nq, nv, nc, nt = int(p[0]), int(p[1]), int(p[3]), int(p[7])
    o_jt = terms_offsets(nv, nc)[2]
    band = STICK_BAND * p[4]
    changed = False
    for i in range(nc):
        flag = 0.0
        if sigma[i] > 0.0 and sigma[nc + i] < 0.0 and p[HEADER + 2 * nc + i] > 0.0:
            vt2 = 0.0
            for k in range(nt):
                row = o_jt + (nt * i + k) * nv
                vt = 0.0
                for c in range(nv):
                    vt += bt[row + c] * x[nq + c]
                vt2 += vt * vt
            flag = 1.0 if vt2 < band * band else 0.0
        if store:
            flags[i] = flag
        elif flags[i] != flag:
            changed = True
    return changed


@njit(cache=True, _nrt=False)
def _friction_3d(Kx, Dx, jn, jt, v, mu, k_i, b_i, fn, vs, nv):
    """W's terms of a 3D stance contact's friction ft = -mu fn phi(r) vt (`friction_force`,
    phi(r) = tanh(r) / (r vs), r = |vt| / vs; jt holds the two tangent rows, nv each):
    K += -mu k phi Jt^T vt Jn, D += -mu b phi Jt^T vt Jn + mu fn phi Jt^T Jt.

    D's friction block is the law's secant slope mu fn phi in every tangent direction: the
    Jacobian's across vt and at vt = 0, larger than its slope along a sliding vt (mu fn sech^2 / vs,
    ~0 past a few vs). With the secant a linearly implicit step cannot carry a slipping foot past
    zero slip (in 1-D: v1 = (v0 + h F / m) / (1 + h c / m), never of the other sign than v0 and
    h F), while with the tangent slope it jumps across the stick band (|vt| ~ vs, 0.2 mm/s by
    default) in every step: measured on go1 dropped 0.1 m, 34 steps a 1 ms tick while its feet
    landed, 2.8 with the secant. Any W keeps the method's order (tests/test_ess.py,
    `test_friction_w_terms_match_finite_differences`)."""
    vt0 = 0.0
    vt1 = 0.0
    for k in range(nv):
        vt0 += jt[k] * v[k]
        vt1 += jt[nv + k] * v[k]
    r = np.sqrt(vt0 * vt0 + vt1 * vt1) / vs
    phi = (1.0 - r * r / 3.0) / vs if r < 1e-4 else np.tanh(r) / (r * vs)
    cq0, cq1 = -mu * k_i * phi * vt0, -mu * k_i * phi * vt1
    cn0, cn1 = -mu * b_i * phi * vt0, -mu * b_i * phi * vt1
    s00 = mu * fn * phi
    for r_ in range(nv):
        a0, a1 = jt[r_], jt[nv + r_]
        if a0 == 0.0 and a1 == 0.0:
            continue
        qr = cq0 * a0 + cq1 * a1
        nr = cn0 * a0 + cn1 * a1
        t0 = s00 * a0
        t1 = s00 * a1
        for col in range(nv):
            Kx[r_, col] += qr * jn[col]
            Dx[r_, col] += nr * jn[col] + t0 * jt[col] + t1 * jt[nv + col]


@njit(cache=True, _nrt=False)
def _base_map(quat, a, out, plus):
    """The floating base's rows of G(q) (plus False: out (7) = G a for a base velocity a (6)) or of
    its left inverse G+ = (R^T, 4 E^T) (plus True: out (6) = G+ a for a base rate a (7)), with R
    the rotation and E the quaternion rate map of the unit quaternion (x, y, z, w)."""
    x, y, z, w = quat[0], quat[1], quat[2], quat[3]
    R00, R01, R02 = 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)
    R10, R11, R12 = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)
    R20, R21, R22 = 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)
    if not plus:
        out[0] = R00 * a[0] + R01 * a[1] + R02 * a[2]
        out[1] = R10 * a[0] + R11 * a[1] + R12 * a[2]
        out[2] = R20 * a[0] + R21 * a[1] + R22 * a[2]
        wx, wy, wz = a[3], a[4], a[5]
        out[3] = 0.5 * (w * wx - z * wy + y * wz)
        out[4] = 0.5 * (z * wx + w * wy - x * wz)
        out[5] = 0.5 * (-y * wx + x * wy + w * wz)
        out[6] = 0.5 * (-x * wx - y * wy - z * wz)
    else:
        out[0] = R00 * a[0] + R10 * a[1] + R20 * a[2]
        out[1] = R01 * a[0] + R11 * a[1] + R21 * a[2]
        out[2] = R02 * a[0] + R12 * a[1] + R22 * a[2]
        dx, dy, dz, dw = a[3], a[4], a[5], a[6]
        out[3] = 2.0 * (w * dx + z * dy - y * dz - x * dw)
        out[4] = 2.0 * (-z * dx + w * dy + x * dz - y * dw)
        out[5] = 2.0 * (y * dx - x * dy + w * dz - z * dw)


@njit(cache=True, _nrt=False)
def _lu_factor(A, piv, n):
    """LU factorisation with partial pivoting, in place (unit lower triangle below the diagonal)."""
    for k in range(n):
        r = k
        big = abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > big:
                big = abs(A[i, k])
                r = i
        piv[k] = r
        if r != k:
            for j in range(n):
                A[k, j], A[r, j] = A[r, j], A[k, j]
        d = 1.0 / A[k, k]
        A[k, k] = d  # the diagonal holds reciprocals
        for i in range(k + 1, n):
            A[i, k] *= d
            a = A[i, k]
            for j in range(k + 1, n):
                A[i, j] -= a * A[k, j]


@njit(cache=True, _nrt=False)
def _lu_solve(A, piv, b, n):
    """Solve A y = b in place in b with the factors of `_lu_factor`."""
    for k in range(n):
        r = piv[k]
        if r != k:
            b[k], b[r] = b[r], b[k]
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= A[i, k] * b[k]
        b[i] = s
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= A[i, k] * b[k]
        b[i] = s * A[i, i]


@njit(cache=True, _nrt=False)
def robot_wsolve(g, refactor, p, ctx, rhs, out):
    """out = (I - g W)^-1 rhs for the W of `robot_wprep`: with (r_q, r_v) = rhs,
    (M + g D + g^2 K) out_v = M r_v - g K G+ r_q and out_q = r_q + g G out_v (one nv x nv LU,
    refactored only when asked and W was rebuilt or g moved by more than G_KEEP since the last
    factor; the steps of a tick-bound run differ in g by rounding only). G = I for planar
    robots; for a floating base W's top blocks are (0, G) at W's point, G+ G = I, so that K is
    the stiffness in v's coordinates (`_base_map`)."""
    addr, fin, fout, bt, bc, bg, gen, W, piv, memo = ctx
    nq, nv, nu = int(p[0]), int(p[1]), int(p[2])
    Mx, Kx, Dx, A = W[0], W[1], W[2], W[3]
    og = _w_book(memo, nu)
    g_f = memo[og + 2 * nu + 1]
    if refactor and (memo[og + 2 * nu + 2] != 0.0 or abs(g - g_f) > G_KEEP * g_f):
        memo[og + 2 * nu + 1] = g
        memo[og + 2 * nu + 2] = 0.0
        g2 = g * g
        for i in range(nv):
            for j in range(nv):
                A[i, j] = Mx[i, j] + g * Dx[i, j] + g2 * Kx[i, j]
        _lu_factor(A, piv, nv)
    else:
        # the factor's g, in the whole solve: exactly (I - g W')^-1 with W' = (g_f / g) W, still a W
        g = g_f
    floating = p[8] > 0.0
    if floating:  # rq in v's coordinates: G+ r_q, into out's v part (out and rhs are distinct
        # arrays, the kernel's stage buffers; out's v part is written again below)
        quat = memo[1 + 3:1 + 7]  # W's x is memo[1:1 + n]
        _base_map(quat, rhs[0:7], out[nq:nq + 6], True)
        for i in range(6, nv):
            out[nq + i] = rhs[i + 1]
        rq = out[nq:nq + nv]
    else:
        rq = rhs[0:nv]
    for i in range(nv):
        s = 0.0
        for j in range(nv):
            s += Mx[i, j] * rhs[nq + j] - g * Kx[i, j] * rq[j]
        gen[i] = s
    _lu_solve(A, piv, gen, nv)
    for i in range(nv):
        out[nq + i] = gen[i]
    if floating:
        _base_map(memo[1 + 3:1 + 7], gen[0:6], out[0:7], False)
        for i in range(7):
            out[i] = rhs[i] + g * out[i]
        for i in range(6, nv):
            out[i + 1] = rhs[i + 1] + g * gen[i]
    else:
        for i in range(nv):
            out[i] = rhs[i] + g * gen[i]


# The plant's mutable state lives in three arrays so that one compiled call per tick takes few
# arguments (numba's dispatch costs ~80 ns per array argument):
# F (float64): t, hstep (2), rtol, atol, h_max, live_min, -, eps (m), sigma (m), x (n), then the
#   last tick's outputs: forces (nc x 2, N), torques (nu, N m)
# I (int64): on_violation, max_events, method, the last tick's invariant check (sim.invariants' codes), guard,
#   ticks, -, -, stats (N_STATS)
# B (bool, (4 + m) x m): armed, pending, parked, the m x m reset matrix, then the last tick's
#   contact flags (the row's first nc)
F_T, F_HSTEP, F_RTOL, F_ATOL, F_HMAX, F_LIVE, F_EPS = 0, 1, 3, 4, 5, 6, 8
I_VIOL, I_MAXEV, I_METHOD, I_CHECK, I_GUARD, I_TICKS, I_STATS = 0, 1, 2, 3, 4, 5, 8
BAD_COMMAND = -1  # the compiled step's status for a command that fails its check
SLIP_SPEED = 2e-4  # default v_s, m/s: a foot inside its friction cone creeps < v_s atanh(ft / (mu fn)) (docs/ESS.md)
STICK_BAND = 2.0  # a stance contact sticks (for W's reuse) while |vt| < STICK_BAND v_s (`_stick_flags`)
G_KEEP = 0.02  # robot_wsolve keeps its factor while g is within 2 % of the factor's g
# the quaternion is projected back to unit norm when it is further than this from it: a state left
# untouched keeps the memo of f at the tick's last point valid, so the next tick's first stage is
# free under an unchanged command (a norm off by 1e-10 moves a foot by ~1e-11 m)
QUAT_NORM_TOL = 1e-10
W_REUSE = 4  # default EssPlant(w_reuse=...): further points W is kept at within a contact mode (`robot_wprep`)
# ... and while the steps are easy (error norm below W_EASY_ERR), up to W_REUSE_EASY points: a
# standing go1's steps have norms ~1e-4, and its W rebuilt every few ticks took 9 % of a tick
W_EASY_ERR = 0.05
W_REUSE_EASY = 64
# default (rtol, atol) per method: ros23's at about the accuracy dopri5's had; ros21's error
# estimate is of first order and overstates its error, so its tolerance is looser (docs/ESS.md)
DEFAULT_TOL = {"dopri5": (1e-4, 1e-6), "ros23": (1e-2, 1e-4), "ros21": (1e-1, 1e-3)}


# The plant's arrays live in two arenas, so that a compiled entry point takes two arguments for
# all of them (numba's dispatch costs ~0.1 us per array argument, and more past ten):
# wk (float64): ctx's fin, fout, bt, bc, bg, gen, W, memo, then p, F and the kernel's scratch
#   (`K.work_size`), back to back;
# wi (int64): the 9 offsets of ctx's parts in wk (the last is their end), nv, p's and F's ranges
# in wk, I's range in wi, the 5 C function addresses, piv (nv), then I.
WI_NV, WI_P, WI_F, WI_I, WI_ADDR, WI_PIV = 9, 10, 12, 14, 16, 21


def make_context(lib, nq: int, nv: int, nu: int, nc: int, slip_speed: float, p: np.ndarray, F: np.ndarray,
                 I: np.ndarray):
    """Allocate the arenas (wk, wi) for a model's compiled functions `lib` and copy the plant's
    p, F, I into them; returns (wk, wi, ctx, p, F, I), ctx and the arrays being views of the
    arenas, the same that `_context` and `_arrays` build inside compiled code."""
    n, m = nq + nv, 2 * nc
    rhs = lib["ess_rhs"]
    sizes = [rhs.n_in, rhs.n_out, lib["ess_terms"].n_out, lib["ess_contact"].n_out, lib["ess_dJnv"].n_out, nv,
             4 * nv * nv, 1 + n + m + 1 + nc + n + 2 * nu + 3]  # memo: fout valid; W's x, sigma, flag,
    # stick flags, the last point that kept W, gains, age, g, stale
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    o_p = offsets[-1]
    o_F = o_p + p.size
    wk = np.zeros(o_F + F.size + K.work_size(n, m))
    addr = [lib[f].address for f in ("ess_rhs", "ess_terms", "ess_contact", "ess_dJnv", "ess_out")]
    o_I = WI_PIV + nv
    wi = np.concatenate([offsets, [nv, o_p, o_F, o_F, o_F + F.size, o_I, o_I + I.size], addr, np.zeros(nv),
                         I]).astype(np.int64)
    wk[o_p:o_F] = p
    wk[o_F:o_F + F.size] = F
    ctx = _context.py_func(wk, wi)  # numpy's views: the compiled versions keep no reference counts
    ctx[1][-1] = slip_speed  # fin's last entry: ess_rhs's vs input
    return (wk, wi, ctx) + _arrays.py_func(wk, wi)


@njit(cache=True, _nrt=False)
def _context(wk, wi):
    """The ctx tuple (addr, fin, fout, bt, bc, bg, gen, W, piv, memo) as views of the arenas."""
    nv = wi[WI_NV]
    return (wi[WI_ADDR:WI_PIV], wk[wi[0]:wi[1]], wk[wi[1]:wi[2]], wk[wi[2]:wi[3]], wk[wi[3]:wi[4]],
            wk[wi[4]:wi[5]], wk[wi[5]:wi[6]], wk[wi[6]:wi[7]].reshape((4, nv, nv)), wi[WI_PIV:WI_PIV + nv],
            wk[wi[7]:wi[8]])


@njit(cache=True, _nrt=False)
def _arrays(wk, wi):
    """The plant's parameter vector p, float state F and integer state I as views of the arenas."""
    return wk[wi[WI_P]:wi[WI_P + 1]], wk[wi[WI_F]:wi[WI_F + 1]], wi[wi[WI_I]:wi[WI_I + 1]]


# The vector field's functions as compile-time constants (sim/ess/static_call.py): passed as plain
# dispatchers they would keep `_integrate` and its callers out of numba's disk cache (each process
# would recompile the integrator, ~20 s).
S_F, S_H, S_DH, S_WPREP, S_WSOLVE = (static(robot_f), static(robot_h), static(robot_Dh), static(robot_wprep),
                                      static(robot_wsolve))


@njit(cache=True, _nrt=False)
def _integrate(ctx, p, F, I, B, work, tf, t_eval, x_eval):
    """`kernel.ess_integrate` bound to the robot vector field: integrate the plant state in F/I/B
    to time tf under the command held in p. Returns the kernel's status (guard in I[I_GUARD])."""
    m = B.shape[1]
    x = F[F_EPS + 2 * m:F_EPS + 2 * m + int(p[0]) + int(p[1])]
    t = F[F_T]
    span = tf - t
    max_steps = int(min(1e9, max(1e4, 1000.0 * span / F[F_HMAX])))  # 1000 attempts per largest step
    t, status, guard = K.ess_integrate(
        S_F, S_H, S_DH, S_WPREP, S_WSOLVE, I[I_METHOD], ctx, x, t, tf, p,
        F[F_EPS + m:F_EPS + 2 * m], B[0], B[1], B[2], B[3:3 + m], F[F_EPS:F_EPS + m], False, F[F_RTOL], F[F_ATOL],
        F[F_HSTEP:F_HSTEP + 2], F[F_HMAX], F[F_LIVE], I[I_VIOL], I[I_MAXEV], max_steps, t_eval, x_eval,
        I[I_STATS:I_STATS + K.N_STATS], work)
    F[F_T] = t
    I[I_GUARD] = guard
    if p[8] > 0.0:  # the step's quaternion drifts off unit norm by ~the error tolerance: project back
        norm = np.sqrt(x[3] * x[3] + x[4] * x[4] + x[5] * x[5] + x[6] * x[6])
        if abs(norm - 1.0) > QUAT_NORM_TOL:
            for k in range(3, 7):
                x[k] /= norm
    return status


@njit(cache=True, _nrt=False)
def integrate_robot(wk, wi, B, tf, t_eval, x_eval):
    """`_integrate` on the plant's arenas (see there)."""
    p, F, I = _arrays(wk, wi)
    return _integrate(_context(wk, wi), p, F, I, B, wk[wi[WI_F + 1]:], tf, t_eval, x_eval)


@njit(cache=True, _nrt=False)
def _tick(wk, wi, B, tf):
    """Integrate to tf under the held command; write the outputs (forces, torques, contact flags)
    into F's tail and B's last row. Returns the kernel's status."""
    ctx = _context(wk, wi)
    p, F, I = _arrays(wk, wi)
    work = wk[wi[WI_F + 1]:]
    status = _integrate(ctx, p, F, I, B, work, tf, work[:0], work[:0].reshape((0, 1)))
    if status == K.OK:
        n, nu, nc, m = int(p[0]) + int(p[1]), int(p[2]), int(p[3]), B.shape[1]
        o = F_EPS + 2 * m + n  # x ends here, the outputs follow
        nf = int(p[7]) + 1
        fill_outputs(F[o - n:o], F[F_EPS + m:F_EPS + 2 * m], p, ctx, F[o:o + nf * nc].reshape((nc, nf)),
                     F[o + nf * nc:o + nf * nc + nu], B[B.shape[0] - 1])
    return status


def _step_fields_py(wk, wi, B, tau_ff, q_des, v_des, kp, kd, tf, heights_address, heights, lowest):
    """One plant tick in one compiled call: hold the command (its five fields, each nu long) if it
    is well formed (finite, gains >= 0), integrate to tf, write the outputs (see `_tick`) and the
    invariants' `_first_failure` at the new state into I[I_CHECK] (heights_address, heights and
    lowest as in `Invariants.compiled_args`). BAD_COMMAND, the plant untouched, if it is not."""
    p = _arrays(wk, wi)[0]
    nu = int(p[2])
    if not fields_ok(tau_ff, q_des, v_des, kp, kd, nu):
        return BAD_COMMAND
    fields = (tau_ff, q_des, v_des, kp, kd)
    off = p.shape[0] - 5 * nu
    for f in range(5):
        for a in range(nu):
            p[off + f * nu + a] = fields[f][a]
    status = _tick(wk, wi, B, tf)
    if status == K.OK:
        F, I = _arrays(wk, wi)[1:]
        nq, n, nc, m = int(p[0]), int(p[0]) + int(p[1]), int(p[3]), B.shape[1]
        x = F[F_EPS + 2 * m:F_EPS + 2 * m + n]
        I[I_CHECK] = _first_failure(x[:nq], x[nq:], heights_address, heights, nc, lowest, p[8] > 0.0)
    return status


_STEP_FIELDS = []  # the compiled `_step_fields_py`, built at the first step() of a process


def step_fields():
    """`_step_fields_py` compiled once, for C-contiguous float64 command fields, writable or not
    (the bridge decodes commands as read-only views of the message): any other argument type
    (ints, strided arrays, lists) is a TypeError at dispatch, which step() answers by the
    validating path, never by compiling another version."""
    if not _STEP_FIELDS:
        from numba import types as nbt

        f1 = nbt.float64[::1]
        ro = nbt.Array(nbt.float64, 1, "C", readonly=True)
        sig = nbt.int64(f1, nbt.int64[::1], nbt.boolean[:, ::1], ro, ro, ro, ro, ro, nbt.float64, nbt.int64, f1,
                        nbt.float64)
        _STEP_FIELDS.append(njit(sig, cache=True, _nrt=False)(_step_fields_py))
    return _STEP_FIELDS[0]


@njit(cache=True, _nrt=False)
def rollout_robot(wk, wi, B, commands, period, out_x):
    """Apply commands[k] (packed, 5 nu) during tick k of `period` s; record x after each tick.
    Returns the status (ticks completed in I[I_TICKS])."""
    ctx = _context(wk, wi)
    p, F, I = _arrays(wk, wi)
    work = wk[wi[WI_F + 1]:]
    m = B.shape[1]
    x = F[F_EPS + 2 * m:F_EPS + 2 * m + int(p[0]) + int(p[1])]
    te = work[:0]
    xe = work[:0].reshape((0, x.shape[0]))
    t0 = F[F_T]
    off = p.shape[0] - commands.shape[1]
    I[I_TICKS] = 0
    for k in range(commands.shape[0]):
        for j in range(commands.shape[1]):
            p[off + j] = commands[k, j]
        status = _integrate(ctx, p, F, I, B, work, t0 + (k + 1) * period, te, xe)
        if status != K.OK:
            return status
        for j in range(x.shape[0]):
            out_x[k, j] = x[j]
        I[I_TICKS] = k + 1
    return K.OK


DROP_FOR_LIMIT_M = 0.3  # m: the drop whose full compression sets the default penetration limit


def compliant_penetration_limit(model: RobotModel, drop_m: float = DROP_FOR_LIMIT_M) -> float:
    """The ESS plant's default penetration limit, m: the larger of DEFAULT_PENETRATION_LIMIT_M and
    the depth d at which the softest contact's spring (stiffness k, damping ignored) has stored the
    energy of the whole robot (weight W = largest diagonal entry of M(q0) times g) dropped from
    drop_m onto it: k d^2 / 2 = W (drop_m + d). Deeper than that a foot has fallen through."""
    from robots import numeric

    w = float(np.max(np.diag(numeric(model, verbose=False).mass_matrix(model.q0)))) * model.gravity
    k = min(c.stiffness for c in model.contacts)
    d = (w + np.sqrt(w * w + 2.0 * k * w * drop_m)) / k
    return max(DEFAULT_PENETRATION_LIMIT_M, float(d))


class EssPlant(LatchedViolation):
    """A robot plant integrated by ESS (implements `sim.protocol.Plant`).

    Args:
        model: a RobotModel with compliant contacts (stiffness > 0 on every contact).
        eps: band width of the guards, m for touchdown and N for force liftoff (scalar applies
            to touchdown; liftoff uses eps * k so both mean "eps metres").
        method: "ros23" (Rosenbrock-W 2(3): the joint impedance and contact forces taken
            linearly implicitly, order 2; steps as long as the command period), "ros21" (its
            two stages with a first-order error estimate: two f per step instead of three, less
            accurate through impacts), "dopri5" (explicit Dormand-Prince 5(4), order 5: for tight
            tolerances), or "auto" (default): dopri5 when rtol < 1e-6 is given, else ros23.
            Accuracy and speed of each: docs/ESS.md.
        rtol, atol: step error tolerances (default per method: DEFAULT_TOL); h_max: largest
            integration step, s.
        slip_speed: v_s of the tanh friction law, m/s (default SLIP_SPEED, 2e-4: creep < 0.4 mm/s
            up to 95 % of the friction cone). liftoff: "force" or "gap".
        w_reuse: ros21/ros23: at how many further step ends W (and its factor) is kept while the
            contact modes, the stick flags and the command's gains are unchanged, or up to
            W_REUSE_EASY while the steps are easy (`robot_wprep`; 0: rebuilt at every new state,
            easy or not; the accuracy and speed of each: docs/ESS.md).
        on_violation: "locate" (default: exact event location where liveness fails) or "raise"
            (advance() and rollout() raise LivenessError; step() reports it in the state's violation).
        penetration_limit_m: deepest contact gap (m) before the state is flagged as a violation
            (sim/invariants.py). None (default): `compliant_penetration_limit(model)`, the larger of
            0.02 m and how deep the softest contact's spring sinks when the whole robot drops
            0.3 m onto it (a soft contact legitimately sinks centimetres in an impact).
        cache_dir, verbose: code-generation cache folder and whether to announce compiling.
    """

    def __init__(self, model: RobotModel, *, eps: float = 1e-4, rtol: float | None = None, atol: float | None = None,
                 h_max: float = 0.005, method: str = "auto", slip_speed: float = SLIP_SPEED, liftoff: str = "force",
                 w_reuse: int = W_REUSE, on_violation: str = "locate", max_events: int = 10_000,
                 penetration_limit_m: float | None = None,
                 cache_dir: Path | str | None = None, verbose: bool = True):
        if model.nc == 0:
            raise ValueError(f"{model.name}: the ESS plant needs at least one contact")
        soft = [c.name for c in model.contacts if c.stiffness <= 0]
        if soft:
            raise ValueError(f"{model.name}: contacts {soft} have no stiffness; the ESS plant needs compliant contacts")
        if method not in ("auto", *K.METHODS):
            raise ValueError(f"EssPlant: method must be 'auto' or one of {list(K.METHODS)}, got {method!r}")
        if method == "auto":
            method = "dopri5" if rtol is not None and rtol < 1e-6 else "ros23"
        rtol = DEFAULT_TOL[method][0] if rtol is None else rtol
        atol = DEFAULT_TOL[method][1] if atol is None else atol
        for name, value in (("eps", eps), ("rtol", rtol), ("atol", atol), ("h_max", h_max),
                            ("slip_speed", slip_speed)):
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"EssPlant: {name} must be finite and > 0, got {value}")
        if isinstance(w_reuse, bool) or not isinstance(w_reuse, (int, np.integer)) or w_reuse < 0:
            raise ValueError(f"EssPlant: w_reuse must be an integer >= 0 (steps), got {w_reuse!r}")
        if liftoff not in ("force", "gap"):
            raise ValueError(f"EssPlant: liftoff must be 'force' or 'gap', got {liftoff!r}")
        if on_violation not in ("locate", "raise"):
            raise ValueError(f"EssPlant: on_violation must be 'locate' or 'raise', got {on_violation!r}")
        self.model = model
        self.invariants = Invariants(model, compliant_penetration_limit(model) if penetration_limit_m is None
                                     else penetration_limit_m)
        self.options = dict(eps=eps, rtol=rtol, atol=atol, h_max=h_max, method=method, slip_speed=slip_speed,
                            liftoff=liftoff, w_reuse=int(w_reuse), on_violation=on_violation,
                            max_events=max_events, penetration_limit_m=self.invariants.limit)
        lib = _lib(model, cache_dir, verbose)
        nq, nv, nu, nc, nt = model.nq, model.nv, model.nu, model.nc, model.n_tangent
        n, m, nf = nq + nv, 2 * nc, 1 + model.n_tangent
        self._joints = actuated_joints(model)
        stiff = np.array([c.stiffness for c in model.contacts])
        self._p = np.concatenate([
            [nq, nv, nu, nc, slip_speed, 1.0 if liftoff == "force" else 0.0, w_reuse, nt,
             1.0 if model.floating_base else 0.0],
            stiff, [c.damping for c in model.contacts], [c.mu for c in model.contacts],
            self._joints.astype(float), np.where(np.isfinite(model.u_max), model.u_max, 1e300),
            np.zeros(5 * nu),
        ])
        self._cmd = HEADER + 3 * nc + 2 * nu
        self._lib = lib  # keeps the shared library (and so the addresses below) alive
        reset = np.zeros((m, m), dtype=np.bool_)
        for i in range(nc):
            reset[i, nc + i] = reset[nc + i, i] = True
        self._F = np.zeros(F_EPS + 2 * m + n + nf * nc + nu)
        self._F[[F_RTOL, F_ATOL, F_HMAX, F_LIVE]] = rtol, atol, h_max, 1e-12
        self._F[F_EPS:F_EPS + m] = np.concatenate([np.full(nc, eps), eps * (stiff if liftoff == "force" else np.ones(nc))])
        self._I = np.zeros(I_STATS + K.N_STATS, dtype=np.int64)
        self._I[[I_VIOL, I_MAXEV, I_METHOD]] = 0 if on_violation == "raise" else 1, max_events, K.METHODS[method]
        # from here on p, F and I are views of the arenas that the compiled entry points take
        self._wk, self._wi, ctx, self._p, self._F, self._I = make_context(lib, nq, nv, nu, nc, slip_speed, self._p,
                                                                          self._F, self._I)
        self.system = EssSystem(robot_f, robot_h, robot_Dh, n=n, m=m, reset=reset, ctx=ctx,
                                name=f"{model.name}-ess", wprep=robot_wprep, wsolve=robot_wsolve)
        self._B = np.zeros((4 + m, m), dtype=np.bool_)
        self._B[3:3 + m] = reset
        self._eps = self._F[F_EPS:F_EPS + m]
        self._stats = self._I[I_STATS:]
        o = F_EPS + 2 * m + n
        self.x = self._F[o - n:o]  # a view: the plant updates it in place
        # the last tick's outputs (views that step() copies): q, v, forces, torques, contact flags
        self._outputs = (self.x[:nq], self.x[nq:], self._F[o:o + nf * nc].reshape(nc, nf), self._F[o + nf * nc:],
                         self._B[-1, :nc])
        address, heights, _, lowest, _ = self.invariants.compiled_args  # nc and floating are in p
        self._check_args = (address, heights, lowest)  # step_fields' last arguments
        self._fast = None  # step()'s compiled call, bound at the first step()
        self._empty = np.zeros(0)
        self._empty2 = np.zeros((0, n))
        c = self._cmd  # the held command's fields, as views of p (what step(None) holds)
        self._held = JointCommand(*(self._p[c + k * nu:c + (k + 1) * nu] for k in range(5)))
        self._ready = False
        # guard bookkeeping, as views of the plant's arrays
        self.guards = GuardState(self._F[F_EPS + m:F_EPS + 2 * m], self._B[0], self._B[1], self._B[2])

    @property
    def t(self) -> float:
        """Simulated time, s."""
        return float(self._F[F_T])

    @t.setter
    def t(self, value: float) -> None:
        self._F[F_T] = value

    # ------------------------------------------------------------------ protocol
    def reset(self, q, v=None, t: float = 0.0) -> PlantState:
        """Set the state (q, v) at time t (s); contact modes follow from the gaps. Returns it."""
        m = self.model
        q, v, t = checked_reset(m, q, v, t)
        self.x[:] = np.concatenate([q, v])
        self.t = float(t)
        nc = m.nc
        self.system.ctx[-1][:] = 0.0  # forget the memos (f's outputs, W and its factor): the state jumped
        hx = np.empty(2 * nc)
        robot_h(self.x, self._p, self.system.ctx, hx)
        g = self.guards
        g.armed[:] = g.pending[:] = g.parked[:] = False
        for i in range(nc):
            stance = hx[i] >= 0  # gap closed
            g.sigma[i], g.sigma[nc + i] = (1.0, -1.0) if stance else (-1.0, 1.0)
            k = nc + i if stance else i  # the guard that can be crossed next
            g.armed[k], g.pending[k] = hx[k] < -self._eps[k], hx[k] >= -self._eps[k]
        self._p[self._cmd:] = 0.0
        self._F[F_HSTEP:F_HSTEP + 2] = (min(1e-3, self.options["h_max"]), 1e-4)
        self._ready = True
        self._clear_violation()
        state = self.state()
        return self._checked(state)

    def set_command(self, command: JointCommand) -> None:
        """Hold `command` (validated against the model) until the next call."""
        self._p[self._cmd:] = pack_command(command, self.model)

    def step(self, command: JointCommand | None, dt: float) -> PlantState:
        """Advance dt seconds holding `command` (None keeps the previous one); returns the state.

        One compiled call per tick (command check, integration, outputs, the invariants) taking the command's
        fields as they are; a command that fails the fast check (wrong type, length, non-finite
        values, negative gains) goes through `pack_command`, whose ValueError names the bad field,
        and then the same call (so warming up with any command compiles all that a run uses).
        """
        F = self._F
        t0 = F.item(F_T)
        t_end = t0 + dt
        if not (t_end >= t0 and self._ready):
            if not self._ready:
                raise RuntimeError(f"{self.model.name}: call reset() before step()")
            raise ValueError(f"{self.model.name}: dt must be >= 0 (t={t0}, requested {t_end})")
        c = self._held if command is None else command
        if self.violation:  # the physics failed earlier: hold the last good state until reset
            if command is not None:
                pack_command(command, self.model)  # a bad command still raises ValueError
            return self._violated(self.violation)
        fast = self._fast or self._bind_step()
        try:
            status = fast(self._wk, self._wi, self._B, c.tau_ff, c.q_des, c.v_des, c.kp, c.kd, t_end,
                          *self._check_args)
        except (TypeError, AttributeError):
            status = BAD_COMMAND
        if status != K.OK:
            if status == BAD_COMMAND:  # raises with a precise message, or fills missing fields
                nu = self.model.nu
                packed = pack_command(command, self.model)
                status = fast(self._wk, self._wi, self._B, packed[:nu], packed[nu:2 * nu], packed[2 * nu:3 * nu],
                              packed[3 * nu:4 * nu], packed[4 * nu:], t_end, *self._check_args)
            if status != K.OK:  # a physics failure: never raised out of step (sim/invariants.py)
                what = (f"liveness violated at guard {int(self._I[I_GUARD])}" if status == K.LIVENESS
                        else K.STATUS_TEXT[status])
                return self._violated(f"ESS integration failed: {what} at t={self.t:.6g} s")
        q, v, force, tau, contact = self._outputs
        state = PlantState(F.item(F_T), q.copy(), v.copy(), contact.copy(), force.copy(), tau.copy())
        return self._checked(state, self._I.item(I_CHECK))  # the compiled call checked the invariants

    def _bind_step(self):
        """step()'s compiled call (`step_fields`), bound at the first step()."""
        self._fast = step_fields()
        return self._fast

    def advance(self, t_end: float, t_eval: np.ndarray | None = None) -> np.ndarray | None:
        """Integrate to absolute time t_end (s) under the held command (no state object built).

        With t_eval (ascending absolute times in (t, t_end]) the states x = (q, v) at those
        times are returned, len(t_eval) x (nq + nv), from the integrator's dense output.
        """
        if not self._ready:
            raise RuntimeError(f"{self.model.name}: call reset() before step()")
        if not t_end >= self.t:
            raise ValueError(f"{self.model.name}: dt must be >= 0 (t={self.t}, requested {t_end})")
        if t_eval is None:
            te, xe = self._empty, self._empty2
        else:
            te = np.ascontiguousarray(t_eval, dtype=np.float64)
            xe = np.full((te.size, self.system.n), np.nan)
        status = integrate_robot(self._wk, self._wi, self._B, float(t_end), te, xe)
        if status != K.OK:
            self._raise(status)
        return None if t_eval is None else xe

    def rollout(self, commands: list[JointCommand] | np.ndarray, period: float) -> np.ndarray:
        """Apply commands[k] during the k-th tick of `period` seconds, all in compiled code.

        The batch form of calling step(commands[k], period) in a loop (same result), for
        offline use and benchmarks. commands: JointCommands, or an array (ticks x 5 nu) of them
        packed as `pack_command` does (tau_ff, q_des, v_des, kp, kd). Returns the states
        x = (q, v) after each tick, len(commands) x (nq + nv); the plant ends at the last state.
        """
        if not self._ready:
            raise RuntimeError(f"{self.model.name}: call reset() before rollout()")
        if not (np.isfinite(period) and period > 0):
            raise ValueError(f"{self.model.name}: period must be finite and > 0, got {period}")
        nu = self.model.nu
        if isinstance(commands, np.ndarray):
            packed = np.ascontiguousarray(commands, dtype=np.float64)
            if packed.ndim != 2 or not packed_commands_ok(packed, nu):
                raise ValueError(f"{self.model.name}: packed commands must be ticks x {5 * nu} (tau_ff, q_des, "
                                 f"v_des, kp, kd), finite, with gains kp, kd >= 0; got shape {commands.shape}")
        else:
            packed = np.stack([pack_command(c, self.model) for c in commands]) if commands else np.zeros((0, 5 * nu))
        out = np.empty((len(commands), self.system.n))
        status = rollout_robot(self._wk, self._wi, self._B, packed, float(period), out)
        if status != K.OK:
            self._raise(status, f" (tick {self._I[I_TICKS]})")
        return out

    def _raise(self, status: int, where: str = "") -> None:
        t = self.t
        if status == K.LIVENESS:
            raise LivenessError(int(self._I[I_GUARD]), t, self.x)
        raise EssIntegrationError(f"{self.model.name}: {K.STATUS_TEXT[status]} at t={t:.6g}{where}")

    def state(self) -> PlantState:
        """The current PlantState (fresh arrays; the plant keeps its own)."""
        m = self.model
        force, tau, contact = np.empty((m.nc, 1 + m.n_tangent)), np.empty(m.nu), np.empty(m.nc, np.bool_)
        fill_outputs(self.x, self.guards.sigma, self._p, self.system.ctx, force, tau, contact)
        return PlantState(self.t, self.x[:m.nq].copy(), self.x[m.nq:].copy(), contact, force, tau, self.violation)

    @property
    def stats(self) -> dict:
        """Cumulative integrator counters since construction."""
        return dict(zip(K.STAT_NAMES, self._stats.tolist()))


# numba tracks this file only; the kernel, static_call, ccall, the invariants' check and the command's check
# are inlined into the cached code above
ccall.drop_stale_cache(_integrate, "robot.", [K.__file__, static_call.__file__, ccall.__file__, _invariants.__file__,
                                              command_check.__file__])
