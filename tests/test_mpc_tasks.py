"""The MPC's task comes from the scenario's options and the robot's structure, joint ranges and
data (`controller_defaults`), not from a table of names: every shipped scenario resolves to the
options it had, any other legged robot gets defaults."""
from __future__ import annotations

import numpy as np
import pytest

from mpc.wholebody.controller import MpcOptions, mpc_options
from mpc.wholebody.tasks import GaitTask, PlanTask, task_kind
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
    idx, lo, hi = GaitTask().joint_limits(get_robot("hopper"))
    assert idx.tolist() == [2, 3] and lo.tolist() == [-1.2, -2.4] and hi.tolist() == [1.2, -0.05]
    idx, lo, hi = GaitTask().joint_limits(get_robot("quadruped"))
    assert idx.tolist() == list(range(3, 11))
    assert lo.tolist() == [-0.2, -2.6] * 4 and hi.tolist() == [1.8, -0.6] * 4


def test_the_hopper_and_quadruped_tasks_are_unchanged():
    hopper, quadruped = get_robot("hopper"), get_robot("quadruped")
    assert task_kind(hopper) == "hop" and task_kind(quadruped) == "gait"
    task = mpc_options(hopper).task.for_model(hopper).validate(hopper)
    assert task == GaitTask(vx=0.3, apex_height=0.45, period=0.4, guess_pose=(("hip", 0.2), ("knee", -0.4)))
    np.testing.assert_array_equal(task.apex_state(hopper), [0.0, 0.45, 0.2, -0.4, 0.3, 0.0, 0.0, 0.0])
    for bad in (0.35, 0.71):  # the hopper's old apex range [0.36, 0.7] m, now 0.9..1.75 x q0[z]
        with pytest.raises(ValueError, match=r"apex_height must be in \[0.36, 0.7\] m"):
            GaitTask(vx=0.3, apex_height=bad).validate(hopper)
    qt = mpc_options(quadruped).task.for_model(quadruped).validate(quadruped)
    assert qt == GaitTask(vx=0.3, period=0.4)
    np.testing.assert_array_equal(qt.apex_state(quadruped)[: quadruped.nq], quadruped.q0)
    with pytest.raises(ValueError, match="apex_height only applies to hopping robots"):
        GaitTask(vx=0.3, apex_height=0.4).validate(quadruped)


def test_a_robot_no_table_knows_gets_a_task_and_its_own_ranges():
    robot = two_legged()
    assert robot.controller_defaults == {} and mpc_options(robot) == MpcOptions()
    task = MpcOptions().task.for_model(robot).validate(robot)
    assert task == GaitTask(vx=0.3, period=0.4)
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
    idx, lo, hi = GaitTask().joint_limits(robot)
    assert idx.tolist() == [2] and lo.tolist() == [-2.0] and hi[0] >= 1e6


def test_robots_without_a_floating_base_or_actuators_are_told_why():
    with pytest.raises(ValueError, match=r"'point_mass' has no floating planar base.*missing \['x'\]"):
        task_kind(get_robot("point_mass"))
    with pytest.raises(ValueError, match="'plate_springs' has no actuators"):
        task_kind(get_robot("plate_springs"))


def test_the_mpc_needs_a_robot_name_it_can_name_c_code_after():
    from mpc.wholebody.controller import ContactMpc

    with pytest.raises(ValueError, match=r"robot name 'my-stilts'.*C identifier.*'my_stilts'"):
        ContactMpc(two_legged("my-stilts"), MpcOptions(), verbose=False)


def test_bad_joint_ranges_are_named():
    with pytest.raises(ValueError, match="joint 'a_hip' range must be \\(lower, upper\\) with lower <= upper"):
        build_planar_robot(PlanarTree("bad", (
            Body("base", None, (0.0, 0.0), (Joint("x", "slide_x"), Joint("z", "slide_z")), 3.0),
            Body("a", "base", (0.0, 0.0), (Joint("a_hip", "hinge", range=(1.0, -1.0)),), 0.4, inertia=0.003))),
            q0=[0.0, 0.3, 0.0])


# What every shipped MPC scenario resolved to before tasks became objects (ROBOT_DEFAULTS looked
# up by robot name, then the scenario's controller_options; the plan task's joint ranges from
# mpc.planning.hopper_holes), computed once with that code: the options, the gait cache key and
# its guess state, the joint ranges the MPC keeps (indices in q, lower, upper), the tracking
# weights on q and v, and the targets a run is measured against.
OLD_DEFAULTS = dict(vx=None, apex_height=None, period=0.4, dt=0.01, n_stages=30, sigma=1e-4, sigma_friction=1e-3,
                    qp_iter_max=50, qp_tol=1e-3, cond_n=10, hpipm_mode="BALANCE", kp=5.0, kd=0.5, z_l1=100.0,
                    deadline_s=0.009, inject_delay_s=0.0, plan=None, stand=False)
HOPPER_GAIT = {
    "options": dict(OLD_DEFAULTS, vx=0.3, apex_height=0.45, hpipm_mode="SPEED_ABS"),
    "gait_key": "e561b459e0724564", "guess": [0.0, 0.45, 0.2, -0.4, 0.3, 0.0, 0.0, 0.0],
    "joint_limits": [[2, 3], [-1.2, -2.4], [1.2, -0.05]], "w_x": [1.0, 100.0, 10.0, 10.0, 10.0, 1.0, 0.1, 0.1],
    "targets": {"apex_height": 0.45, "vx": 0.3},
}
BEFORE = {
    "hopper": HOPPER_GAIT,
    "hopper-realtime": HOPPER_GAIT,
    "hopper-holes": {
        "options": dict(OLD_DEFAULTS, apex_height=0.45, hpipm_mode="SPEED_ABS", n_stages=40, z_l1=1000.0,
                        plan="<resolved>"),
        "joint_limits": [[2, 3], [-1.1780972450961724, -1.5707963267948966], [1.1780972450961724, 1.5707963267948966]],
        "w_x": [10.0, 100.0, 10.0, 10.0, 10.0, 1.0, 0.1, 0.1], "targets": {},
    },
    "quadruped": {
        # retuned since (robots/library/quadruped.py): 15 stages and SPEED instead of 20 and BALANCE
        "options": dict(OLD_DEFAULTS, vx=0.3, n_stages=15, cond_n=None, hpipm_mode="SPEED", z_l1=1000.0),
        "gait_key": "1548a3c2558c88a8",
        "guess": [0.0, 0.2786826837388662, 0.0] + [0.8, -1.6] * 4 + [0.3] + [0.0] * 10,
        "joint_limits": [list(range(3, 11)), [-0.2, -2.6] * 4, [1.8, -0.6] * 4],
        "w_x": [1.0, 100.0, 100.0] + [10.0] * 8 + [10.0, 1.0, 1.0] + [0.1] * 8, "targets": {"vx": 0.3},
    },
}
PD_BEFORE = {"hopper-pd": dict(kp=40.0, kd=1.0, gravity_feedforward=True, rise_s=0.0),
             "quadruped-pd": dict(kp=40.0, kd=1.0, gravity_feedforward=True, rise_s=0.0),
             "go1-stand": dict(kp=60.0, kd=2.0, gravity_feedforward=True, rise_s=1.0)}


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_every_shipped_mpc_scenario_resolves_to_what_it_did_before(name):
    from dataclasses import asdict, replace

    from launch.run import mpc_task, task_targets
    from launch.scenario import load_scenario
    from mpc.wholebody.controller import default_weights
    from mpc.wholebody.gaits import _key
    from mpc.wholebody.ocp import ContactOcp
    from mpc.planning.shipped import resolve_plan

    expected = BEFORE[name]
    sc = load_scenario(name)
    model = get_robot(sc.robot)
    plan = sc.controller_options.get("plan")
    options = dict(sc.controller_options, **({"plan": str(resolve_plan(plan)[0])} if plan else {}))
    opts = mpc_options(model, **options)
    resolved = {k: v for k, v in asdict(opts).items() if k in OLD_DEFAULTS}
    if plan:
        assert resolved.pop("plan") == str(resolve_plan(plan)[0])
        resolved["plan"] = "<resolved>"
    assert resolved == expected["options"]
    task = opts.task.for_model(model).validate(model)
    assert [a.tolist() for a in task.joint_limits(model)] == expected["joint_limits"]
    problem = ContactOcp(model, opts.ocp)
    weights = task.weights(model, replace(default_weights(problem), z_l1=opts.z_l1))
    assert weights.w_x.tolist() == expected["w_x"] and weights.z_l1 == opts.z_l1
    assert task_targets(sc) == expected["targets"]
    if "gait_key" in expected:  # the cached reference gait is found again
        assert task.apex_state(model).tolist() == expected["guess"]
        assert _key(model, task, opts.ocp, int(round(task.period / opts.dt))) == expected["gait_key"]
    else:
        from mpc.wholebody.terrain import HoleTerrain

        assert isinstance(task, PlanTask) and not task.periodic
        resolved_sc = sc.with_overrides(controller_options=options)  # as launch.run resolves it
        assert mpc_task(resolved_sc).terrain() == HoleTerrain()  # the shipped plan's three holes


@pytest.mark.parametrize("name", sorted(PD_BEFORE))
def test_the_pd_scenarios_options_are_unchanged(name):
    from dataclasses import asdict

    from launch.run import task_targets
    from launch.scenario import load_scenario
    from mpc.controllers import pd_options
    from robots import get_robot

    sc = load_scenario(name)
    # go1-stand's gains are derived from the robot now (60 and 2 before, 59.9 and 1.98 derived)
    assert asdict(pd_options(get_robot(sc.robot), **sc.controller_options)) == pytest.approx(PD_BEFORE[name], rel=0.01)
    assert task_targets(sc) == {}


def test_the_hopper_holes_scenario_keeps_the_planners_joint_ranges():
    """The plan task's ranges are the scenario's data; they are the ranges the plan was made in."""
    from launch.scenario import load_scenario
    from mpc.planning.hopper_holes import HopperTask

    ranges = load_scenario("hopper-holes").controller_options["plan_joint_ranges"]
    planner = HopperTask()
    assert ranges == {"hip": [-planner.hip_max, planner.hip_max], "knee": [-planner.knee_max, planner.knee_max]}


def test_a_plan_task_reads_its_terrain_from_the_plan_and_its_ranges_from_the_task(tmp_path):
    from mpc.wholebody.terrain import HoleTerrain, terrain_arrays

    hopper = get_robot("hopper")
    terrain = HoleTerrain(centers=(0.2, 0.6), semi_x=0.15, semi_z=0.08)
    np.savez(tmp_path / "holes.npz", t=np.zeros(2), **terrain_arrays(terrain))
    np.savez(tmp_path / "flat.npz", t=np.zeros(2))
    task = MpcOptions(plan=str(tmp_path / "holes.npz"), plan_joint_ranges={"knee": [-1.0, 0.5]}).task
    assert task == PlanTask(str(tmp_path / "holes.npz"), (("knee", -1.0, 0.5),))
    assert task.validate(hopper).terrain() == terrain and task.targets == {}
    idx, lo, hi = task.joint_limits(hopper)
    assert idx.tolist() == [3] and lo.tolist() == [-1.0] and hi.tolist() == [0.5]
    flat = PlanTask(str(tmp_path / "flat.npz"))
    assert flat.terrain() is None
    assert [a.tolist() for a in flat.joint_limits(hopper)] == [a.tolist() for a in GaitTask().joint_limits(hopper)]
    with pytest.raises(ValueError, match="plan_joint_ranges names 'ankle', not a coordinate of 'hopper'"):
        PlanTask(str(tmp_path / "flat.npz"), {"ankle": [0.0, 1.0]}).validate(hopper)
    with pytest.raises(ValueError, match="lower <= upper"):
        PlanTask("p.npz", {"knee": [1.0, -1.0]})
    with pytest.raises(ValueError, match=r"plan_joint_ranges must map joint names to \[lower, upper\]"):
        MpcOptions(plan="p.npz", plan_joint_ranges={"knee": 1.0})
    with pytest.raises(ValueError, match="plan_joint_ranges apply to a plan"):
        MpcOptions(plan_joint_ranges={"knee": [-1.0, 0.5]}).validate()
    with pytest.raises(ValueError, match="does not exist"):
        PlanTask(str(tmp_path / "none.npz")).validate(hopper)


def test_a_robots_mpc_tuning_is_its_data_and_the_scenario_overrides_it():
    hopper = get_robot("hopper")
    assert hopper.controller_defaults["mpc"]["hpipm_mode"] == "SPEED_ABS"
    assert mpc_options(hopper).guess_pose == (("hip", 0.2), ("knee", -0.4))
    opts = mpc_options(hopper, hpipm_mode="BALANCE", guess_pose={})
    assert opts.hpipm_mode == "BALANCE" and opts.guess_pose == () and opts.apex_height == 0.45
    with pytest.raises(ValueError, match=r"unknown mpc options \['horizon'\] \(from the scenario\)"):
        mpc_options(hopper, horizon=3)
    with pytest.raises(ValueError, match="guess_pose names 'ankle', not a coordinate of 'hopper'"):
        mpc_options(hopper, guess_pose={"ankle": 0.1}).task.validate(hopper)
    base = Body("base", None, (0.0, 0.0), (Joint("x", "slide_x"), Joint("z", "slide_z")), 3.0)
    odd = build_planar_robot(PlanarTree("odd", (base,), controller_defaults={"mpc": {"horizon": 3}}))
    with pytest.raises(ValueError, match=r"unknown mpc options \['horizon'\] \(from odd's controller_defaults"):
        mpc_options(odd)
