"""The 3D MPC's robot-dependent settings, derived from the model (no per-robot tuning).

Every number here is a dimensionless constant times a scale read off the robot's single
rigid body (`SingleRigidBody.from_model`): its mass m, standing CoM height h0, gravity g, the
number of feet nc, and the joint-space inertia of the legs at the standing pose. The constants
were chosen on go1 (13.1 kg, h0 0.266 m) so that go1 keeps the settings it was tuned with;
another robot gets the same behaviour in its own units (docs/MPC.md, "Derived settings").

    joint stiffness   kp = KP_PER_LOAD_MOMENT m g h0 / nc         go1: 60 N m/rad
                      (a leg's joints deflect 1 / 7 rad under the moment of its share of the weight)
    joint damping     kd = 2 ZETA sqrt(kp I_leg)                  go1: 2.0 N m s/rad
                      (I_leg: the mean of the mass matrix's joint diagonal at q0, kg m^2);
                      the MPC damps each joint by its own inertia, kd_j = 2 ZETA sqrt(kp M_jj)
                      (go1 2.3, 2.2, 1.3; anymal_c 26, 25, 6.0: its knee, 0.016 kg m^2 against
                      0.31 at the hip, swung at 450 rad/s on the ESS plant under the mean's 21)
    cost weights      `feature_weights`: each feature's error measured in its natural unit
                      (lengths in h0, speeds in sqrt(g h0), rates in sqrt(g / h0))
    contact limits    `ocp.ContactScales`: foot speed box and lift speed (Froude scaling)
    reach box         `srb.REACH_FRACTIONS` of h0

A robot's own `controller_defaults["mpc"]` and the scenario's options override these
(`controller.mpc3d_options`).
"""
from __future__ import annotations

import numpy as np

from robots.model import RobotModel

from .srb import SingleRigidBody

KP_PER_LOAD_MOMENT = 7.0  # 1/rad: kp per (m g h0 / nc)
ZETA = 1.1  # damping ratio of a leg joint's impedance about the leg's inertia


def derived_gains(model: RobotModel, srb: SingleRigidBody | None = None) -> dict:
    """{"kp": N m/rad, "kd": N m s/rad}: the joint impedance the whole-body layer asks the plant
    for, from the robot's weight, standing height and leg inertia (module docstring)."""
    srb = srb if srb is not None else SingleRigidBody.from_model(model)
    kp = KP_PER_LOAD_MOMENT * srb.weight * srb.height / srb.nc
    leg_inertia = float(np.mean(joint_inertias(model)))
    kd = 2.0 * ZETA * np.sqrt(kp * leg_inertia)
    return {"kp": round(float(kp), 3), "kd": round(float(kd), 4)}


def joint_damping(model: RobotModel, kp: float) -> np.ndarray:
    """Per-joint damping (N m s/rad, nu) for stiffness kp: 2 ZETA sqrt(kp M_jj), M_jj the joint's
    own inertia at q0 (kg m^2): each joint critically damped about itself, so a light distal
    joint is not over-damped past what the plant's 1 kHz step resolves."""
    return 2.0 * ZETA * np.sqrt(kp * joint_inertias(model))


def joint_inertias(model: RobotModel) -> np.ndarray:
    """Each joint's own inertia at q0 (kg m^2, nu): the joint block's diagonal of M(q0)."""
    from robots import numeric

    return np.diag(numeric(model, verbose=False).mass_matrix(np.asarray(model.q0)))[6:]


# weight x (natural unit)^2 of each cost feature (go1's weights were 100 / m^2 on the height,
# 50 / rad^2 on roll and pitch, 300 s^2/m^2 on the heading velocity, 300 s^2 on the yaw rate,
# 1 on the other rates and the feet offsets (m), 1e-2 on the controls)
W_HEIGHT, W_TILT, W_SPEED, W_VZ, W_RATE, W_YAW_RATE, W_FEET = 7.1, 50.0, 784.0, 2.6, 37.0, 11000.0, 0.071
W_FOOT_VELOCITY, W_EDGE = 0.026, 1e-2


def feature_weights(ocp) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares weights of the cost features (ocp.cost_x: height, roll, pitch, heading-frame
    velocity, body rates, foot offsets; ocp.cost_u: foot velocities, pyramid edges), each error
    measured in its natural unit: lengths in h0 (m), speeds in sqrt(g h0) (m/s), rates in
    sqrt(g / h0) (1/s)."""
    srb, nc = ocp.srb, ocp.nc
    L2, V2, W2 = srb.height ** 2, srb.gravity * srb.height, srb.gravity / srb.height
    w_x = np.concatenate([[W_HEIGHT / L2, W_TILT, W_TILT], [W_SPEED / V2, W_SPEED / V2, W_VZ / V2],
                          [W_RATE / W2, W_RATE / W2, W_YAW_RATE / W2], np.full(3 * nc, W_FEET / L2)])
    w_u = np.concatenate([np.full(3 * nc, W_FOOT_VELOCITY / V2), np.full(4 * nc, W_EDGE)])
    return w_x, w_u
