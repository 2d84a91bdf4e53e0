"""A 3D quadruped from a URDF file, defined outside the library (docs/ROBOTS3D.md, "Your own
URDF quadruped"). The file is go2's from example-robot-data; give your own with
get_robot("my_quadruped:build", urdf="/path/to/robot.urdf") and its own FEET and poses.
"""
from dataclasses import replace

from robots.floating import FootContacts, build_floating_robot
from robots.urdf import example_robot_path, load_urdf_tree

URDF = example_robot_path("go2_description/urdf/go2.urdf")
FEET = ("FL_foot", "FR_foot", "RL_foot", "RR_foot")  # foot frames, in the tree's leg order
STAND = [0.0, 0.9, -1.8] * 4  # per leg (tree order): hip abduction, hip flexion, knee, rad
LYING = [0.0, 1.15, -2.7] * 4  # belly near the ground, feet under the body (go1-stand's start)


def build(urdf: str = str(URDF)):
    """The RobotModel: masses, joints and limits from the URDF, the rest from here."""
    tree = replace(load_urdf_tree(urdf, feet=FEET), name="my_quadruped")  # a C identifier
    m = tree.mass  # kg; contact scaled from go1's 2e4 N/m, 300 N s/m at 13.1 kg (1.6 mm sink)
    feet = FootContacts(radius=0.022, mu=0.8, stiffness=2.0e4 * m / 13.1, damping=300.0 * m / 13.1)
    return build_floating_robot(tree, feet, stance=STAND, params={"poses": {"lying": LYING}},
                                controller_defaults={"safe": {"kp": 50.0}})  # N m/rad
