"""A 3D box on four corner contacts: the floating-base physics checks (incline, free tumbling).

q = (position, quaternion (x, y, z, w)), v = (linear, angular velocity in the box frame); no
actuators. Contacts are spheres of radius r at the bottom corners, (+-l/2, +-w/2, -h/2 + r) in
the box frame. An inclined ground is a tilted gravity: `tilt_deg` about a horizontal axis at
`tilt_axis_deg` from x (default 30 deg: aligned with neither x nor y), so the steepest descent
is horizontal, perpendicular to that axis. Uniform box: I = m/12 diag(w^2 + h^2, l^2 + h^2,
l^2 + w^2). Our numbers: 1 kg, 0.2 x 0.1 x 0.05 m, mu 0.5.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..floating import FootContacts, build_floating_robot
from ..spatial import Body, Frame
from ..urdf import UrdfTree

PARAMS = {"m": 1.0, "l": 0.2, "w": 0.1, "h": 0.05, "mu": 0.5, "r_corner": 0.005, "k_contact": 1.0e4,
          "b_contact": 60.0, "tilt_deg": 0.0, "tilt_axis_deg": 30.0, "g": 9.81}


def incline_gravity(g: float, tilt_deg: float, axis_deg: float) -> np.ndarray:
    """Gravity (3, m/s^2) on a ground tilted by tilt_deg about the horizontal axis at axis_deg
    from x: (0, 0, -g) rotated by -tilt about that axis (the ground's frame sees gravity tilt)."""
    from scipy.spatial.transform import Rotation

    axis = np.array([math.cos(math.radians(axis_deg)), math.sin(math.radians(axis_deg)), 0.0])
    return Rotation.from_rotvec(-math.radians(tilt_deg) * axis).apply([0.0, 0.0, -g])


def build(**overrides):
    """The box `RobotModel`; keyword overrides replace entries of PARAMS."""
    p = {**PARAMS, **overrides}
    unknown = set(p) - set(PARAMS)
    if unknown:
        raise ValueError(f"box3d: unknown parameters {sorted(unknown)}; valid: {sorted(PARAMS)}")
    for key in ("m", "l", "w", "h", "r_corner", "k_contact", "g"):
        if not (isinstance(p[key], (int, float)) and math.isfinite(p[key]) and p[key] > 0):
            raise ValueError(f"box3d: {key} must be a finite number > 0, got {p[key]!r}")
    m, l, w, h, r = p["m"], p["l"], p["w"], p["h"], p["r_corner"]
    inertia = np.diag([w * w + h * h, l * l + h * h, l * l + w * w]) * m / 12.0
    body = Body("box", -1, "free", (0.0, 0.0, 0.0), (np.eye(3), np.zeros(3)), m, (0.0, 0.0, 0.0),
                tuple(map(tuple, inertia)))
    corners = tuple(Frame(f"corner_{sx}{sy}", 0, (np.eye(3), np.array([sx * l / 2, sy * w / 2, -h / 2 + r])))
                    for sx, sy in ((1, 1), (1, -1), (-1, 1), (-1, -1)))
    tree = UrdfTree("box3d", (body,), corners, 7, 6, (), np.zeros(0), np.zeros(0), np.zeros(0), m, Path(__file__))
    feet = FootContacts(radius=r, mu=p["mu"], stiffness=p["k_contact"], damping=p["b_contact"])
    return build_floating_robot(tree, feet, stance=np.zeros(0),
                                gravity=incline_gravity(p["g"], p["tilt_deg"], p["tilt_axis_deg"]), params=p)
