"""Planar quadruped: torso (x, z, pitch) and four legs with hip and knee, point feet.

A 12.0 kg robot sized like a Unitree A1 (our choice of numbers, stated here): torso 7.2 kg,
0.366 m between front and hind hips, pitch inertia 0.088 kg m^2 (a 0.366 x 0.114 m box);
per leg a 1.0 kg thigh (CoM 0.03 m below the hip, 0.005 kg m^2) and a 0.2 kg calf
(CoM 0.1 m below the knee, 0.0007 kg m^2), both 0.2 m long; motors 33.5 N m.
Left and right legs of a pair share the hip position in the sagittal plane.
Joint angles rotate about +y (MuJoCo's convention): positive pitch lowers the nose, positive
hip swings the thigh backward. q0 stands with hips at 0.8 rad and knees at -1.6 rad,
feet under the hips touching the ground.
q = (x, z, pitch, fl_hip, fl_knee, fr_hip, fr_knee, hl_hip, hl_knee, hr_hip, hr_knee).
"""
from __future__ import annotations

import math

from ..planar import Body, Joint, PlanarTree, PointContact, build_planar_robot

PARAMS = {
    "m_torso": 7.2,  # kg
    "I_torso": 0.088,  # kg m^2
    "hip_x": 0.183,  # m, torso centre to front/hind hip
    "m_thigh": 1.0,  # kg
    "I_thigh": 0.005,  # kg m^2
    "s_thigh": 0.03,  # m
    "m_calf": 0.2,  # kg
    "I_calf": 0.0007,  # kg m^2
    "s_calf": 0.1,  # m
    "l_thigh": 0.2,  # m
    "l_calf": 0.2,  # m
    "r_foot": 0.02,  # m, drawn/exported; the contact is the calf tip
    "g": 9.81,  # m/s^2
    "mu": 0.8,
    "u_max": 33.5,  # N m
    "k_contact": 2.0e4,  # N/m, compliant plants only
    "b_contact": 100.0,  # N s/m, compliant plants only (~0.2 of critical for a quarter of the weight)
    "hip0": 0.8,  # rad, standing pose
    "knee0": -1.6,  # rad
}
# the joint ranges a controller keeps (rad; the model's q_min/q_max, the MPC's choice)
JOINT_RANGES = {"hip": (-0.2, 1.8), "knee": (-2.6, -0.6)}
LEGS = (("fl", 1.0), ("fr", 1.0), ("hl", -1.0), ("hr", -1.0))
# the MPC's tuning on this robot (mpc.wholebody.controller.MpcOptions fields; docs/MPC.md, measured in
# 10 s closed loops): the whole-body QP (23 states, 24 controls per stage) over 0.15 s without
# partial condensing (cond_n None), HPIPM in SPEED mode (15 stages and SPEED: solve p50 -40 %
# against 20 stages and BALANCE; an 11 N s push survived and 12 fell, which 20 stages and
# BALANCE survive) and a slack penalty z_l1 of 1000 (at 100 it fell on the ros21 plant and
# from a standing start on ros23).
# A scenario's controller_options override these.
MPC_DEFAULTS = {"n_stages": 15, "cond_n": None, "hpipm_mode": "SPEED", "z_l1": 1000.0}


def build(**overrides):
    """The planar quadruped `RobotModel`; keyword overrides replace entries of PARAMS."""
    p = {**PARAMS, **overrides}
    bodies = [
        Body("torso", None, (0.0, 0.0), (Joint("x", "slide_x"), Joint("z", "slide_z"), Joint("pitch", "hinge")),
             p["m_torso"], inertia=p["I_torso"], segment=((-p["hip_x"], 0.0), (p["hip_x"], 0.0))),
    ]
    contacts = []
    for leg, side in LEGS:
        bodies.append(Body(f"{leg}_thigh", "torso", (side * p["hip_x"], 0.0),
                           (Joint(f"{leg}_hip", "hinge", actuated=True, u_max=p["u_max"], range=JOINT_RANGES["hip"]),),
                           p["m_thigh"], com=(0.0, -p["s_thigh"]), inertia=p["I_thigh"],
                           segment=((0.0, 0.0), (0.0, -p["l_thigh"]))))
        bodies.append(Body(f"{leg}_calf", f"{leg}_thigh", (0.0, -p["l_thigh"]),
                           (Joint(f"{leg}_knee", "hinge", actuated=True, u_max=p["u_max"],
                                  range=JOINT_RANGES["knee"]),),
                           p["m_calf"], com=(0.0, -p["s_calf"]), inertia=p["I_calf"],
                           segment=((0.0, 0.0), (0.0, -p["l_calf"]))))
        contacts.append(PointContact(f"{leg}_foot", f"{leg}_calf", (0.0, -p["l_calf"]), mu=p["mu"],
                                     stiffness=p["k_contact"], damping=p["b_contact"], radius=p["r_foot"]))
    tree = PlanarTree("quadruped", tuple(bodies), tuple(contacts), gravity=p["g"], params=p,
                      controller_defaults={"mpc": MPC_DEFAULTS})
    height = p["l_thigh"] * math.cos(p["hip0"]) + p["l_calf"] * math.cos(p["hip0"] + p["knee0"])
    return build_planar_robot(tree, q0=[0.0, height, 0.0] + [p["hip0"], p["knee0"]] * len(LEGS))
