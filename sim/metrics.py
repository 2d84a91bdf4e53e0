"""What a run's trajectory says about the robot: did it fall, how high did it hop, how fast did it
go. One definition, used by the run's summary (launch), a sweep's episodes and the plant server's
own summary (bridge), all from logged states; numpy only.

    trajectory_metrics(t, q, contact, q_names, q0_z) -> {"fell", "apex_height_m", "vx_mps", ...}
"""
from __future__ import annotations

import math

import numpy as np

MAX_TILT_RAD = math.radians(60.0)  # a floating base tilted further (roll or pitch) has fallen


def base_names(names: list[str]) -> tuple[str, str]:
    """The names of the base's forward and height coordinates: ("base_x", "base_z") for a
    floating base, else ("x", "z")."""
    return ("base_x", "base_z") if "base_z" in names else ("x", "z")


def trajectory_metrics(t: np.ndarray, q: np.ndarray, contact: np.ndarray, q_names: list[str],
                       q0_z: float | None) -> dict:
    """From logged ticks (t in s, q (ticks, nq), contact (ticks, nc)): fell, apex_height_m (mean
    height of the airborne peaks of the base, m) and vx_mps (mean forward speed, m/s); None where
    the robot has no such coordinate. fell: once the base has reached half its nominal height
    q0_z (at the start, or after standing up from lying), it drops below it again, or (floating
    base) tilts by more than MAX_TILT_RAD in roll or pitch."""
    out = {"fell": False, "apex_height_m": None, "vx_mps": None}
    x_name, z_name = base_names(q_names)
    if z_name in q_names and q.size:
        z = q[:, q_names.index(z_name)]
        if q0_z is not None:
            up = np.flatnonzero(z >= 0.5 * q0_z)
            out["fell"] = bool(up.size == 0 or np.any(z[up[0]:] < 0.5 * q0_z))
        if z_name == "base_z":
            out["fell"] = out["fell"] or bool(np.any(tilt_angle(q[:, 3:7]) > MAX_TILT_RAD))
        airborne = ~contact.any(axis=1)
        peaks = [z[i] for i in range(1, len(z) - 1) if airborne[i] and z[i] >= z[i - 1] and z[i] > z[i + 1]]
        out["apex_height_m"] = float(np.mean(peaks)) if peaks else None
    if x_name == "base_x" and t.size > 1:
        out.update(heading_velocities(t, q))
    elif x_name in q_names and t.size > 1:
        x = q[:, q_names.index(x_name)]
        out["vx_mps"] = float((x[-1] - x[0]) / (t[-1] - t[0]))
    return out


def heading_velocities(t: np.ndarray, q: np.ndarray) -> dict:
    """A floating base's mean velocities over a run: vx_mps (forward) and vy_mps (leftward), m/s,
    in its heading frame (the base's yaw, tick by tick), and yaw_rate_radps (rad/s)."""
    x, y, quat = q[:, 0], q[:, 1], q[:, 3:7]
    qx, qy, qz, qw = quat.T
    yaw = np.unwrap(np.arctan2(2 * (qw * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz)))
    dx, dy = np.diff(x), np.diff(y)
    mid = 0.5 * (yaw[1:] + yaw[:-1])
    forward = np.cos(mid) * dx + np.sin(mid) * dy
    left = -np.sin(mid) * dx + np.cos(mid) * dy
    span = t[-1] - t[0]
    return {"vx_mps": float(forward.sum() / span), "vy_mps": float(left.sum() / span),
            "yaw_rate_radps": float((yaw[-1] - yaw[0]) / span)}


def tilt_angle(quat: np.ndarray) -> np.ndarray:
    """Angle (rad) between the base's z axis and the world's, per row of quaternions (x, y, z, w)."""
    x, y = quat[:, 0], quat[:, 1]
    return np.arccos(np.clip(1.0 - 2.0 * (x * x + y * y), -1.0, 1.0))
