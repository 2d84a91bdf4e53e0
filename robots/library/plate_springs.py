"""Plate in SE(2) falling onto N evenly spaced vertical spring-dampers (ESS paper, seed 000).

q = (x, z, theta): plate centre (m) and angle (rad, counter-clockwise in the x-z plane, as in
the paper: the hinge turns about -y). Spring i stands at x_si (evenly spaced over
[-half_span, half_span]) with its frictionless rolling tip at height L0. The plate's lower
face passes through its centre, so its height above spring i is z + tan(theta) (x_si - x) and
the contact gap is phi_i = z + tan(theta) (x_si - x) - L0 (the paper's flight-stance event is
h_i = -phi_i). The plate is assumed long enough to stay above every spring.
Our choice of numbers: 1 kg, 2.4 m long plate (I = m L^2 / 12), springs over [-1, 1] m,
L0 = 1 m, and identical springs whose total stiffness and damping do not depend on N:
k = 1000 / N N/m and b = 60 / N N s/m each (about critically damped for the plate). (With a fixed 100 N/m per spring, 40 springs
throw the frictionless plate sideways off the bed, breaking the paper's assumption.)
"""
from __future__ import annotations

import casadi as ca
import numpy as np

from ..model import Contact
from ..planar import Body, Joint, PlanarTree, build_planar_robot

PARAMS = {"n_springs": 4, "m": 1.0, "length": 2.4, "half_span": 1.0, "k_total": 1000.0, "b_total": 60.0,
          "L0": 1.0, "g": 9.81, "tip_radius": 0.01}


def spring_positions(n_springs: int, half_span: float) -> np.ndarray:
    """x positions (m) of N evenly spaced springs over [-half_span, half_span]."""
    return np.linspace(-half_span, half_span, n_springs)


def build(n_springs: int | None = None, **overrides):
    """The plate-on-springs `RobotModel` with `n_springs` springs (N >= 1)."""
    p = {**PARAMS, **overrides}
    if n_springs is not None:
        p["n_springs"] = n_springs
    n = p["n_springs"]
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"plate_springs: n_springs must be an integer >= 1, got {n!r}")
    xs = spring_positions(int(n), p["half_span"])
    r = p["tip_radius"]
    # MuJoCo's soft contact as the same spring-damper: negative solref is (stiffness, damping)
    # per unit effective mass; at rest each of the N springs carries m / N of the plate.
    k_acc, b_acc = p["k_total"] / p["m"], p["b_total"] / p["m"]
    tips = tuple(
        f'<geom name="tip{i}" type="sphere" size="{r!r}" pos="{float(x)!r} 0 {p["L0"] - r!r}" contype="0"'
        f' conaffinity="1" condim="1" solref="{-k_acc!r} {-b_acc!r}" solimp="0.99 0.99 0.001"/>'
        for i, x in enumerate(xs)
    )
    half_h = 0.1  # thick enough that a 6 m/s impact cannot tunnel through in one 2 ms MuJoCo step
    tree = PlanarTree(
        name="plate_springs",
        bodies=(Body("plate", None, (0.0, 0.0),
                     (Joint("x", "slide_x"), Joint("z", "slide_z"), Joint("theta", "hinge", axis_sign=-1)),
                     p["m"], inertia=p["m"] * p["length"] ** 2 / 12.0,
                     geoms=(f'<geom name="plate" type="box" size="{p["length"] / 2!r} 0.1 {half_h!r}"'
                            f' pos="0 0 {half_h!r}" contype="1" conaffinity="0" condim="1" mass="0"/>',)),),
        gravity=p["g"],
        world_geoms=tips,
        params={**p, "x_springs": xs.tolist()},
    )

    def springs(frames, q):
        x, z, theta = q[0], q[1], q[2]
        return [
            Contact(f"spring{i}", ca.vertcat(xi, z + ca.tan(theta) * (xi - x)), ground_height=p["L0"],
                    mu=0.0, stiffness=p["k_total"] / n, damping=p["b_total"] / n, radius=r)
            for i, xi in enumerate(xs)
        ]

    return build_planar_robot(tree, q0=[0.0, 2.5, 0.0], extra_contacts=springs)
