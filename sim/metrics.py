"""What a run's trajectory says about the robot: did it fall, how high did it hop, how fast did it
go. One definition, used by the run's summary (launch), a sweep's episodes and the plant server's
own summary (bridge), all from logged states (numpy; `body_heights` evaluates the robot's kinematics).

    trajectory_metrics(t, q, contact, q_names, q0_z) -> {"fell", "apex_height_m", "vx_mps", ...}
    fall_time(t, q, q_names, q0_z, body_z) -> when it fell (s), or None
    body_heights(model, q) -> the heights of a floating base's other bodies, for the two above
"""
from __future__ import annotations

import math

import numpy as np

MAX_TILT_RAD = math.radians(60.0)  # a floating base tilted further (roll or pitch) has fallen
BODY_TOUCH_M = 0.02  # a floating base's other body (its joint origin: a knee, a hip) this low touches the ground


def base_names(names: list[str]) -> tuple[str, str]:
    """The names of the base's forward and height coordinates: ("base_x", "base_z") for a
    floating base, else ("x", "z")."""
    return ("base_x", "base_z") if "base_z" in names else ("x", "z")


def trajectory_metrics(t: np.ndarray, q: np.ndarray, contact: np.ndarray, q_names: list[str],
                       q0_z: float | None, body_z: np.ndarray | None = None) -> dict:
    """From logged ticks (t in s, q (ticks, nq), contact (ticks, nc)): fell, apex_height_m (mean
    height of the airborne peaks of the base, m) and vx_mps (mean forward speed, m/s); None where
    the robot has no such coordinate.

    fell, the one definition (docs/RUNS.md): once the base has reached half its nominal height
    q0_z (at the start, or after standing up from lying), it drops below it again; or a floating
    base tilts by more than MAX_TILT_RAD in roll or pitch; or (body_z: `body_heights`, the
    heights of a floating base's other bodies per tick) once up, one of those bodies comes
    within BODY_TOUCH_M of the ground: a knee or the body touched it."""
    out = {"fell": fall_time(t, q, q_names, q0_z, body_z) is not None, "apex_height_m": None, "vx_mps": None}
    x_name, z_name = base_names(q_names)
    if z_name in q_names and q.size:
        z = q[:, q_names.index(z_name)]
        airborne = ~contact.any(axis=1)
        peaks = [z[i] for i in range(1, len(z) - 1) if airborne[i] and z[i] >= z[i - 1] and z[i] > z[i + 1]]
        out["apex_height_m"] = float(np.mean(peaks)) if peaks else None
    if x_name == "base_x" and t.size > 1:
        out.update(heading_velocities(t, q))
    elif x_name in q_names and t.size > 1:
        x = q[:, q_names.index(x_name)]
        out["vx_mps"] = float((x[-1] - x[0]) / (t[-1] - t[0]))
    return out


def fall_time(t: np.ndarray, q: np.ndarray, q_names: list[str], q0_z: float | None,
              body_z: np.ndarray | None = None) -> float | None:
    """When the robot fell (s; `trajectory_metrics` says what falling is), or None if it did not.
    A base that never reached half its nominal height fell at the start, t[0]."""
    _, z_name = base_names(q_names)
    if z_name not in q_names or not q.size:
        return None
    fallen = np.zeros(len(q), bool)
    if q0_z is not None:
        z = q[:, q_names.index(z_name)]
        up = np.flatnonzero(z >= 0.5 * q0_z)
        if up.size == 0:
            return float(t[0])
        fallen[up[0]:] = z[up[0]:] < 0.5 * q0_z
        if body_z is not None and len(body_z) == len(q) and np.size(body_z):
            fallen[up[0]:] |= np.min(body_z[up[0]:], axis=1) < BODY_TOUCH_M
    if z_name == "base_z":
        fallen |= tilt_angle(q[:, 3:7]) > MAX_TILT_RAD
    hit = np.flatnonzero(fallen)
    return float(t[hit[0]]) if hit.size else None


def body_heights(model, q: np.ndarray) -> np.ndarray | None:
    """(ticks, nb - 1) heights (m) of a floating base's bodies other than the base (their joint
    origins: hips, knees) along a trajectory q (ticks, nq); None for a planar robot."""
    if not model.floating_base or not np.size(q):
        return None
    from robots import numeric

    poses = numeric(model, verbose=False).raw["body_poses"]
    nb = len(model.body_names)
    return np.array([np.asarray(poses(np.ascontiguousarray(qi, dtype=np.float64))).reshape(nb, -1)[1:, 2]
                     for qi in q])


def heading_velocities(t: np.ndarray, q: np.ndarray) -> dict:
    """A floating base's mean velocities over a run: vx_mps (forward) and vy_mps (leftward), m/s,
    in its heading frame (the base's yaw, tick by tick), and yaw_rate_radps (rad/s)."""
    forward, left, turn = _heading_steps(q)
    span = t[-1] - t[0]
    return {"vx_mps": float(forward.sum() / span), "vy_mps": float(left.sum() / span),
            "yaw_rate_radps": float(turn.sum() / span)}


def heading_rates(t: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A floating base's velocities between logged states, as `heading_velocities` measures them:
    (midpoint times s, forward m/s, leftward m/s, yaw rate rad/s), one per interval."""
    forward, left, turn = _heading_steps(q)
    dt = np.diff(t)
    return 0.5 * (t[1:] + t[:-1]), forward / dt, left / dt, turn / dt


def _heading_steps(q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per interval: forward and leftward displacement (m) in the heading frame and yaw change (rad)."""
    x, y, quat = q[:, 0], q[:, 1], q[:, 3:7]
    qx, qy, qz, qw = quat.T
    yaw = np.unwrap(np.arctan2(2 * (qw * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz)))
    dx, dy = np.diff(x), np.diff(y)
    mid = 0.5 * (yaw[1:] + yaw[:-1])
    return np.cos(mid) * dx + np.sin(mid) * dy, -np.sin(mid) * dx + np.cos(mid) * dy, np.diff(yaw)


def tilt_angle(quat: np.ndarray) -> np.ndarray:
    """Angle (rad) between the base's z axis and the world's, per row of quaternions (x, y, z, w)."""
    x, y = quat[:, 0], quat[:, 1]
    return np.arccos(np.clip(1.0 - 2.0 * (x * x + y * y), -1.0, 1.0))
