"""The URDF quadrupeds' data (robots/library/quadrupeds3d.py), go2 and anymal_c in particular:
feet and joints in the URDF tree's order, mass the URDF's, feet on the ground and left-right
symmetric at q0, the lying pose on its four feet, ANYmal's X-shaped knees, contact settings
scaled from go1's, and the safe command's spring alone keeping each robot standing.

The dynamics against pinocchio and MuJoCo are tests/test_robots3d.py's and tests/test_spatial.py's
(parametrized over the same robots)."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

from robots import get_robot, numeric
from robots.floating import resting_configuration
from robots.library.quadrupeds3d import QUADRUPEDS
from robots.urdf import EXAMPLE_ROBOTS, load_urdf_tree
from sim.protocol import JointCommand
from sim.registry import make_plant

ROBOTS = tuple(QUADRUPEDS)
# (standing, lying) base heights, m (the module docstring's)
HEIGHTS = {"go2": (0.287, 0.113), "anymal_c": (0.570, 0.105)}


def test_every_urdf_quadruped_is_a_built_in_robot():
    from robots.registry import _BUILTIN

    assert set(ROBOTS) <= set(_BUILTIN) and set(ROBOTS) <= set(EXAMPLE_ROBOTS)
    assert {"go2", "anymal_c"} <= set(ROBOTS)


@pytest.mark.parametrize("name", ROBOTS)
def test_feet_and_joints_follow_the_urdf_tree(name):
    """Joints in pinocchio's (the URDF tree's) order; the feet are the named frames in that
    order, and foot i is moved by joints 3i, 3i+1, 3i+2 alone (its leg)."""
    model = get_robot(name)
    tree = load_urdf_tree(name)
    pm = pin.buildModelFromUrdf(str(tree.path), pin.JointModelFreeFlyer())
    assert model.u_names == tuple(pm.names[2:])
    assert tuple(c.name for c in model.contacts) == EXAMPLE_ROBOTS[name][1]
    Jn, Jt = numeric(model, verbose=False).contact_jacobians(model.q0)
    for i in range(4):
        moving = np.flatnonzero(np.abs(np.vstack([Jn[i], Jt[2 * i:2 * i + 2]])[:, 6:]).sum(axis=0) > 1e-9)
        assert moving.tolist() == [3 * i, 3 * i + 1, 3 * i + 2], (model.contacts[i].name, moving)
    if name == "anymal_c":
        assert [c.name[:2] for c in model.contacts] == ["LF", "LH", "RF", "RH"]


@pytest.mark.parametrize("name", ROBOTS)
def test_mass_is_the_urdfs_and_q0_stands_level_on_four_symmetric_feet(name):
    model = get_robot(name)
    fns = numeric(model, verbose=False)
    masses = [float(m.get("value")) for m in ET.parse(load_urdf_tree(name).path).getroot().iter("mass")]
    assert fns.mass_matrix(model.q0)[0, 0] == pytest.approx(sum(masses), rel=1e-12)
    assert model.params["mass_kg"] == pytest.approx(sum(masses), rel=1e-12)
    points = fns.contact_points(model.q0)
    np.testing.assert_allclose(points[:, 2], 0.0, atol=1e-12)  # the lowest foot at z = 0: all four
    mirrored = points[:, :2] * [1.0, -1.0]
    assert max(np.min(np.linalg.norm(points[:, :2] - p, axis=1)) for p in mirrored) < 1e-6
    if name in HEIGHTS:
        assert model.q0[2] == pytest.approx(HEIGHTS[name][0], abs=1e-3)


@pytest.mark.parametrize("name", ROBOTS)
def test_the_lying_pose_rests_low_on_all_four_feet(name):
    model = get_robot(name)
    lying = model.params["poses"]["lying"]
    q = resting_configuration(model, lying)
    np.testing.assert_allclose(numeric(model, verbose=False).contact_gap(q), 0.0, atol=1e-9)
    assert 0.1 * model.q0[2] < q[2] < 0.5 * model.q0[2]
    assert np.all(np.asarray(lying) >= model.q_min[7:]) and np.all(np.asarray(lying) <= model.q_max[7:])
    if name in HEIGHTS:
        assert q[2] == pytest.approx(HEIGHTS[name][1], abs=1e-3)


def test_anymal_knees_are_x_shaped():
    """Front knees bend backwards, hind knees forwards: every knee lies between its hip and the
    body's centre along x, standing and lying."""
    model = get_robot("anymal_c")
    fns = numeric(model, verbose=False)
    for q in (model.q0, resting_configuration(model, model.params["poses"]["lying"])):
        x = {n: fns.body_poses(q)[model.body_names.index(n), 0] for n in model.body_names}
        for leg in ("LF", "LH", "RF", "RH"):
            assert 0.05 < abs(x[f"{leg}_HFE"]) - abs(x[f"{leg}_KFE"]), leg
            assert np.sign(x[f"{leg}_KFE"]) == (1 if leg[1] == "F" else -1)


@pytest.mark.parametrize("name", ["go2", "anymal_c"])
def test_contact_and_spring_scale_with_the_mass_from_go1(name):
    """Static sink on four feet, m g / (4 k), and damping per kg within 3 % of go1's; the safe
    spring's sag under the largest stance torque within 10 % of go1's."""
    from mpc.controllers import stance_feedforward

    def figures(robot):
        m = get_robot(robot)
        c = m.contacts[0]
        mass = m.params["mass_kg"]
        sag = np.abs(stance_feedforward(m, m.q0)).max() / m.controller_defaults["safe"]["kp"]
        return mass * m.gravity / (4 * c.stiffness), c.damping / mass, sag

    ours, go1 = figures(name), figures("go1")
    assert ours[0] == pytest.approx(go1[0], rel=0.03) and ours[1] == pytest.approx(go1[1], rel=0.03)
    assert ours[2] == pytest.approx(go1[2], rel=0.1)


@pytest.mark.parametrize("plant", ["ess", "mujoco"])
@pytest.mark.parametrize("name", ["go2", "anymal_c"])
def test_the_safe_spring_alone_keeps_it_standing(name, plant):
    """The plant server's safe command (zero torque, the robot's spring at the joints' pose,
    damping 1 N m s/rad) for 2 s from q0: the base stays above 80 % of its standing height."""
    model = get_robot(name)
    p = make_plant(plant, model)
    p.reset(model.q0)
    nu = model.nu
    cmd = JointCommand(np.zeros(nu), model.q0[7:], np.zeros(nu),
                       np.full(nu, model.controller_defaults["safe"]["kp"]), np.full(nu, 1.0))
    low = np.inf
    for _ in range(200):
        s = p.step(cmd, 0.01)
        assert not s.violation, s.violation
        low = min(low, s.q[2])
    assert low > 0.8 * model.q0[2], (low, model.q0[2])
