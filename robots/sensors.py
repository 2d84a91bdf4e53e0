"""What a legged robot's own sensors give: the data of the plants' `hardware` sensor set.

A floating-base robot carries a `SensorSpec` in `model.params["sensors"]` (a dict of its
fields). sim/sensors.py turns the plant's true state into readings from it, and the
estimator (estimation/) reads the same numbers for its noise model. `sensor_spec(model)` is
the spec of a model: its own, else `GO1_SENSORS`.

GO1_SENSORS are go1's values. Each field's comment cites its source; where Unitree publishes
no figure the comment says which stand-in is used.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np


@dataclass(frozen=True)
class SensorSpec:
    """Noise, bias, resolution and latency of a legged robot's sensors (SI units).

    Joint encoders: positions quantised to `encoder_resolution_rad`; velocities with white
    noise `joint_velocity_noise` (rad/s, the drive's filtered velocity); torques as the drive
    estimates them from its current, with white noise `torque_noise_nm` and quantised to
    `torque_resolution_nm`.
    IMU (at the robot's IMU frame, params["imu"]): gyro white noise density
    `gyro_noise_density` (rad/s/sqrt(Hz)), a bias that starts N(0, `gyro_bias_init`) per axis and
    walks with `gyro_bias_walk` (rad/s/sqrt(s)); specific force likewise (`accel_*`, m/s^2).
    Foot contact sensors: the normal force's magnitude with white noise `foot_force_noise_n`
    plus `foot_force_relative` of its value.
    `latency_s`: every reading is this old when STATE carries it.
    """

    encoder_resolution_rad: float
    joint_velocity_noise: float
    torque_noise_nm: float
    torque_resolution_nm: float
    gyro_noise_density: float
    gyro_bias_init: float
    gyro_bias_walk: float
    accel_noise_density: float
    accel_bias_init: float
    accel_bias_walk: float
    foot_force_noise_n: float
    foot_force_relative: float
    latency_s: float

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"SensorSpec.{f.name} must be a finite number >= 0, got {value!r}")

    def scaled(self, noise_scale: float) -> "SensorSpec":
        """This spec with every noise, bias and bias walk multiplied by noise_scale (resolution
        and latency unchanged); 0 gives exact, bias-free readings (still quantised)."""
        if isinstance(noise_scale, bool) or not isinstance(noise_scale, (int, float)) or \
                not math.isfinite(noise_scale) or noise_scale < 0:
            raise ValueError(f"sensor_noise_scale must be a finite number >= 0, got {noise_scale!r}")
        keep = ("encoder_resolution_rad", "torque_resolution_nm", "latency_s")
        return SensorSpec(**{k: v if k in keep else v * noise_scale for k, v in asdict(self).items()})


_DEG = math.pi / 180.0
GO1_SENSORS = SensorSpec(
    # Unitree publishes no encoder figure for Go1. Its drives' protocol (unitree_actuator_sdk,
    # motor_msg_GO-M8010-6.h and motor_msg_A1B1.h) carries the rotor position as q15, 2^15
    # counts per rotor turn; behind the smaller of Go1's reductions (6.33 at the hip, ~9.5 at
    # the knee, third-party drivers' constants) that is 2 pi / (2^15 * 6.33) rad at the joint
    encoder_resolution_rad=2.0 * math.pi / (2 ** 15 * 6.33),
    # the drive reports its own speed (W, q7 rad/s in the same protocol), filtered; no noise
    # figure is published: 0.02 rad/s, one encoder step per 5 ms at the joint, is the stand-in
    joint_velocity_noise=0.02,
    # tauEst is the drive's estimate from its current, sent in 1/256 N m (q8; the same headers,
    # and free-dog-sdk's LowState decoder); 0.2 N m of noise is a stand-in (none published)
    torque_noise_nm=0.2,
    torque_resolution_nm=1.0 / 256.0,
    # Unitree says only that Go1's IMU has 6 axes and no magnetometer (unitree_legged_sdk issue
    # 38), not its part. The figures are the Bosch BMI088's datasheet (bst-bmi088-ds001), a MEMS
    # IMU of this class: gyro 0.014 deg/s/sqrt(Hz), accelerometer 175 ug/sqrt(Hz) (rev 1.3).
    # The datasheet's offsets (gyro 1 deg/s, accelerometer 20 mg) are removed by the calibration
    # a robot does at start-up; what is left is taken as a tenth of the gyro's and a quarter of
    # the accelerometer's. The bias walk reaches Bosch's 2 deg/h bias stability in ~100 s.
    gyro_noise_density=0.014 * _DEG,
    gyro_bias_init=0.1 * _DEG,
    gyro_bias_walk=2.0 / 3600.0 * _DEG / math.sqrt(100.0),
    accel_noise_density=175e-6 * 9.81,
    accel_bias_init=5e-3 * 9.81,
    accel_bias_walk=1e-4 * 9.81,
    # Go1's foot sensors are air-pressure sensors read as 12-bit counts (A1 user manual; the
    # GO-M8010-6 feedback), with no published scale to newtons. They are modelled as calibrated
    # to newtons, with 5 N plus 10 % of the load of noise: coarse, as users report them
    foot_force_noise_n=5.0,
    foot_force_relative=0.10,
    # LowState comes at 500 Hz (unitree_legged_sdk's examples, dt = 0.002 s): a reading is on
    # average 1 ms old
    latency_s=1e-3,
)


def sensor_spec(model) -> SensorSpec:
    """The SensorSpec of a floating-base model: params["sensors"] (a dict of SensorSpec fields,
    each checked), else GO1_SENSORS; a ValueError names a bad or missing field."""
    given = (model.params or {}).get("sensors")
    if given is None:
        return GO1_SENSORS
    if isinstance(given, SensorSpec):
        return given
    names = {f.name for f in fields(SensorSpec)}
    if not isinstance(given, dict) or set(given) != names:
        missing = sorted(names - set(given)) if isinstance(given, dict) else sorted(names)
        extra = sorted(set(given) - names) if isinstance(given, dict) else []
        raise ValueError(f"{model.name}: params['sensors'] must give every SensorSpec field (missing {missing}, "
                         f"unknown {extra}; robots/sensors.py)")
    return SensorSpec(**given)


def imu_placement(model) -> tuple[np.ndarray, np.ndarray]:
    """(position (3,) m, rotation (3, 3)) of the IMU frame in the base frame: params["imu"]
    ({"position", "rotation"}), else the base frame itself."""
    imu = (model.params or {}).get("imu") or {}
    position = np.asarray(imu.get("position", np.zeros(3)), dtype=float)
    rotation = np.asarray(imu.get("rotation", np.eye(3)), dtype=float)
    if position.shape != (3,) or rotation.shape != (3, 3) or not np.allclose(rotation @ rotation.T, np.eye(3), atol=1e-6):
        raise ValueError(f"{model.name}: params['imu'] needs a position (3 numbers, m) and a rotation (3 x 3, "
                         "orthonormal) in the base frame")
    return position, rotation
