"""Symbolic rigid-body dynamics of a floating-base kinematic tree in CasADi (spatial algebra).

Hand-written because no package here provides it symbolically: the `pin` wheels have no CasADi
bindings, and adam-robotics fails on go1.urdf. The tree's numbers come from a
maintained URDF parser (pinocchio, robots/urdf.py); this module only turns them into CasADi
expressions, and tests/test_spatial.py checks them against pinocchio's numeric algorithms.

Conventions (pinocchio's, so that a controller or a cross-check can use either):
- q = (base position in the world (m), base orientation quaternion (x, y, z, w), joint angles).
- v = (base linear velocity, base angular velocity, both in the base frame; joint velocities).
- Spatial motion vectors are (linear, angular), force vectors (force, moment); a placement
  (R, p) maps a child frame into its parent: x_parent = R x_child + p.
- Gravity is the world acceleration (0, 0, -g).

The equations of motion are M(q) dv/dt + h(q, v) = tau + sum_k J_k(q)^T f_k, with tau =
(0_6, joint torques). `inverse_dynamics` is the recursive Newton-Euler algorithm (Featherstone,
Rigid Body Dynamics Algorithms, 2008, Table 5.1); M is its exact Jacobian in the
accelerations (CasADi's, sharing the expression graph) and h its value at zero acceleration.
`forward_dynamics` is the articulated-body algorithm (Table 7.1): dv/dt without forming M, for
the ESS plant's vector field (go1: 5,800 generated instructions instead of 10,800 for M, h and a
block solve, ~1 us a call). tests/test_spatial.py checks it against pinocchio's `aba`.
`integrate(q, v, dt)` is q (+) v dt on the configuration manifold (SE(3) exponential for the
base, unit quaternion kept), as pinocchio's `integrate`: plants integrate with it, never with
Euler angles.
"""
from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np

REVOLUTE_AXES = {"JointModelRX": (1.0, 0.0, 0.0), "JointModelRY": (0.0, 1.0, 0.0), "JointModelRZ": (0.0, 0.0, 1.0)}


@dataclass(frozen=True)
class Body:
    """One joint and the rigid body it moves (everything in the joint's frame).

    parent: index of the parent body (-1: the world). kind: "free" (the floating base, first
    body only) or "revolute". axis: unit rotation axis of a revolute joint. placement: (R, p)
    of the joint frame in the parent's joint frame at q = 0. mass (kg), com (m), inertia: 3x3
    rotational inertia about the centre of mass (kg m^2).
    """

    name: str
    parent: int
    kind: str
    axis: tuple
    placement: tuple
    mass: float
    com: tuple
    inertia: tuple


@dataclass(frozen=True)
class Frame:
    """A point of interest (e.g. a foot) fixed to body `body` at `placement` (R, p)."""

    name: str
    body: int
    placement: tuple


def quat_to_rot(quat) -> ca.SX:
    """Rotation matrix of a unit quaternion (x, y, z, w) (CasADi or numeric)."""
    x, y, z, w = quat[0], quat[1], quat[2], quat[3]
    return ca.vertcat(
        ca.horzcat(1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)),
        ca.horzcat(2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)),
        ca.horzcat(2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)),
    )


def quaternion_rate_map(quat) -> ca.SX:
    """E (4 x 3) with d quat/dt = E omega for a quaternion (x, y, z, w) and the angular velocity
    omega in the rotated (body) frame: d quat/dt = quat * (omega / 2, 0)."""
    x, y, z, w = quat[0], quat[1], quat[2], quat[3]
    return 0.5 * ca.vertcat(ca.horzcat(w, -z, y), ca.horzcat(z, w, -x), ca.horzcat(-y, x, w), ca.horzcat(-x, -y, -z))


def axis_rotation(axis, angle) -> ca.SX:
    """Rotation by `angle` (rad) about the unit `axis` (Rodrigues)."""
    k = ca.DM(axis)
    K = ca.skew(k)
    return ca.DM.eye(3) + ca.sin(angle) * K + (1 - ca.cos(angle)) * (K @ K)


def _act_inv_motion(R, p, lin, ang):
    """Motion (lin, ang) expressed in a parent frame, re-expressed in the child frame (R, p)."""
    return R.T @ (lin - ca.cross(p, ang)), R.T @ ang


def _act_force(R, p, f, n):
    """Force (f, n) in a child frame (R, p), expressed in the parent frame."""
    f2 = R @ f
    return f2, R @ n + ca.cross(p, f2)


def _cross_motion(lin, ang, lin2, ang2):
    return ca.cross(ang, lin2) + ca.cross(lin, ang2), ca.cross(ang, ang2)


def _cross_force(lin, ang, f, n):
    return ca.cross(ang, f), ca.cross(ang, n) + ca.cross(lin, f)


def _inertia_times(body: Body, lin, ang):
    """Spatial inertia of `body` times the motion (lin, ang): (m (v - c x w), I_c w + c x (m (v - c x w)))."""
    c = ca.DM(body.com)
    h = body.mass * (lin - ca.cross(c, ang))
    return h, ca.DM(np.array(body.inertia)) @ ang + ca.cross(c, h)


def _joint_motion(bodies: list[Body], q, v):
    """Per body: placement (R, p) in its parent for configuration q, joint velocity slice
    (index into v, width) and configuration slice start."""
    out, iq, iv = [], 0, 0
    for b in bodies:
        R0, p0 = ca.DM(np.array(b.placement[0])), ca.DM(np.array(b.placement[1]))
        if b.kind == "free":
            R, p = R0 @ quat_to_rot(q[iq + 3:iq + 7]), R0 @ q[iq:iq + 3] + p0
            out.append((R, p, iv, 6))
            iq, iv = iq + 7, iv + 6
        elif b.kind == "revolute":
            out.append((R0 @ axis_rotation(b.axis, q[iq]), p0, iv, 1))
            iq, iv = iq + 1, iv + 1
        else:
            raise ValueError(f"body {b.name}: joint kind {b.kind!r} is not supported (free, revolute)")
    return out


def _subspace(body: Body, dq):
    """Joint motion S dq as (lin, ang) in the body frame."""
    if body.kind == "free":
        return dq[0:3], dq[3:6]
    return ca.DM.zeros(3), ca.DM(body.axis) * dq[0]


def gravity_vector(gravity) -> np.ndarray:
    """The world's gravity acceleration (3, m/s^2): g along -z for a number g, else the 3-vector
    itself (a tilted gravity stands for an inclined ground)."""
    g = np.asarray(gravity, dtype=float)
    return np.array([0.0, 0.0, -float(g)]) if g.ndim == 0 else g.reshape(3)


def inverse_dynamics(bodies: list[Body], q, v, a, gravity=9.81):
    """Generalized forces tau (nv) that produce accelerations a at (q, v): RNEA (module docstring).
    gravity: a number g (along -z, m/s^2) or the gravity vector (`gravity_vector`)."""
    joints = _joint_motion(bodies, q, v)
    up = ca.DM(-gravity_vector(gravity))
    vel, acc, force = [], [], []
    for i, (b, (R, p, iv, w)) in enumerate(zip(bodies, joints)):
        if b.parent < 0:
            v_lin, v_ang = ca.DM.zeros(3), ca.DM.zeros(3)
            a_lin, a_ang = R.T @ up, ca.DM.zeros(3)  # -gravity, in the body
        else:
            v_lin, v_ang = _act_inv_motion(R, p, *vel[b.parent])
            a_lin, a_ang = _act_inv_motion(R, p, *acc[b.parent])
        sj_lin, sj_ang = _subspace(b, v[iv:iv + w])
        sa_lin, sa_ang = _subspace(b, a[iv:iv + w])
        v_lin, v_ang = v_lin + sj_lin, v_ang + sj_ang
        c_lin, c_ang = _cross_motion(v_lin, v_ang, sj_lin, sj_ang)
        a_lin, a_ang = a_lin + sa_lin + c_lin, a_ang + sa_ang + c_ang
        vel.append((v_lin, v_ang))
        acc.append((a_lin, a_ang))
        h_lin, h_ang = _inertia_times(b, v_lin, v_ang)
        ia_lin, ia_ang = _inertia_times(b, a_lin, a_ang)
        x_lin, x_ang = _cross_force(v_lin, v_ang, h_lin, h_ang)
        force.append([ia_lin + x_lin, ia_ang + x_ang])
    tau = [None] * len(bodies)
    for i in range(len(bodies) - 1, -1, -1):
        b, (R, p, iv, w) = bodies[i], joints[i]
        f, n = force[i]
        tau[i] = ca.vertcat(f, n) if b.kind == "free" else ca.DM(b.axis).T @ n
        if b.parent >= 0:
            pf, pn = _act_force(R, p, f, n)
            force[b.parent][0] = force[b.parent][0] + pf
            force[b.parent][1] = force[b.parent][1] + pn
    return ca.vertcat(*tau)


def _motion_transform(R, p) -> ca.SX:
    """X (6 x 6): a motion (lin, ang) in the parent frame re-expressed in the child frame (R, p)
    (`_act_inv_motion` as a matrix); X^T maps a child force (f, n) into the parent."""
    Rt = R.T
    return ca.vertcat(ca.horzcat(Rt, -Rt @ ca.skew(p)), ca.horzcat(ca.SX.zeros(3, 3), Rt))


def _symmetric(rows) -> ca.SX:
    """The symmetric matrix whose upper triangle is rows[i][j] (j >= i)."""
    n = len(rows)
    out = ca.SX(n, n)
    for i in range(n):
        for j in range(i, n):
            out[i, j] = rows[i][j]
            out[j, i] = rows[i][j]
    return out


def _rotated(R, M) -> ca.SX:
    """R M R^T for a symmetric M, each entry of the upper triangle computed once."""
    RM = R @ M
    return _symmetric([[ca.dot(RM[i, :], R[j, :]) if j >= i else None for j in range(3)] for i in range(3)])


def _inertia_to_parent(R, p, Ia: ca.SX) -> ca.SX:
    """X^T Ia X for the motion transform X of the child frame (R, p) (`_motion_transform`): a
    symmetric articulated inertia (lin, ang) carried into the parent frame. By blocks, with
    A, B, C = R Ia_ll R^T, R Ia_la R^T, R Ia_aa R^T and P = [p]x:
    [[A, B - A P], [(B - A P)^T, C + P B + (P B)^T - P A P]], the symmetric blocks' upper
    triangles computed once (a dense 6 x 6 product costs about twice as much)."""
    P = ca.skew(p)
    A = _rotated(R, Ia[0:3, 0:3])
    C = _rotated(R, Ia[3:6, 3:6])
    B = R @ Ia[0:3, 3:6] @ R.T
    TR = B - A @ P
    PB, PAP = P @ B, P @ A @ P
    BR = _symmetric([[C[i, j] + PB[i, j] + PB[j, i] - PAP[i, j] if j >= i else None for j in range(3)]
                     for i in range(3)])
    return ca.vertcat(ca.horzcat(A, TR), ca.horzcat(TR.T, BR))


def _spatial_inertia(body: Body) -> ca.DM:
    """The body's 6 x 6 spatial inertia in its joint frame, (lin, ang) motion to (f, n) force
    (`_inertia_times` as a matrix)."""
    m, C = body.mass, ca.skew(ca.DM(body.com))
    Ic = ca.DM(np.array(body.inertia))
    return ca.vertcat(ca.horzcat(m * ca.DM.eye(3), -m * C), ca.horzcat(m * C, Ic - m * C @ C))


def _motion_cross(lin, ang) -> ca.SX:
    """(lin, ang) x*: the 6 x 6 matrix of the spatial motion cross product (`_cross_motion`)."""
    L, A = ca.skew(lin), ca.skew(ang)
    return ca.vertcat(ca.horzcat(A, L), ca.horzcat(ca.SX.zeros(3, 3), A))


def _spd_solve(A: ca.SX, b: ca.SX) -> ca.SX:
    """A^-1 b for a symmetric positive definite A by its Cholesky factor, written out (a
    floating base's 6 x 6 articulated inertia: far fewer operations than CasADi's general solve)."""
    n = A.shape[0]
    L = [[None] * n for _ in range(n)]
    for j in range(n):
        d = A[j, j] - sum((L[j][k] * L[j][k] for k in range(j)), ca.SX(0))
        L[j][j] = ca.sqrt(d)
        for i in range(j + 1, n):
            L[i][j] = (A[i, j] - sum((L[i][k] * L[j][k] for k in range(j)), ca.SX(0))) / L[j][j]
    y = [None] * n
    for i in range(n):
        y[i] = (b[i] - sum((L[i][k] * y[k] for k in range(i)), ca.SX(0))) / L[i][i]
    x = [None] * n
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - sum((L[k][i] * x[k] for k in range(i + 1, n)), ca.SX(0))) / L[i][i]
    return ca.vertcat(*x)


def forward_dynamics(bodies: list[Body], q, v, tau, external=None, gravity=9.81) -> ca.SX:
    """dv/dt (nv) at (q, v) under generalized forces tau (nv) and external forces: the
    articulated-body algorithm (Featherstone, Rigid Body Dynamics Algorithms, 2008, Table 7.1),
    the same accelerations as M^-1 (tau - h + sum J^T f) without forming M or J. external: None
    or per body None or a spatial force (f, n) (N, N m) acting on it, in its joint frame. gravity:
    as `inverse_dynamics`'s (the root accelerates by -gravity, RNEA's trick)."""
    joints = _joint_motion(bodies, q, v)
    nb = len(bodies)
    X, S, c, IA, pA = [None] * nb, [None] * nb, [None] * nb, [None] * nb, [None] * nb
    vel = [None] * nb
    for i, (b, (R, p, iv, w)) in enumerate(zip(bodies, joints)):
        X[i] = _motion_transform(R, p)
        S[i] = ca.DM.eye(6) if b.kind == "free" else ca.vertcat(ca.DM.zeros(3), ca.DM(b.axis))
        vj = S[i] @ v[iv:iv + w]
        vel[i] = vj if b.parent < 0 else X[i] @ vel[b.parent] + vj
        c[i] = _motion_cross(vel[i][0:3], vel[i][3:6]) @ vj  # S constant: c = v x (S dq)
        inertia = _spatial_inertia(b)
        IA[i] = ca.SX(inertia)
        pA[i] = -_motion_cross(vel[i][0:3], vel[i][3:6]).T @ (inertia @ vel[i])  # v x* (I v)
        if external is not None and external[i] is not None:
            pA[i] = pA[i] - ca.vertcat(*external[i])
    U, D, u = [None] * nb, [None] * nb, [None] * nb
    for i in range(nb - 1, -1, -1):
        b, (_, _, iv, w) = bodies[i], joints[i]
        U[i] = IA[i] @ S[i]
        D[i] = S[i].T @ U[i]
        u[i] = tau[iv:iv + w] - S[i].T @ pA[i]
        if b.parent >= 0:  # a 1-dof joint: D is a scalar
            Ud = U[i] / D[i]
            Ia = IA[i] - _symmetric([[U[i][r] * Ud[k] if k >= r else None for k in range(6)] for r in range(6)])
            pa = pA[i] + Ia @ c[i] + Ud * u[i]
            R, p = joints[i][0], joints[i][1]
            IA[b.parent] = IA[b.parent] + _inertia_to_parent(R, p, Ia)
            pA[b.parent] = pA[b.parent] + X[i].T @ pa
    dv = [None] * nb
    acc = [None] * nb
    up = ca.vertcat(ca.DM(-gravity_vector(gravity)), ca.DM.zeros(3))
    for i, b in enumerate(bodies):
        a = X[i] @ (up if b.parent < 0 else acc[b.parent]) + c[i]
        if b.kind == "free":
            dv[i] = _spd_solve(D[i], u[i] - U[i].T @ a)
        else:
            dv[i] = (u[i] - U[i].T @ a) / D[i]
        acc[i] = a + S[i] @ dv[i]
    return ca.vertcat(*dv)


def placements(bodies: list[Body], q) -> list[tuple]:
    """World placement (R, p) of every body's joint frame at configuration q."""
    world = []
    for b, (R, p, _, _) in zip(bodies, _joint_motion(bodies, q, None)):
        if b.parent < 0:
            world.append((R, p))
        else:
            Rp, pp = world[b.parent]
            world.append((Rp @ R, Rp @ p + pp))
    return world


def frame_kinematics(bodies: list[Body], frame: Frame, q, v):
    """World position (3) of `frame` at q and its world linear velocity (3) for velocity v."""
    pos, lin, _ = frame_motion(bodies, frame, q, v)
    return pos, lin


def frame_motion(bodies: list[Body], frame: Frame, q, v):
    """World position (3, m) of `frame` at q, and its world linear (3, m/s) and angular (3, rad/s)
    velocity for velocity v (the angular one is its body's)."""
    joints = _joint_motion(bodies, q, v)
    world = placements(bodies, q)
    vel = []
    for b, (R, p, iv, w) in zip(bodies, joints):
        if b.parent < 0:
            lin, ang = ca.DM.zeros(3), ca.DM.zeros(3)
        else:
            lin, ang = _act_inv_motion(R, p, *vel[b.parent])
        s_lin, s_ang = _subspace(b, v[iv:iv + w])
        vel.append((lin + s_lin, ang + s_ang))
    Rb, pb = world[frame.body]
    r = ca.DM(np.array(frame.placement[1]))
    lin, ang = vel[frame.body]
    return Rb @ r + pb, Rb @ (lin + ca.cross(ang, r)), Rb @ ang


@dataclass(frozen=True)
class Dynamics:
    """CasADi functions of a tree: M(q), h(q, v), and per frame its position p(q) and the
    Jacobian J(q) of its world linear velocity in v (v -> dp/dt)."""

    M: ca.Function
    h: ca.Function
    frame_position: dict
    frame_jacobian: dict


def build_dynamics(bodies: list[Body], frames: list[Frame], nq: int, nv: int, gravity: float = 9.81) -> Dynamics:
    """M(q) = d tau / d a, h(q, v) = tau(q, v, 0), frame positions and Jacobians (see Dynamics)."""
    q, v, a = ca.SX.sym("q", nq), ca.SX.sym("v", nv), ca.SX.sym("a", nv)
    tau = inverse_dynamics(bodies, q, v, a, gravity)
    M = ca.Function("M", [q], [ca.substitute(ca.jacobian(tau, a), v, ca.DM.zeros(nv))])
    h = ca.Function("h", [q, v], [ca.substitute(tau, a, ca.DM.zeros(nv))])
    fpos, fjac = {}, {}
    for fr in frames:
        pos, vel = frame_kinematics(bodies, fr, q, v)
        fpos[fr.name] = ca.Function(f"p_{fr.name}", [q], [pos])
        fjac[fr.name] = ca.Function(f"J_{fr.name}", [q], [ca.jacobian(vel, v)])
    return Dynamics(M, h, fpos, fjac)


def _quat_mul(a, b):
    """Hamilton product of quaternions (x, y, z, w)."""
    ax, ay, az, aw = a[0], a[1], a[2], a[3]
    bx, by, bz, bw = b[0], b[1], b[2], b[3]
    return ca.vertcat(aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                      aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)


def _so3_exp(w):
    """Quaternion (x, y, z, w) of the rotation exp([w]x), smooth at w = 0 (Taylor terms there)."""
    th2 = ca.dot(w, w)
    th = ca.sqrt(th2 + 1e-300)
    small = th2 < 1e-12
    half_sinc = ca.if_else(small, 0.5 - th2 / 48.0, ca.sin(th / 2) / th)
    return ca.vertcat(half_sinc * w, ca.if_else(small, 1.0 - th2 / 8.0, ca.cos(th / 2)))


def integrate(q, v, dt):
    """q (+) v dt on the configuration manifold of a floating-base tree: the base moves along
    the constant body twist (v_lin, w) for dt (the SE(3) exponential, as pinocchio's
    `integrate`), the joints by v dt; the quaternion stays unit. CasADi or numeric in, CasADi out."""
    q, v = ca.DM(q) if isinstance(q, np.ndarray) else q, ca.DM(v) if isinstance(v, np.ndarray) else v
    lin, w = v[0:3] * dt, v[3:6] * dt
    th2 = ca.dot(w, w)
    th = ca.sqrt(th2 + 1e-300)
    small = th2 < 1e-12
    # V(w) = I + (1 - cos th)/th^2 [w]x + (th - sin th)/th^3 [w]x^2, the SE(3) exponential's left Jacobian
    a = ca.if_else(small, 0.5 - th2 / 24.0, (1 - ca.cos(th)) / (th2 + 1e-300))
    b = ca.if_else(small, 1.0 / 6.0 - th2 / 120.0, (th - ca.sin(th)) / (th2 * th + 1e-300))
    W = ca.skew(w)
    step = (ca.DM.eye(3) + a * W + b * (W @ W)) @ lin
    R = quat_to_rot(q[3:7])
    quat = _quat_mul(q[3:7], _so3_exp(w))
    return ca.vertcat(q[0:3] + R @ step, quat / ca.norm_2(quat), q[7:] + v[6:] * dt)
