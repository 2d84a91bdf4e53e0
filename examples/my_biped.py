"""A planar biped, defined outside the library (docs/ROBOTS.md, "Bring your own robot").

q = (x, z, pitch, l_hip, l_knee, r_hip, r_knee): 7 DoF, 4 actuated joints, 2 point feet.
Both hips sit at the torso's origin; the torso's CoM is 0.1 m above them. At q0 the left leg
reaches forward and the right leg back (feet 0.16 m apart), knees bent, feet on the ground.
"""
import math

from robots.planar import Body, Joint, PlanarTree, PointContact, build_planar_robot

PARAMS = {"m_torso": 5.0, "I_torso": 0.05, "com_torso": 0.1, "m_thigh": 1.0, "I_thigh": 0.005,
          "m_shank": 0.3, "I_shank": 0.0016, "l_leg": 0.25, "mu": 0.8, "u_max": 40.0,
          "k_contact": 1.0e4, "b_contact": 100.0, "knee0": -1.2}
LEGS = {"l": 0.4, "r": 0.8}  # leg -> hip angle at q0 (rad; positive swings the thigh backward)


def build(**overrides):
    """The biped's RobotModel; keyword overrides replace entries of PARAMS."""
    p = {**PARAMS, **overrides}
    l, bodies, feet = p["l_leg"], [], []
    bodies.append(Body("torso", None, (0.0, 0.0), (Joint("x", "slide_x"), Joint("z", "slide_z"),
                       Joint("pitch", "hinge")), p["m_torso"], com=(0.0, p["com_torso"]),
                       inertia=p["I_torso"], segment=((0.0, 0.0), (0.0, 0.3))))
    for leg in LEGS:
        bodies.append(Body(f"{leg}_thigh", "torso", (0.0, 0.0), (Joint(f"{leg}_hip", "hinge", actuated=True,
                           u_max=p["u_max"], range=(-0.5, 1.5)),), p["m_thigh"], com=(0.0, -0.05),
                           inertia=p["I_thigh"], segment=((0.0, 0.0), (0.0, -l))))
        bodies.append(Body(f"{leg}_shank", f"{leg}_thigh", (0.0, -l), (Joint(f"{leg}_knee", "hinge", actuated=True,
                           u_max=p["u_max"], range=(-2.4, -0.2)),), p["m_shank"], com=(0.0, -0.1),
                           inertia=p["I_shank"], segment=((0.0, 0.0), (0.0, -l))))
        feet.append(PointContact(f"{leg}_foot", f"{leg}_shank", (0.0, -l), mu=p["mu"], stiffness=p["k_contact"],
                                 damping=p["b_contact"], radius=0.02))
    tree = PlanarTree("my_biped", tuple(bodies), tuple(feet), params=p)
    hip = LEGS["l"]
    height = l * math.cos(hip) + l * math.cos(hip + p["knee0"])  # the same for both legs
    return build_planar_robot(tree, q0=[0.0, height, 0.0] + [a for h in LEGS.values() for a in (h, p["knee0"])])
