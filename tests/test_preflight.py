"""launch/preflight.py: a robot that lacks what a scenario needs is refused when the scenario is
validated, in one line naming the field and the fix, before `launch run` makes a run folder or
starts a process (it used to fail in the plant's child, the cause only in plant.log)."""
from __future__ import annotations

import uuid

import pytest

from launch.cli import main
from launch.scenario import load_scenario

NO_LYING = '''
from robots.floating import FootContacts, build_floating_robot
from robots.urdf import example_robot_path, load_urdf_tree


def build():
    """go2 from its URDF, without the poses the built-in go2 carries."""
    tree = load_urdf_tree(str(example_robot_path("go2_description/urdf/go2.urdf")),
                          feet=("FL_foot", "FR_foot", "RL_foot", "RR_foot"))
    return build_floating_robot(tree, FootContacts(radius=0.022), stance=[0.0, 0.9, -1.8] * 4)
'''

VARIANTS = '''
import dataclasses

import numpy as np
from scipy.spatial.transform import Rotation

from robots import get_robot


def dashed():
    return dataclasses.replace(get_robot("go1"), name="my-go1")


def yawed():
    go1 = get_robot("go1")
    q0 = go1.q0.copy()
    q0[3:7] = Rotation.from_euler("z", 0.3).as_quat()
    return dataclasses.replace(go1, q0=q0)
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """Write a module into tmp_path (a new name each time), importable from there, and run from
    there; returns a function text -> module name."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(text: str) -> str:
        name = f"user_robot_{uuid.uuid4().hex[:8]}"
        (tmp_path / f"{name}.py").write_text(text)
        return name

    return write


def test_a_robot_without_the_lying_pose_is_refused_before_the_run_starts(user_module, tmp_path, capsys):
    name = user_module(NO_LYING)
    code = main(["run", "go1-stand", "--robot", f"{name}:build", "--duration", "1", "--no-animation"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and "\n" not in err, err
    assert err == (f"error: robot '{name}:build' has no 'lying' pose (params['poses']); go1-stand starts from it: "
                   "add poses={'lying': [12 joint angles, rad]} to the robot's params (docs/ROBOTS3D.md)")
    assert not (tmp_path / "runs").exists()  # no run folder, no process


def test_a_planar_robot_cannot_start_from_a_pose():
    with pytest.raises(ValueError, match=r"robot 'hopper' is planar; go1-stand starts from the pose 'lying'"):
        load_scenario("go1-stand").with_overrides(robot="hopper").validate()


@pytest.mark.parametrize("builder, match", [
    ("dashed", r"its name 'my-go1' must be a C identifier .* for go1-balance's 3D MPC"),
    ("yawed", r"cannot run go1-balance's 3D MPC: go1: the feet are not left-right symmetric at q0"),
])
def test_the_3d_mpc_needs_are_checked_up_front(user_module, builder, match):
    name = user_module(VARIANTS)
    with pytest.raises(ValueError, match=match):
        load_scenario("go1-balance").with_overrides(robot=f"{name}:{builder}").validate()


def test_the_shipped_quadrupeds_pass():
    for robot in ("go2", "anymal_c"):
        for scenario in ("go1-stand", "go1-balance"):
            load_scenario(scenario).with_overrides(robot=robot).validate()


@pytest.mark.parametrize("scenario, overrides, match", [
    ("go1", {"control_rate_hz": 50.0}, r"first stage \(stage_dts\[0\] = 0.01 s\) must be the control period "
                                       r"\(1 / control_rate_hz = 0.02 s\)"),
    ("hopper", {"control_rate_hz": 50.0}, r"first stage \(dt = 0.01 s\) must be the control period"),
    ("go1", {"controller_options": {"vx": 0.5, "stage_dts": [0.01, -0.02]}}, r"stage_dts must be"),
    ("go1", {"controller_options": {"n_stages": 20}}, r"mpc option 'n_stages' \(from the scenario\) is replaced by stage_dts"),
])
def test_the_mpc_options_and_period_are_checked_up_front(scenario, overrides, match):
    """The MPC's options are resolved when the scenario is validated (a bad value fails there, not
    in the controller's child), and its first stage must be the control period."""
    with pytest.raises(ValueError, match=match):
        load_scenario(scenario).with_overrides(**overrides).validate()


@pytest.mark.parametrize("scenario, first_stage", [("go1", {"stage_dts": [0.02] * 10}), ("hopper", {"dt": 0.02})])
def test_a_slower_control_rate_with_a_matching_first_stage_passes(scenario, first_stage):
    sc = load_scenario(scenario)
    sc.with_overrides(control_rate_hz=50.0, controller_options={**sc.controller_options, **first_stage}).validate()
