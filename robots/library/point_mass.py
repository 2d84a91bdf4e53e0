"""The tutorial's falling point mass (seed 003): a 10 kg mass moving vertically, one thrust input.

q = (z,), the height of the mass (m) above the ground; u = vertical thrust (N).
Contact stiffness/damping are our choice for the compliant plants.
"""
from __future__ import annotations

from ..planar import Body, Joint, PlanarTree, PointContact, build_planar_robot

PARAMS = {"m": 10.0, "g": 9.81, "u_max": 500.0, "k_contact": 1.0e5, "b_contact": 300.0, "z0": 1.0}


def build(**overrides):
    """The point-mass `RobotModel`; keyword overrides replace entries of PARAMS."""
    p = {**PARAMS, **overrides}
    tree = PlanarTree(
        name="point_mass",
        bodies=(Body("mass", None, (0.0, 0.0), (Joint("z", "slide_z", actuated=True, u_max=p["u_max"]),), p["m"]),),
        point_contacts=(PointContact("bottom", "mass", (0.0, 0.0), stiffness=p["k_contact"],
                                     damping=p["b_contact"], radius=0.05),),
        gravity=p["g"],
        params=p,
    )
    return build_planar_robot(tree, q0=[p["z0"]])
