"""The estimator's tick, compiled by numba: the attitude filter and the Kalman filter of
estimation/estimator.py in one call, with the leg kinematics called as generated C
(estimation/legs.py). The arrays are the estimator's own; this module only does arithmetic.

PARAMS (the `params` vector's layout) names each number the kernel reads.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from robots import ccall
from robots.ccall import call_flat

PARAMS = ("T", "kp", "ki", "g", "smoothing", "accel_noise", "base_velocity_walk", "stance_foot_walk",
          "swing_foot_walk", "kinematics_std", "stance_velocity_std", "foot_height_std", "accel_bias_walk",
          "contact_on_n", "contact_off_n", "r_imu_x", "r_imu_y", "r_imu_z", "slip_gate")
P_INDEX = {name: i for i, name in enumerate(PARAMS)}
UNTRUSTED = 1e4  # variance of a measurement the filter must ignore (a swinging foot's velocity and height)


@njit(cache=True)
def _cross(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


@njit(cache=True)
def _exp(w):
    angle = np.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    K = np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
    if angle < 1e-9:
        return np.eye(3) + K + 0.5 * (K @ K)
    return np.eye(3) + np.sin(angle) / angle * K + (1.0 - np.cos(angle)) / (angle * angle) * (K @ K)


@njit(cache=True)
def tick(x, P, R, bg, accel_world, contact, gyro, accel, q_joint, v_joint, foot_force, radius, params,
         legs_address, legs_in, legs_out, omega_out, slipped):
    """One estimator tick (estimation/estimator.py's docstring), in place on x (the IMU point's
    position and velocity, the feet, the accelerometer bias), P, R, bg, accel_world and contact;
    omega_out receives the base's angular velocity (rad/s), slipped[i] 1 where a standing foot's
    velocity was refused (it disagreed with the prediction by more than slip_gate, m/s: it slips).
    gyro and accel are in the base frame."""
    T, kp, ki, g = params[0], params[1], params[2], params[3]
    smoothing, accel_noise = params[4], params[5]
    vel_walk, stance_walk, swing_walk = params[6], params[7], params[8]
    kin_std, vel_std, height_std, bias_walk = params[9], params[10], params[11], params[12]
    on_n, off_n = params[13], params[14]
    r_imu = params[15:18]
    slip_gate = params[18]
    n = x.shape[0]
    nc = foot_force.shape[0]
    nu = q_joint.shape[0]
    omega = gyro - bg
    for i in range(3):
        omega_out[i] = omega[i]
    f = accel  # the filter's point is the IMU's: its specific force needs no lever-arm terms
    ba = x[n - 3:n]
    # attitude: towards gravity (the vertical bias out, the base's acceleration out), bias integral
    up = np.array([0.0, 0.0, 1.0])
    f_grav = f.copy()
    f_grav[2] -= ba[2]
    f_grav -= R.T @ accel_world
    sigma = _cross(f_grav / g, R.T @ up)
    for i in range(3):
        bg[i] -= ki * sigma[i] * T
    Rn = R @ _exp((omega + kp * sigma) * T)
    u, s, vt = np.linalg.svd(Rn)
    Rn = u @ vt
    for i in range(3):
        for j in range(3):
            R[i, j] = Rn[i, j]
    # Kalman filter: predict
    x_prev_v = x[3:6].copy()
    a_in = R @ f
    a_in[2] -= g
    F = np.eye(n)
    for i in range(3):
        F[i, 3 + i] = T
        for j in range(3):
            F[i, n - 3 + j] = -0.5 * R[i, j] * T * T
            F[3 + i, n - 3 + j] = -R[i, j] * T
    xn = F @ x
    for i in range(3):
        xn[i] += 0.5 * a_in[i] * T * T
        xn[3 + i] += a_in[i] * T
    for i in range(nc):
        if foot_force[i] > on_n:
            contact[i] = 1.0
        elif foot_force[i] < off_n:
            contact[i] = 0.0
    Q = np.zeros(n)
    for i in range(3):
        Q[i] = (0.5 * T * T * accel_noise) ** 2 + 1e-10
        Q[3 + i] = (accel_noise * T) ** 2 + vel_walk * vel_walk * T
        Q[n - 3 + i] = bias_walk * bias_walk * T
    for i in range(nc):
        walk = stance_walk if contact[i] > 0.5 else swing_walk
        for k in range(3):
            Q[6 + 3 * i + k] = walk * walk * T
    Pp = F @ P @ F.T
    for i in range(n):
        Pp[i, i] += Q[i]
    # measure: leg kinematics (generated C), then each foot's position, and standing feet's velocity and height
    for i in range(nu):
        legs_in[i] = q_joint[i]
    call_flat(legs_address, legs_in.ctypes.data, legs_out.ctypes.data)
    m = 7 * nc
    H = np.zeros((m, n))
    z = np.zeros(m)
    Rm = np.zeros(m)
    for i in range(nc):
        c = legs_out[3 * i:3 * i + 3] - r_imu  # the foot seen from the IMU
        rel = R @ c
        jv = np.zeros(3)
        for k in range(3):
            row = 3 * nc + (3 * i + k) * nu
            for j in range(nu):
                jv[k] += legs_out[row + j] * v_joint[j]
        bottom = c.copy()  # the sphere's bottom point, which sticks (the foot rolls about it)
        bottom[2] -= radius[i]
        foot_vel = R @ (_cross(omega, bottom) + jv)
        stand = contact[i] > 0.5
        if stand:  # a standing foot whose velocity disagrees with the prediction by more than the gate slips
            dv = -foot_vel - xn[3:6]
            if np.sqrt(dv[0] * dv[0] + dv[1] * dv[1] + dv[2] * dv[2]) > slip_gate:
                stand = False
                slipped[i] = 1.0
        for k in range(3):
            H[3 * i + k, k] = -1.0
            H[3 * i + k, 6 + 3 * i + k] = 1.0
            z[3 * i + k] = rel[k]
            Rm[3 * i + k] = kin_std * kin_std
            H[3 * nc + 3 * i + k, 3 + k] = 1.0
            z[3 * nc + 3 * i + k] = -foot_vel[k]
            Rm[3 * nc + 3 * i + k] = vel_std * vel_std if stand else UNTRUSTED
        H[6 * nc + i, 6 + 3 * i + 2] = 1.0
        z[6 * nc + i] = radius[i]
        Rm[6 * nc + i] = height_std * height_std if stand else UNTRUSTED
    y = z - H @ xn
    PHt = Pp @ H.T
    S = H @ PHt
    for i in range(m):
        S[i, i] += Rm[i]
    K = np.linalg.solve(S, PHt.T).T
    xn = xn + K @ y
    Pn = (np.eye(n) - K @ H) @ Pp
    for i in range(n):
        x[i] = xn[i]
        for j in range(n):
            P[i, j] = 0.5 * (Pn[i, j] + Pn[j, i])
    # the base's acceleration as the leg-aided velocity gives it, low-passed: the attitude's next input
    for i in range(3):
        accel_world[i] += smoothing * ((x[3 + i] - x_prev_v[i]) / T - accel_world[i])


# numba tracks this file only; ccall's intrinsic is inlined into the cached code above
ccall.drop_stale_cache(_cross, "kernel.", [ccall.__file__])
