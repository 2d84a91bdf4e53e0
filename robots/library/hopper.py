"""Planar one-legged hopper (the Capler monoped of seed 004, Section 6).

q = (x, z, phi_hip, phi_knee): hip position (m) and joint angles (rad), torques at hip and
knee (N m). Parameters as published with nosnoc's monoped example; angles rotate about +y,
so positive phi_hip swings the thigh backward (-x) from hanging straight down, exactly as
the published kinematics p_thigh = p_hip + s_thigh (-sin phi_hip, -cos phi_hip).
The body (hip) mass sits at (x, z) and does not rotate. The foot contact point is the shank
tip (the paper's f_c(q) = p_foot,z(q)); the 0.028 m foot radius is drawn and exported.
At q0 = (0, 0.4, 0, 0) the leg hangs straight and the foot just touches the ground.
"""
from __future__ import annotations

from ..planar import Body, Joint, PlanarTree, PointContact, build_planar_robot

PARAMS = {
    "m_body": 3.975,  # kg, hip/body
    "m_thigh": 1.782,  # kg
    "m_shank": 0.548,  # kg
    "l_thigh": 0.2,  # m
    "l_shank": 0.2,  # m
    "l_base_hip": 0.043,  # m, drawing only
    "l_head": 0.05,  # m, drawing only
    "s_body": 0.02,  # m, drawing only (the published M puts the body mass at the hip)
    "s_thigh": 0.016,  # m, hip to thigh CoM
    "s_shank": 0.1,  # m, knee to shank CoM
    "r_foot": 0.028,  # m
    "I_thigh": 0.001,  # kg m^2 about CoM
    "I_shank": 0.0032,  # kg m^2 about CoM
    "g": 9.81,  # m/s^2
    "mu": 0.8,
    "u_max": 60.0,  # N m
    "k_contact": 1.0e4,  # N/m, compliant plants only (our choice: 6 mm static sinkage)
    "b_contact": 100.0,  # N s/m, compliant plants only (our choice: ~0.2 of critical)
}

# the joint ranges a controller keeps (rad; the model's q_min/q_max, not in PARAMS: they are
# the MPC's choice, not published): the knee stays bent (never straight or reversed)
JOINT_RANGES = {"hip": (-1.2, 1.2), "knee": (-2.4, -0.05)}
# the MPC's tuning on this robot (mpc.wholebody.controller.MpcOptions fields; docs/MPC.md, measured in
# 10 s closed loops): HPIPM's SPEED_ABS preset (acados feedback p50 0.32 ms against 0.58 with
# BALANCE, same gait, survives a 2 N s push); hops 0.45 m high; the gait optimizer's guess bends
# the knee (q0's straight leg is outside the knee's range). A scenario's controller_options override these.
MPC_DEFAULTS = {"apex_height": 0.45, "hpipm_mode": "SPEED_ABS", "guess_pose": {"hip": 0.2, "knee": -0.4}}


def build(**overrides):
    """The hopper `RobotModel`; keyword overrides replace entries of PARAMS."""
    p = {**PARAMS, **overrides}
    tree = PlanarTree(
        name="hopper",
        bodies=(
            Body("body", None, (0.0, 0.0), (Joint("x", "slide_x"), Joint("z", "slide_z")), p["m_body"],
                 segment=((0.0, 0.0), (0.0, p["l_base_hip"] + p["l_head"]))),
            Body("thigh", "body", (0.0, 0.0), (Joint("hip", "hinge", actuated=True, u_max=p["u_max"],
                                                     range=JOINT_RANGES["hip"]),),
                 p["m_thigh"], com=(0.0, -p["s_thigh"]), inertia=p["I_thigh"],
                 segment=((0.0, 0.0), (0.0, -p["l_thigh"]))),
            Body("shank", "thigh", (0.0, -p["l_thigh"]), (Joint("knee", "hinge", actuated=True, u_max=p["u_max"],
                                                           range=JOINT_RANGES["knee"]),),
                 p["m_shank"], com=(0.0, -p["s_shank"]), inertia=p["I_shank"],
                 segment=((0.0, 0.0), (0.0, -p["l_shank"]))),
        ),
        point_contacts=(
            PointContact("foot", "shank", (0.0, -p["l_shank"]), mu=p["mu"], stiffness=p["k_contact"],
                         damping=p["b_contact"], radius=p["r_foot"]),
        ),
        gravity=p["g"],
        params=p,
        controller_defaults={"mpc": MPC_DEFAULTS},
    )
    return build_planar_robot(tree, q0=[0.0, p["l_thigh"] + p["l_shank"], 0.0, 0.0])
