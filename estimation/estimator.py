"""The legged-robot state estimator: base pose and velocity from an IMU, joint encoders and foot
contact sensors (docs/ESTIMATION.md says what it does, why, and what it cannot observe).

    est = LeggedEstimator(model, period_s=0.01)
    q, v, contact = est.update(reading)   # a sim/sensors.py reading (or a robot's), each tick

Two filters, each from the literature:
- attitude: the explicit complementary filter of Mahony, Hamel and Pflimlin (IEEE TAC 2008): the
  gyro integrated on SO(3), corrected towards the gravity direction the accelerometer gives
  (after the base's estimated acceleration is taken out), with an integral term that estimates
  the gyro's bias;
- position and velocity: the linear Kalman filter of Bledt et al. (MIT Cheetah 3, IROS 2018),
  as legged_control ships it: state (the IMU point's position and velocity, each foot's
  position, all in the world, plus the accelerometer's bias in the base frame); the prediction
  integrates the specific force rotated by the attitude; each foot gives its position relative
  to the IMU from the leg kinematics, and, while it stands and does not slip (the slip gate),
  the IMU's velocity and its own height (on the ground). The base origin's pose and velocity
  follow from the IMU's placement on the base.

A reading with a non-finite or absurd value (ABSURD) is rejected: counted in `rejected`, and the
tick uses that reading's last good value (a held accelerometer reading with the larger noise
HELD_ACCEL_STD, so the legs correct the velocity it moved). `diverged` says why the estimate
cannot be trusted (covariance grown past its limit, the base below the ground, a non-finite
estimate), "" while it can.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robots.rotations import matrix_to_quat, rotation_exp
from robots.sensors import SensorSpec, imu_placement, sensor_spec

from .kernel import P_INDEX, PARAMS, tick
from .legs import leg_kinematics

# m/s^2: how far a held accelerometer reading may be from the true one a tick later (a trotting
# go1's IMU specific force changes by up to ~15 m/s^2 in 10 ms at a touchdown); the prediction of
# a tick that holds a rejected reading takes it as that tick's accelerometer noise, so the legs
# correct the velocity within a few ticks instead of the ~0.3 s the nominal noise takes
HELD_ACCEL_STD = 20.0
ABSURD = {"gyro": 35.0, "accel": 160.0, "foot_force_per_weight": 20.0, "joint_margin_rad": 0.5,  # rad/s, m/s^2
          "joint_velocity": 200.0, "joint_torque": 1e4}  # rad/s, N m


@dataclass
class EstimatorOptions:
    """Tuning of the estimator (SI units). Attitude: kp (rad/s per unit of direction error) and
    ki (its integral, the gyro bias's rate). Kalman filter standard deviations: process
    noise on the base velocity (m/s/sqrt(s), the model's slack beyond the accelerometer's own
    noise), on a standing foot's position (m/sqrt(s)) and on a swinging one's; the leg
    kinematics' foot position (m), a standing foot's velocity (m/s) and height (m); the
    accelerometer bias's walk (m/s^2/sqrt(s)). Contact: a foot stands when its sensed force
    exceeds contact_force_fraction of the robot's weight shared by its feet; a standing foot
    whose velocity disagrees with the prediction by more than slip_gate (m/s) slips, and its
    velocity and height are not used that tick. Divergence:
    velocity standard deviation above max_velocity_std (m/s), or the base below min_base_z (m)."""

    kp: float = 0.5
    ki: float = 0.01
    accel_smoothing_s: float = 0.05
    base_velocity_walk: float = 0.03
    stance_foot_walk: float = 0.01
    swing_foot_walk: float = 10.0
    kinematics_std: float = 0.005
    stance_velocity_std: float = 0.3
    foot_height_std: float = 0.005
    accel_bias_walk: float = 0.01
    contact_force_fraction: float = 0.6
    slip_gate: float = 0.25
    max_velocity_std: float = 2.0
    min_base_z: float = -0.05


class LeggedEstimator:
    """Base state of a floating-base robot from its hardware sensors (module docstring).

    model: the RobotModel; period_s: the control period between readings (s); spec: the
    sensors' noise (robots/sensors.py; default the model's) for the filters' noise model."""

    def __init__(self, model, *, period_s: float, spec: SensorSpec | None = None,
                 options: EstimatorOptions | None = None):
        self.model, self.T = model, float(period_s)
        self.spec = spec or sensor_spec(model)
        self.o = options or EstimatorOptions()
        self.legs = leg_kinematics(model)  # shared: it holds no state of a run
        self.nc, self.nu = model.nc, model.nu
        self.r_imu, self.R_imu = imu_placement(model)
        self.mass = float(np.asarray(model.params.get("mass_kg", 0.0)))
        self.q_lo = np.asarray(model.q_min, float)[7:] - ABSURD["joint_margin_rad"]
        self.q_hi = np.asarray(model.q_max, float)[7:] + ABSURD["joint_margin_rad"]
        self.n = 6 + 3 * self.nc + 3  # p, v, feet, accelerometer bias
        o, weight = self.o, max(self.mass * model.gravity, 1.0)
        values = {"T": self.T, "kp": o.kp, "ki": o.ki, "g": model.gravity, "smoothing": min(1.0, self.T / max(o.accel_smoothing_s, self.T)),
                  "accel_noise": self.spec.accel_noise_density / np.sqrt(self.T), "base_velocity_walk": o.base_velocity_walk,
                  "stance_foot_walk": o.stance_foot_walk, "swing_foot_walk": o.swing_foot_walk,
                  "kinematics_std": o.kinematics_std, "stance_velocity_std": o.stance_velocity_std,
                  "foot_height_std": o.foot_height_std, "accel_bias_walk": o.accel_bias_walk,
                  "contact_on_n": o.contact_force_fraction * weight / self.nc,
                  "contact_off_n": 0.5 * o.contact_force_fraction * weight / self.nc,
                  "r_imu_x": self.r_imu[0], "r_imu_y": self.r_imu[1], "r_imu_z": self.r_imu[2],
                  "slip_gate": o.slip_gate}
        self._params = np.array([values[name] for name in PARAMS])
        vmax, tmax = ABSURD["joint_velocity"], ABSURD["joint_torque"]
        self._limits = {"q_joint": (self.q_lo, self.q_hi), "v_joint": (-vmax, vmax), "tau_joint": (-tmax, tmax),
                        "gyro": (-ABSURD["gyro"], ABSURD["gyro"]), "accel": (-ABSURD["accel"], ABSURD["accel"]),
                        "foot_force": (0.0, ABSURD["foot_force_per_weight"] * weight)}
        self._legs_in = np.zeros(self.nu)
        self._legs_out = np.zeros(self.legs.compiled.n_out)
        self._slipped = np.zeros(self.nc)
        self.slips = 0  # standing-foot velocities refused as slips (the slip gate), over the run
        self.rejected: dict[str, int] = {}
        self._held: set[str] = set()  # the readings this tick holds at their last good value
        self.diverged = ""
        self.ticks = 0
        self._started = False

    @staticmethod
    def warm_up(model, period_s: float = 0.01) -> None:
        """Compile the kernel (numba caches it on disk) and build the leg kinematics (kept per
        model, `leg_kinematics`): call it before a run's clock starts, so that neither the first
        tick nor the CONFIG that starts the estimator pays for them. Feeds one reading of the
        robot standing still at q0."""
        est = LeggedEstimator(model, period_s=period_s)
        est.update({"q_joint": np.asarray(model.q0, float)[7:], "v_joint": np.zeros(model.nu),
                    "tau_joint": np.zeros(model.nu), "gyro": np.zeros(3),
                    "accel": est.R_imu.T @ np.array([0.0, 0.0, model.gravity]),
                    "foot_force": np.full(model.nc, max(est.mass * model.gravity, 1.0) / model.nc)})

    # ------------------------------------------------------------------ start
    def _start(self, r: dict) -> None:
        """First reading: the robot is at rest on its feet; roll and pitch from the accelerometer,
        yaw 0, the lowest foot on the ground, x = y = 0."""
        f = self.R_imu @ r["accel"]
        up = f / np.linalg.norm(f)  # the world's z in the base frame
        z = np.array([0.0, 0.0, 1.0])
        axis = np.cross(up, z)
        s, c = np.linalg.norm(axis), float(up @ z)
        self.R = np.eye(3) if s < 1e-9 else rotation_exp(axis / s * np.arctan2(s, c))  # base -> world: up -> z
        self.bg = np.zeros(3)
        centres, _ = self.legs(r["q_joint"])
        feet = centres @ self.R.T
        base = np.array([0.0, 0.0, float(np.max(self.legs.radius - feet[:, 2]))])
        p = base + self.R @ self.r_imu  # the filter's point is the IMU's
        self.x = np.concatenate([p, np.zeros(3), (feet + base).ravel(), np.zeros(3)])
        self.P = np.eye(self.n) * 1e-4
        self.P[3:6, 3:6] = np.eye(3) * 0.01
        self.P[-3:, -3:] = np.eye(3) * self.spec.accel_bias_init ** 2 + np.eye(3) * 1e-6
        self._contact = np.ones(self.nc)
        self.omega = np.zeros(3)
        self.accel_world = np.zeros(3)
        self.last = {k: np.array(v, float) for k, v in r.items()}
        self._started = True

    # ------------------------------------------------------------------ checks
    def _check(self, r: dict) -> dict:
        """The reading with every absurd part (ABSURD; a missing, misshapen or non-finite array)
        replaced by the last good one, counted in `rejected` by name (and in `_held`, this
        tick's names)."""
        good, self._held = {}, set()
        for name, (lo, hi) in self._limits.items():
            last = self.last[name]
            try:
                a = np.array(r[name], dtype=float)  # a writable copy: numba compiles one signature
            except (KeyError, TypeError, ValueError):
                a = None
            if a is None or a.shape != last.shape or not (np.all(a >= lo) and np.all(a <= hi)):  # NaN fails too
                self.rejected[name] = self.rejected.get(name, 0) + 1
                self._held.add(name)
                a = last
            good[name] = a
        self.last = good
        return good

    # ------------------------------------------------------------------ update
    def update(self, reading: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One tick: fuse `reading` (sim/sensors.py READING_FIELDS); return the estimated q (nq:
        base position, quaternion x y z w, joints), v (nv: base-frame linear and angular
        velocity, joint velocities) and the feet's contact (nc bool)."""
        if not self._started:
            self._start({k: np.asarray(v, float) for k, v in reading.items()})
        r = self._check(reading)
        self.ticks += 1
        params = self._params
        if "accel" in self._held:  # the held reading is that much less certain (HELD_ACCEL_STD)
            params = params.copy()
            params[P_INDEX["accel_noise"]] = max(params[P_INDEX["accel_noise"]], HELD_ACCEL_STD)
        tick(self.x, self.P, self.R, self.bg, self.accel_world, self._contact, self.R_imu @ r["gyro"],
             self.R_imu @ r["accel"], r["q_joint"], r["v_joint"], r["foot_force"], self.legs.radius, params,
             self.legs.compiled.address, self._legs_in, self._legs_out, self.omega, self._slipped)
        self.slips += int(self._slipped.sum())
        self._slipped[:] = 0.0
        self._check_divergence()
        base = self.x[0:3] - self.R @ self.r_imu  # from the IMU point to the base origin
        w, a = self.omega, self.r_imu
        v_base = self.R.T @ self.x[3:6] - np.array([w[1] * a[2] - w[2] * a[1], w[2] * a[0] - w[0] * a[2],
                                                     w[0] * a[1] - w[1] * a[0]])  # less omega x r_imu
        q = np.concatenate([base, matrix_to_quat(self.R), r["q_joint"]])
        v = np.concatenate([v_base, self.omega, r["v_joint"]])
        return q, v, self.contact

    @property
    def contact(self) -> np.ndarray:
        """Which feet the estimator takes as standing (nc bool)."""
        return self._contact > 0.5

    def _check_divergence(self) -> None:
        if self.diverged:
            return
        x, P = self.x, self.P
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(P))):
            self.diverged = "the estimate is not finite"
        elif np.sqrt(np.max(np.diag(P)[3:6])) > self.o.max_velocity_std:
            self.diverged = (f"the velocity's standard deviation grew to {np.sqrt(np.max(np.diag(P)[3:6])):.2f} m/s "
                             f"(limit {self.o.max_velocity_std} m/s)")
        elif (base_z := x[2] - self.R[2] @ self.r_imu) < self.o.min_base_z:
            self.diverged = f"the estimated base is {base_z:.3f} m high, below the ground"

    @property
    def gyro_bias(self) -> np.ndarray:
        """The gyro bias estimate, IMU frame, rad/s."""
        return self.R_imu.T @ self.bg

    @property
    def accel_bias(self) -> np.ndarray:
        """The accelerometer bias estimate, IMU frame, m/s^2."""
        return self.R_imu.T @ self.x[-3:]
