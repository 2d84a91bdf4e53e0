"""The whole-body layer: a single-rigid-body plan turned into joint commands (compiled C).

Every tick the 3D MPC hands over its plan's next two stages (CoM, Euler angles, foot points)
and its first stage's control (foot velocities, friction-pyramid weights). This layer, one
CasADi function generated to C and compiled once per robot, returns the JointCommand's parts:

    q_des   joint angles that put every foot at its planned point with the base at its planned
            pose (3 damped Newton steps of the model's own foot kinematics, per leg, from the
            measured angles), rad
    v_des   (q_des of stage 2 - q_des of stage 1) / (stage 1's length), rad/s
    tau_ff  h_joints(q, v) - J_joints(q)^T f: the joint torques that press each foot on the
            ground with its planned force f (N, world) and carry the legs' own weight, N m

The plant runs the joint impedance law tau = tau_ff + kp (q_des - q) + kd (v_des - v) at its
own rate (1 kHz): stance legs push with J^T f, swing legs follow the planned foot path.
`srb_state(q, v)` is the measured robot as the MPC's state (same library); its feet are read
at height >= 0 (the plan's ground is rigid, mpc.centroidal.ocp).
"""
from __future__ import annotations

import casadi as ca
import numpy as np

from robots.model import RobotModel

from .ocp import CentroidalOcp, euler_to_rot

IK_ITERATIONS = 3
IK_DAMPING = 1e-6  # m^2: Levenberg-Marquardt damping of the leg IK near full stretch


def rot_to_euler(R):
    """ZYX Euler angles (roll, pitch, yaw) of a rotation matrix, rad."""
    return ca.vertcat(ca.atan2(R[2, 1], R[2, 2]), ca.asin(ca.fmin(ca.fmax(-R[2, 0], -1.0), 1.0)), ca.atan2(R[1, 0], R[0, 0]))


def euler_to_quat(theta):
    """Unit quaternion (x, y, z, w) of ZYX Euler angles (roll, pitch, yaw)."""
    cr, sr = ca.cos(theta[0] / 2), ca.sin(theta[0] / 2)
    cp, sp = ca.cos(theta[1] / 2), ca.sin(theta[1] / 2)
    cy, sy = ca.cos(theta[2] / 2), ca.sin(theta[2] / 2)
    return ca.vertcat(sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy,
                      cr * cp * cy + sr * sp * sy)


def leg_joints(model: RobotModel) -> list[np.ndarray]:
    """For each foot, the indices (into the joints, 0..nu-1) of the joints that move it: the
    nonzero columns of its Jacobian at q0 (a tree: each joint moves one foot)."""
    from robots import numeric

    Jn, Jt = numeric(model, verbose=False).contact_jacobians(model.q0)
    nt = model.n_tangent
    legs = []
    for i in range(model.nc):
        rows = np.vstack([Jn[i], Jt[nt * i: nt * (i + 1)]])[:, 6:]
        legs.append(np.flatnonzero(np.abs(rows).sum(axis=0) > 1e-9))
    used = np.concatenate(legs)
    if len(set(used.tolist())) != len(used) or any(len(leg) != 3 for leg in legs):
        raise ValueError(f"{model.name}: the 3D MPC's leg IK needs three joints per foot, each moving one foot; "
                         f"found {[leg.tolist() for leg in legs]}")
    return legs


def build_layer(model: RobotModel, ocp: CentroidalOcp) -> list[ca.Function]:
    """The CasADi functions `srb_state(q, v) -> x` and `joint_command(q, v, x1, x2, u0) ->
    (q_des, v_des, tau_ff)` (module docstring)."""
    srb, lay = ocp.srb, ocp.layout
    nc, nu = srb.nc, model.nu
    q, v = model.q, model.v
    quat = q[3:7]
    from robots.spatial import quat_to_rot

    R = quat_to_rot(quat)
    cb = ca.DM(srb.com_offset)
    feet = ca.reshape(model.contact_points().T, 3 * nc, 1)  # (p_1, ..., p_nc), world
    # the plan's ground is rigid: a loaded foot of a compliant plant, sunk a millimetre or two,
    # is read as standing on it (height clamped at 0)
    feet_read = ca.vertcat(*[ca.vertcat(feet[3 * i: 3 * i + 2], ca.fmax(feet[3 * i + 2], 0.0)) for i in range(nc)])
    x_meas = ca.vertcat(q[:3] + R @ cb, rot_to_euler(R), R @ (v[:3] + ca.cross(v[3:6], cb)), v[3:6], feet_read)
    srb_state = ca.Function("srb_state", [q, v], [x_meas], ["q", "v"], ["x"])

    legs = leg_joints(model)
    foot_jacobian = ca.jacobian(feet, q[7:])  # d feet / d joints
    point_fn = ca.Function("points", [q], [feet])
    jac_fn = ca.Function("foot_jacobian", [q], [foot_jacobian])

    def ik(x_plan, joints):
        c, th = x_plan[0:3], x_plan[3:6]
        Rp = euler_to_rot(th)
        base = ca.vertcat(c - Rp @ cb, euler_to_quat(th))
        for _ in range(IK_ITERATIONS):
            qk = ca.vertcat(base, joints)
            err = x_plan[12: 12 + 3 * nc] - point_fn(qk)
            J = jac_fn(qk)
            dq = ca.SX.zeros(nu)
            for i, leg in enumerate(legs):
                Ji = J[3 * i: 3 * i + 3, leg.tolist()]
                dq[leg.tolist()] = ca.solve(Ji.T @ Ji + IK_DAMPING * ca.SX.eye(3), Ji.T @ err[3 * i: 3 * i + 3])
            joints = joints + dq
        return joints

    x1, x2 = ca.SX.sym("x1", lay.nx), ca.SX.sym("x2", lay.nx)
    u0 = ca.SX.sym("u0", lay.nu)
    q_des = ik(x1, q[7:])
    q_des2 = ik(x2, q_des)
    v_des = (q_des2 - q_des) / float(ocp.stage_lengths()[min(1, ocp.options.n_stages - 1)])
    forces = ca.reshape(ocp.forces(x_meas, u0).T, 3 * nc, 1)  # (f_1, ..., f_nc), world, N
    tau_ff = model.bias[6:] - foot_jacobian.T @ forces
    command = ca.Function("joint_command", [q, v, x1, x2, u0], [q_des, v_des, tau_ff],
                          ["q", "v", "x1", "x2", "u0"], ["q_des", "v_des", "tau_ff"])
    return [srb_state, command]
