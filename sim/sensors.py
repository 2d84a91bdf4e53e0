"""The `hardware` sensor set: what a legged robot's own sensors give, made from a plant's true
states (docs/ESTIMATION.md, "The sensor model"; the numbers are robots/sensors.py's).

    sensors = SensorModel(model, spec, period_s=0.01, seed=0)
    reading = sensors.read(state)      # once per control tick, after the plant stepped

A reading (READING_FIELDS, arrays in the robot's actuator and contact order):
- q_joint, v_joint, tau_joint (nu): encoder positions quantised to the encoder's resolution,
  the drive's velocity with white noise, the drive's torque estimate with noise, quantised;
- gyro, accel (3): the IMU's mean angular rate and mean specific force (acceleration minus
  gravity) over the control period, in the IMU frame, each with white noise and a bias that
  walks. A mean over the period is what an IMU's delta-angle and delta-velocity outputs give;
  it is computed exactly from the two states' orientations and IMU-point velocities, so it
  holds at any plant rate. White noise of density d (unit/sqrt(Hz)) averages to d / sqrt(T);
- foot_force (nc): each foot's normal force magnitude with noise (>= 0).

No base position, orientation or velocity. Every reading is `spec.latency_s` old: it is
interpolated between the two ticks around t - latency (kept in a short history).
"""
from __future__ import annotations

from collections import deque

import numpy as np

from robots.rotations import rotation_exp, rotation_log, rotation_matrix
from robots.sensors import SensorSpec, imu_placement

READING_FIELDS = ("q_joint", "v_joint", "tau_joint", "gyro", "accel", "foot_force")


class SensorModel:
    """Readings of the `hardware` set (module docstring) from a floating-base plant's states.

    model: the plant's RobotModel; spec: its SensorSpec (already scaled by the run's noise
    scale); period_s: the control period the readings are made at (s); seed: the noise's."""

    def __init__(self, model, spec: SensorSpec, *, period_s: float, seed: int = 0):
        from sim.protocol import actuated_joints, actuated_positions

        if not model.floating_base:
            raise ValueError(f"{model.name}: the hardware sensor set needs a floating-base robot (an IMU on its base)")
        if not period_s > 0:
            raise ValueError(f"period_s must be > 0, got {period_s}")
        self.model, self.spec, self.period = model, spec, float(period_s)
        self.iq, self.iv = actuated_positions(model), actuated_joints(model)
        self.r_imu, self.R_imu = imu_placement(model)
        self.g = np.array([0.0, 0.0, -model.gravity])
        self.rng = np.random.default_rng(seed)
        self.gyro_bias = self.rng.normal(0.0, spec.gyro_bias_init, 3)
        self.accel_bias = self.rng.normal(0.0, spec.accel_bias_init, 3)
        self._last = None  # (R, IMU point velocity in the world) of the previous state
        self._history: deque = deque(maxlen=2 + int(np.ceil(spec.latency_s / self.period)))

    def _true(self, state) -> dict:
        """The exact (noise-free, undelayed) reading at `state`: joint values, the IMU's mean rate
        and specific force since the previous state, foot normal forces."""
        q, v = np.asarray(state.q, float), np.asarray(state.v, float)
        R = rotation_matrix(q[3:7] / np.linalg.norm(q[3:7]))
        omega = v[3:6]
        u = R @ (v[0:3] + np.cross(omega, self.r_imu))  # the IMU point's velocity, world frame
        R0, u0 = self._last if self._last is not None else (R, u)
        self._last = (R, u)
        T = self.period
        dtheta = rotation_log(R0.T @ R)
        R_mid = R0 @ rotation_exp(0.5 * dtheta)
        rate = dtheta / T if dtheta.any() else omega  # the first reading: no previous state, the rate now
        accel_world = (u - u0) / T
        return {"q_joint": q[self.iq], "v_joint": v[self.iv], "tau_joint": np.asarray(state.tau, float),
                "gyro": self.R_imu.T @ rate, "accel": self.R_imu.T @ (R_mid.T @ (accel_world - self.g)),
                "foot_force": np.abs(np.asarray(state.force, float)[:, 0])}

    def read(self, state) -> dict[str, np.ndarray]:
        """The reading STATE carries after `state` (one call per control tick, in order)."""
        s, T, rng = self.spec, self.period, self.rng
        self._history.append((float(state.t), self._true(state)))
        exact = self._delayed(float(state.t) - s.latency_s)
        self.gyro_bias += rng.normal(0.0, s.gyro_bias_walk * np.sqrt(T), 3)
        self.accel_bias += rng.normal(0.0, s.accel_bias_walk * np.sqrt(T), 3)
        nu, nc = len(self.iq), len(exact["foot_force"])
        res = s.encoder_resolution_rad
        out = {
            "q_joint": np.round(exact["q_joint"] / res) * res if res > 0 else exact["q_joint"].copy(),
            "v_joint": exact["v_joint"] + rng.normal(0.0, s.joint_velocity_noise, nu),
            "tau_joint": exact["tau_joint"] + rng.normal(0.0, s.torque_noise_nm, nu),
            "gyro": exact["gyro"] + self.gyro_bias + rng.normal(0.0, s.gyro_noise_density / np.sqrt(T), 3),
            "accel": exact["accel"] + self.accel_bias + rng.normal(0.0, s.accel_noise_density / np.sqrt(T), 3),
            "foot_force": np.maximum(0.0, exact["foot_force"] * (1.0 + rng.normal(0.0, s.foot_force_relative, nc))
                                     + rng.normal(0.0, s.foot_force_noise_n, nc)),
        }
        if s.torque_resolution_nm > 0:
            out["tau_joint"] = np.round(out["tau_joint"] / s.torque_resolution_nm) * s.torque_resolution_nm
        return out

    def _delayed(self, t: float) -> dict:
        """The exact reading at time t, linear between the two kept ticks around it (the oldest
        kept one before the history covers t)."""
        hist = self._history
        if len(hist) == 1 or t >= hist[-1][0]:
            return hist[-1][1]
        for (t0, a), (t1, b) in zip(list(hist)[-2::-1], list(hist)[::-1]):  # newest pair first
            if t >= t0:
                w = (t - t0) / (t1 - t0) if t1 > t0 else 1.0
                return {k: a[k] + w * (b[k] - a[k]) for k in a}
        return hist[0][1]
