"""The plant protocol shared by every simulator (ESS, NMDP, hybrid, baselines).

A plant stands in for the hardware:

    plant = SomePlant(get_robot("hopper"), ...)      # validates its options once
    state = plant.reset(q0, v0)                       # -> PlantState at t = 0
    state = plant.step(command, dt)                   # advance dt seconds under `command`

`command` is a `JointCommand` for the actuated joints. Between controller ticks the plant
runs the joint impedance law of real robots at its own rate:

    tau = tau_ff + kp (q_des - q_j) + kd (v_des - v_j)     (N m or N, clipped to +-u_max)

where q_j, v_j are the actuated joints' positions and velocities. `PlantState` carries what
a simulator knows (contact flags and forces included); the bridge decides what of it a
controller may see.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from robots.model import RobotModel, check_vector


@dataclass
class PlantState:
    """State of a plant at time t.

    t: simulated time, s. q (nq), v (nv): generalized positions and velocities.
    contact: (nc,) bool, which contacts are active. force: (nc, 2) contact force at the end
    of the step, (normal, tangential) in N. tau: (nu,) the actuator torques applied last, N m.
    violation: "" while every invariant of `sim.invariants` holds (finite state, no contact
    deeper than the plant's `penetration_limit_m`); otherwise one line saying what failed, e.g.
    "contact foot gap -0.034 m below -0.020 m limit at t=1.23 s". A plant with a violation keeps
    returning its last good state with it until reset (the run should end).
    """

    t: float
    q: np.ndarray
    v: np.ndarray
    contact: np.ndarray
    force: np.ndarray
    tau: np.ndarray
    violation: str = ""

    def copy(self) -> "PlantState":
        """A deep copy (plants may update their state arrays in place)."""
        return PlantState(self.t, self.q.copy(), self.v.copy(), self.contact.copy(), self.force.copy(),
                          self.tau.copy(), self.violation)


@dataclass
class JointCommand:
    """Joint-level command for the actuated joints (each array has length nu).

    tau_ff: feed-forward torque, N m (or N for slides). q_des: desired positions, rad (m).
    v_des: desired velocities, rad/s. kp: stiffness gains, N m/rad. kd: damping gains, N m s/rad.
    """

    tau_ff: np.ndarray
    q_des: np.ndarray = field(default=None)  # type: ignore[assignment]
    v_des: np.ndarray = field(default=None)  # type: ignore[assignment]
    kp: np.ndarray = field(default=None)  # type: ignore[assignment]
    kd: np.ndarray = field(default=None)  # type: ignore[assignment]

    @classmethod
    def torque(cls, tau: np.ndarray) -> "JointCommand":
        """A pure feed-forward torque command (zero gains)."""
        tau = np.asarray(tau, dtype=float)
        z = np.zeros_like(tau)
        return cls(tau, z.copy(), z.copy(), z.copy(), z.copy())

    @classmethod
    def zero(cls, nu: int) -> "JointCommand":
        """All zeros: no torque, no gains (the robot is limp)."""
        return cls.torque(np.zeros(nu))

    def validated(self, model: RobotModel) -> "JointCommand":
        """A copy with every field a finite float vector of length nu and gains >= 0;
        missing fields become zeros. Raises ValueError naming the bad field."""
        nu = model.nu
        out = {}
        for name in ("tau_ff", "q_des", "v_des", "kp", "kd"):
            value = getattr(self, name)
            out[name] = np.zeros(nu) if value is None else check_vector(model, name, value, nu).copy()
        for name in ("kp", "kd"):
            if np.any(out[name] < 0):
                raise ValueError(f"{model.name}: command {name} must be >= 0, got {out[name]}")
        return JointCommand(**out)


def packed_commands_ok(packed: np.ndarray, nu: int) -> bool:
    """True if `packed` (one command, 5 nu, or rows of them) holds float64 commands packed as
    `pack_command` does, all finite, with gains kp, kd >= 0."""
    return (packed.dtype == np.float64 and packed.ndim >= 1 and packed.shape[-1] == 5 * nu
            and bool(np.isfinite(packed).all()) and not (packed[..., 3 * nu:] < 0).any())


def pack_command(command: JointCommand, model: RobotModel) -> np.ndarray:
    """The command as one float64 vector (tau_ff, q_des, v_des, kp, kd), 5 nu long.

    Fast path (a few us) for well-formed float64 arrays; anything else goes through
    `JointCommand.validated`, whose ValueError names the bad field.
    """
    try:
        packed = np.concatenate((command.tau_ff, command.q_des, command.v_des, command.kp, command.kd))
    except (ValueError, TypeError):
        packed = None
    nu = model.nu
    if packed is None or packed.ndim != 1 or not packed_commands_ok(packed, nu):
        c = command.validated(model)  # raises with a precise message, or fills missing fields
        packed = np.concatenate((c.tau_ff, c.q_des, c.v_des, c.kp, c.kd))
    return packed


QUATERNION_RESET_TOL = 1e-6  # a reset's base quaternion may be this far from unit norm (then normalised)


def checked_reset(model: RobotModel, q, v, t) -> tuple[np.ndarray, np.ndarray, float]:
    """A plant reset's (q, v, t), validated: q (nq; m, rad), v (nv; m/s, rad/s; None: zeros),
    t a finite number of seconds. A floating base's quaternion q[3:7] (x, y, z, w) must have
    norm 1 within QUATERNION_RESET_TOL; it is normalised exactly. ValueError names the bad argument."""
    q = check_vector(model, "q", q, model.nq).copy()
    if model.floating_base:
        norm = float(np.linalg.norm(q[3:7]))
        if abs(norm - 1.0) > QUATERNION_RESET_TOL:
            raise ValueError(f"{model.name}: q[3:7], the base quaternion (x, y, z, w), has norm {norm:.9g}; "
                             "pass a unit quaternion (identity: 0, 0, 0, 1)")
        q[3:7] /= norm
    v = np.zeros(model.nv) if v is None else check_vector(model, "v", v, model.nv).copy()
    if isinstance(t, bool) or not (isinstance(t, (int, float)) and math.isfinite(t)):
        raise ValueError(f"{model.name}: t must be a finite number of seconds, got {t!r}")
    return q, v, float(t)


def require_planar(model: RobotModel, plant: str) -> None:
    """Raise ValueError if `model` is a 3D (floating-base) robot: the `plant` runs planar robots only."""
    if model.floating_base or model.nq != model.nv:
        raise ValueError(f"{model.name} is a 3D robot (floating base, nq {model.nq}, nv {model.nv}); the {plant} plant "
                         "runs planar robots only: use the ess, nmdp or mujoco plant (--plant ess|nmdp|mujoco) for it")


def checked_dt(model: RobotModel, dt) -> float:
    """A plant step's dt (s), validated: a finite number >= 0."""
    if isinstance(dt, bool) or not (isinstance(dt, (int, float)) and math.isfinite(dt)) or dt < 0:
        raise ValueError(f"{model.name}: dt must be a finite number of seconds >= 0, got {dt!r}")
    return float(dt)


def actuated_joints(model: RobotModel) -> np.ndarray:
    """Index into v of the joint each actuator drives (B must be a selection matrix); the same
    index into q for planar robots (see `actuated_positions`)."""
    B = model.B
    idx = np.argmax(np.abs(B), axis=0)
    if B.shape[1] and not np.allclose(B, np.eye(B.shape[0])[:, idx]):
        raise ValueError(f"{model.name}: B is not a joint selection matrix; joint impedance needs one")
    return idx.astype(np.int64)


def actuated_positions(model: RobotModel) -> np.ndarray:
    """Index into q of the joint each actuator drives: `actuated_joints` shifted past a floating
    base's quaternion (its 4 numbers take 3 of v)."""
    return actuated_joints(model) + (model.nq - model.nv)


def impedance_torque(cmd: JointCommand, q: np.ndarray, v: np.ndarray, joints: np.ndarray,
                     u_max: np.ndarray) -> np.ndarray:
    """Joint impedance law tau = tau_ff + kp (q_des - q_j) + kd (v_des - v_j), clipped to +-u_max."""
    tau = cmd.tau_ff + cmd.kp * (cmd.q_des - q[joints]) + cmd.kd * (cmd.v_des - v[joints])
    return np.clip(tau, -u_max, u_max)


class Plant(Protocol):
    """What every plant implements (see the module docstring)."""

    model: RobotModel

    def reset(self, q: np.ndarray, v: np.ndarray | None = None, t: float = 0.0) -> PlantState:
        """Set the state; returns it. v defaults to zeros."""
        ...

    def step(self, command: JointCommand, dt: float) -> PlantState:
        """Advance by dt seconds under `command` (held constant, impedance law at plant rate).
        Never raises for a physics failure: the state's `violation` says what went wrong
        (sim/invariants.py); a bad command raises ValueError."""
        ...


PUSH_AXES = ("x", "y", "z")


def pushed_velocity(model: RobotModel, q: np.ndarray, v: np.ndarray, push_ns: float, axis: str = "x") -> np.ndarray:
    """Generalized velocity right after an impulse push_ns (N s) on the base along the world
    `axis` ("x", "y" horizontal, "z" vertical, positive up): v + M(q)^-1 J^T e_axis push_ns (m/s,
    rad/s), J the base origin's velocity Jacobian (planar robots: the base coordinate `axis`).
    Raises ValueError for another axis or a planar robot without that base coordinate."""
    from robots import numeric

    if axis not in PUSH_AXES:
        raise ValueError(f"push axis must be one of {PUSH_AXES}, got {axis!r}")
    impulse = np.zeros(model.nv)
    if model.floating_base:  # v[0:3] is the base velocity in the base frame: J^T e = R^T e
        from robots.rotations import rotation_matrix

        impulse[0:3] = rotation_matrix(q[3:7])[PUSH_AXES.index(axis)] * push_ns
    elif axis not in model.q_names:
        raise ValueError(f"a push along {axis!r} needs a robot with the base coordinate {axis!r}; {model.name} has none")
    else:
        impulse[model.q_names.index(axis)] = push_ns
    return v + np.linalg.solve(numeric(model, verbose=False).mass_matrix(q), impulse)
