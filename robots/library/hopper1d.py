"""The 1-D spring-leg hopper of the ESS paper (seed 000): a point mass on a massless spring leg.

q = (z,), the mass's height (m). The leg (rest length L0) touches the ground when z <= L0;
in stance the spring pushes with k (L0 - z). No actuator, no damping.
Our choice of numbers (the paper does not give them): m = 1 kg, k = 1000 N/m, g = 9.81 m/s^2,
L0 = 1 m; the paper's start is at rest at z0 = 2 L0.
"""
from __future__ import annotations

from ..planar import Body, Joint, PlanarTree, PointContact, build_planar_robot

PARAMS = {"m": 1.0, "k": 1000.0, "g": 9.81, "L0": 1.0}


def build(**overrides):
    """The 1-D hopper `RobotModel`; keyword overrides replace entries of PARAMS."""
    p = {**PARAMS, **overrides}
    tree = PlanarTree(
        name="hopper1d",
        bodies=(Body("mass", None, (0.0, 0.0), (Joint("z", "slide_z"),), p["m"],
                     segment=((0.0, 0.0), (0.0, -p["L0"]))),),
        point_contacts=(PointContact("leg", "mass", (0.0, -p["L0"]), stiffness=p["k"], damping=0.0),),
        gravity=p["g"],
        params=p,
    )
    return build_planar_robot(tree, q0=[2.0 * p["L0"]])
