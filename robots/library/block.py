"""Rocking block: a uniform rectangular block on flat ground (Housner 1963; seed 001, Section 4.3).

q = (x, z, theta): centre of mass position (m) and tilt angle (rad, counter-clockwise in the
x-z plane: the hinge turns about -y, so positive theta lifts the right corner). No actuators.
The two contacts are the bottom corners, at (-+half_width, -half_height) in the body frame;
at q0 = (0, half_height, 0) the block stands flat with both corners touching.
Uniform block: I = m (width^2 + height^2) / 12 about the centre of mass; slenderness angle
alpha = atan(width / height), and rocking about one corner conserves angular momentum about
the other at each plastic impact, giving Housner's ratio 1 - (3/2) sin^2(alpha).
Our choice of numbers: 10 kg, 0.2 m wide, 0.6 m tall (alpha = 0.3217 rad), mu = 1.0 so the
corners stick; stiffness/damping for the compliant plants only. An inclined ground is a tilted
gravity: `tilt_deg` turns it towards -x (g sin tilt along -x, g cos tilt along -z), so the
block slides towards -x when tan(tilt) > mu.
"""
from __future__ import annotations

import math

from ..planar import Body, Joint, PlanarTree, PointContact, build_planar_robot

PARAMS = {"m": 10.0, "width": 0.2, "height": 0.6, "mu": 1.0, "g": 9.81,
          "k_contact": 1.0e5, "b_contact": 300.0, "r_corner": 0.005, "tilt_deg": 0.0}


def slenderness(width: float, height: float) -> float:
    """Slenderness angle alpha = atan(width / height), rad."""
    return math.atan2(width, height)


def build(**overrides):
    """The rocking-block `RobotModel`; keyword overrides replace entries of PARAMS."""
    p = {**PARAMS, **overrides}
    for key in ("m", "width", "height"):
        if not (isinstance(p[key], (int, float)) and math.isfinite(p[key]) and p[key] > 0):
            raise ValueError(f"block: {key} must be a finite number > 0, got {p[key]!r}")
    if not (isinstance(p["tilt_deg"], (int, float)) and abs(p["tilt_deg"]) < 90.0):
        raise ValueError(f"block: tilt_deg must be a number of degrees in (-90, 90), got {p['tilt_deg']!r}")
    hw, hh = 0.5 * p["width"], 0.5 * p["height"]
    inertia = p["m"] * (p["width"] ** 2 + p["height"] ** 2) / 12.0
    box = (f'<geom name="box" type="box" size="{hw!r} 0.05 {hh!r}" contype="0" conaffinity="0"'
           ' mass="0" rgba="0.6 0.5 0.3 1"/>')
    corners = tuple(
        PointContact(name, "block", (sx * hw, -hh), mu=p["mu"], stiffness=p["k_contact"],
                     damping=p["b_contact"], radius=p["r_corner"])
        for name, sx in (("left", -1.0), ("right", 1.0))
    )
    tree = PlanarTree(
        name="block",
        bodies=(Body("block", None, (0.0, 0.0),
                     (Joint("x", "slide_x"), Joint("z", "slide_z"), Joint("theta", "hinge", axis_sign=-1)),
                     p["m"], inertia=inertia, geoms=(box,)),),
        point_contacts=corners,
        gravity=p["g"] * math.cos(math.radians(p["tilt_deg"])),
        gravity_x=-p["g"] * math.sin(math.radians(p["tilt_deg"])) + 0.0,  # + 0.0: no -0 in the MJCF
        params={**p, "alpha": slenderness(p["width"], p["height"]), "inertia": inertia},
    )
    return build_planar_robot(tree, q0=[0.0, hh, 0.0])
