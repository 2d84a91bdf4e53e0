"""The MPC's task comes from the robot's structure and joint ranges, not from a table of names:
the hopper and quadruped keep exactly their old numbers, any other legged robot gets defaults."""
from __future__ import annotations

import numpy as np
import pytest

from mpc.mpc_controller import ROBOT_DEFAULTS, MpcOptions
from mpc.tasks import Task, task_kind
from robots import get_robot
from robots.planar import Body, Joint, PlanarTree, PointContact, build_planar_robot


def two_legged(name="stilts", ranges=True):
    """A robot no table knows: a base on two one-joint legs."""
    bodies = [Body("base", None, (0.0, 0.0), (Joint("x", "slide_x"), Joint("z", "slide_z")), 3.0)]
    feet = []
    for leg, x in (("a", 0.1), ("b", -0.1)):
        bodies.append(Body(leg, "base", (x, 0.0), (Joint(f"{leg}_hip", "hinge", actuated=True, u_max=20.0,
                                                         range=(-0.6, 0.6) if ranges else None),),
                           0.4, com=(0.0, -0.1), inertia=0.003))
        feet.append(PointContact(f"{leg}_foot", leg, (0.0, -0.3), mu=0.7, stiffness=1e4, damping=50.0))
    return build_planar_robot(PlanarTree(name, tuple(bodies), tuple(feet)), q0=[0.0, 0.3, 0.0, 0.0])


def test_the_old_joint_ranges_now_come_from_the_models():
    """The numbers mpc.tasks.JOINT_RANGES held (hopper hip/knee, quadruped hip/knee per leg)."""
    idx, lo, hi = Task().joint_limits(get_robot("hopper"))
    assert idx.tolist() == [2, 3] and lo.tolist() == [-1.2, -2.4] and hi.tolist() == [1.2, -0.05]
    idx, lo, hi = Task().joint_limits(get_robot("quadruped"))
    assert idx.tolist() == list(range(3, 11))
    assert lo.tolist() == [-0.2, -2.6] * 4 and hi.tolist() == [1.8, -0.6] * 4


def test_the_hopper_and_quadruped_tasks_are_unchanged():
    hopper, quadruped = get_robot("hopper"), get_robot("quadruped")
    assert task_kind(hopper) == "hop" and task_kind(quadruped) == "gait"
    task = MpcOptions(**ROBOT_DEFAULTS["hopper"]).task.for_model(hopper).validate(hopper)
    assert task == Task(vx=0.3, apex_height=0.45, period=0.4)
    np.testing.assert_array_equal(task.apex_state(hopper), [0.0, 0.45, 0.2, -0.4, 0.3, 0.0, 0.0, 0.0])
    for bad in (0.35, 0.71):  # the hopper's old apex range [0.36, 0.7] m, now 0.9..1.75 x q0[z]
        with pytest.raises(ValueError, match=r"apex_height must be in \[0.36, 0.7\] m"):
            Task(vx=0.3, apex_height=bad).validate(hopper)
    qt = MpcOptions().task.for_model(quadruped).validate(quadruped)
    assert qt == Task(vx=0.3, period=0.4)
    np.testing.assert_array_equal(qt.apex_state(quadruped)[: quadruped.nq], quadruped.q0)
    with pytest.raises(ValueError, match="apex_height only applies to hopping robots"):
        Task(vx=0.3, apex_height=0.4).validate(quadruped)


def test_a_robot_no_table_knows_gets_a_task_and_its_own_ranges():
    robot = two_legged()
    assert robot.name not in ROBOT_DEFAULTS
    task = MpcOptions().task.for_model(robot).validate(robot)
    assert task == Task(vx=0.3, period=0.4)
    idx, lo, hi = task.joint_limits(robot)
    assert idx.tolist() == [2, 3] and lo.tolist() == [-0.6, -0.6] and hi.tolist() == [0.6, 0.6]
    assert len(task.joint_limits(two_legged("free", ranges=False))[0]) == 0  # no ranges: none kept
    stand = MpcOptions(stand=True).task.for_model(robot).validate(robot)
    assert stand.vx == 0.0 and stand.stand
    with pytest.raises(ValueError, match="a stand task keeps 'stilts' still in its q0: set vx = 0"):
        MpcOptions(stand=True, vx=0.2).task.validate(robot)


def test_one_sided_ranges_are_kept_with_a_far_open_side():
    bodies = (Body("base", None, (0.0, 0.0), (Joint("x", "slide_x"), Joint("z", "slide_z")), 3.0),
              Body("leg", "base", (0.0, 0.0), (Joint("knee", "hinge", actuated=True, range=(-2.0, np.inf)),),
                   0.4, inertia=0.003))
    robot = build_planar_robot(PlanarTree("one_sided", bodies, (PointContact("foot", "leg", (0.0, -0.3)),)),
                               q0=[0.0, 0.3, 0.0])
    idx, lo, hi = Task().joint_limits(robot)
    assert idx.tolist() == [2] and lo.tolist() == [-2.0] and hi[0] >= 1e6


def test_robots_without_a_floating_base_or_actuators_are_told_why():
    with pytest.raises(ValueError, match=r"'point_mass' has no floating planar base.*missing \['x'\]"):
        task_kind(get_robot("point_mass"))
    with pytest.raises(ValueError, match="'plate_springs' has no actuators"):
        task_kind(get_robot("plate_springs"))


def test_the_mpc_needs_a_robot_name_it_can_name_c_code_after():
    from mpc.mpc_controller import ContactMpc

    with pytest.raises(ValueError, match=r"robot name 'my-stilts'.*C identifier.*'my_stilts'"):
        ContactMpc(two_legged("my-stilts"), MpcOptions(), verbose=False)


def test_bad_joint_ranges_are_named():
    with pytest.raises(ValueError, match="joint 'a_hip' range must be \\(lower, upper\\) with lower <= upper"):
        build_planar_robot(PlanarTree("bad", (
            Body("base", None, (0.0, 0.0), (Joint("x", "slide_x"), Joint("z", "slide_z")), 3.0),
            Body("a", "base", (0.0, 0.0), (Joint("a_hip", "hinge", range=(1.0, -1.0)),), 0.4, inertia=0.003))),
            q0=[0.0, 0.3, 0.0])
