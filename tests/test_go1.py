"""Go1 through the plant protocol, the bridge (wire protocol v2) and the run folder: the 3D path
of issue 27 (ESS, NMDP and MuJoCo run 3D robots; the hybrid plant refuses them with a clear error)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bridge import protocol as P
from robots import get_robot, numeric
from sim.invariants import Invariants
from sim.protocol import JointCommand, checked_reset, pushed_velocity
from sim.registry import make_plant

ROOT = Path(__file__).resolve().parents[1]
GO1 = get_robot("go1")


def _stand_command(model):
    from mpc.controllers import stance_feedforward

    j = model.q0[7:]
    return JointCommand(stance_feedforward(model, model.q0), j.copy(), np.zeros(12), np.full(12, 60.0),
                        np.full(12, 2.0))


def test_go1_dropped_on_mujoco_comes_to_rest_at_its_standing_height():
    """Dropped from 0.1 m under joint PD at the standing pose (with the stance feed-forward): at
    rest after 2 s, base height within 1 cm of the standing height, level, the weight on the
    four feet, feet no deeper than the plant's limit, quaternion unit to 1e-9."""
    plant = make_plant("mujoco", GO1)
    q0 = GO1.q0.copy()
    q0[2] += 0.1
    s = plant.reset(q0)
    cmd = _stand_command(GO1)
    for _ in range(200):
        s = plant.step(cmd, 0.01)
        assert not s.violation and abs(np.linalg.norm(s.q[3:7]) - 1.0) < 1e-9
    assert abs(s.q[2] - GO1.q0[2]) < 0.01, s.q[:3]
    assert np.abs(s.v).max() < 1e-2 and s.contact.all()
    total = GO1.params["mass_kg"] * GO1.gravity
    assert s.force[:, 0].sum() == pytest.approx(total, rel=0.02)
    assert numeric(GO1).contact_gap(s.q).min() > -plant.invariants.limit


def test_planar_only_plants_refuse_3d_robots_by_name():
    from launch.scenario import load_scenario

    for name in ("hybrid",):
        with pytest.raises(ValueError, match="go1 is a 3D robot.*--plant ess|mujoco"):
            make_plant(name, GO1)
        with pytest.raises(ValueError, match="scenario 'go1-stand': go1 is a 3D robot"):  # before any process starts
            load_scenario("go1-stand").with_overrides(plant=name).validate()


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(axis=st.sampled_from("xyz"), push=st.floats(-20.0, 20.0), yaw=st.floats(-3.0, 3.0),
       roll=st.floats(-0.5, 0.5))
def test_a_push_changes_the_linear_momentum_by_the_impulse(axis, push, yaw, roll):
    """pushed_velocity on a floating base: the robot's world linear momentum R (M v)[0:3] changes
    by exactly push_ns along the world axis, whatever the base's orientation."""
    from scipy.spatial.transform import Rotation

    q = GO1.q0.copy()
    q[3:7] = Rotation.from_euler("xz", [roll, yaw]).as_quat()
    v = np.random.default_rng(1).normal(size=18)
    v2 = pushed_velocity(GO1, q, v, push, axis)
    M, R = numeric(GO1).mass_matrix(q), Rotation.from_quat(q[3:7]).as_matrix()
    change = R @ (M @ (v2 - v))[0:3]
    np.testing.assert_allclose(change, push * np.eye(3)["xyz".index(axis)], atol=1e-9 * max(1.0, abs(push)))


def test_quaternion_invariant_and_reset_check():
    inv = Invariants(GO1)
    q = GO1.q0.copy()
    assert inv.check(0.0, q, np.zeros(18)) == ""
    q[3:7] *= 1.0 + 1e-6
    assert "quaternion norm" in inv.check(0.5, q, np.zeros(18))
    sunk = GO1.q0.copy()
    sunk[2:7] = (-0.06, 1.0, 0.0, 0.0, 0.0)  # upside down, the feet in the air, the body in the floor
    assert "body root_joint -0.060 m below the ground (limit -0.050 m)" in inv.check(0.5, sunk, np.zeros(18))
    with pytest.raises(ValueError, match=r"q\[3:7\].*unit quaternion"):
        checked_reset(GO1, q * 2, None, 0.0)
    q_ok = checked_reset(GO1, q, None, 0.0)[0]  # within the reset tolerance: normalised exactly
    assert abs(np.linalg.norm(q_ok[3:7]) - 1.0) < 1e-15


def test_state_of_a_3d_robot_round_trips_on_the_wire():
    dims = P.Dims.of(GO1)
    assert (dims.nq, dims.nv, dims.nu, dims.nc, dims.nf) == (19, 18, 12, 4, 3)
    arrays = [GO1.q0, np.zeros(18), np.ones(4, np.uint8), np.arange(12.0).reshape(4, 3), np.array([1], np.uint8)]
    msg = P.decode(P.encode(P.STATE, 3, 0.03, arrays, dims=dims), dims)
    np.testing.assert_array_equal(msg.arrays["force"], arrays[3])
    assert msg.arrays["status"][0] == P.STATUS_CODES["hold"]
    with pytest.raises(P.ProtocolError, match="shape"):  # a planar-shaped force is refused
        P.decode(P.encode(P.STATE, 3, 0.03, arrays[:3] + [np.zeros((4, 2))] + arrays[4:]), dims)


@pytest.mark.parametrize("sensors", ["full", "hardware"])
def test_go1_stand_example_controller_stands_the_robot(tmp_path, sensors):
    """bridge/examples/go1_stand.py (pyzmq and numpy only) against `serve-plant go1 --plant mujoco`:
    after 200 ticks the base is within 2 cm of its standing height (a pure PD, no feed-forward: the
    legs sag by weight / kp) and the quaternion stayed unit. With the robot's own sensors
    (issue 40) it prints the estimator's base state, within 1 cm of the truth."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    plant = subprocess.Popen([sys.executable, "-m", "launch", "serve-plant", "go1", "--plant", "mujoco", "--bind",
                              "ipc://" + str(tmp_path / "go1.sock"), "--mode", "lockstep", "--duration", "2.0",
                              "--log-dir", str(tmp_path), "--sensors", sensors],
                             cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ctrl = subprocess.run([sys.executable, str(ROOT / "bridge/examples/go1_stand.py"),
                               "ipc://" + str(tmp_path / "go1.sock"), "--ticks", "200"],
                              capture_output=True, text=True, timeout=120, env=env)
        assert ctrl.returncode == 0, ctrl.stderr
        assert "quaternion" in ctrl.stderr and "plant status ok" in ctrl.stderr, ctrl.stderr
        assert ("(estimated)" in ctrl.stderr) == (sensors == "hardware"), ctrl.stderr
    finally:
        out, err = plant.communicate(timeout=60)
    with np.load(tmp_path / "trajectory.npz") as d:
        q, t = d["q"], d["t"]
    assert abs(q[-1, 2] - GO1.q0[2]) < 0.02 and np.allclose(np.linalg.norm(q[:, 3:7], axis=1), 1.0, atol=1e-9)
    if sensors == "hardware":  # the printed estimate at t = 1.00 s against the truth then
        import re

        heights = dict(re.findall(r"t=(\d+\.\d+)s base height (-?[\d.]+) m", ctrl.stderr))
        truth = q[np.argmin(np.abs(t - 1.0)), 2]
        assert abs(float(heights["1.00"]) - truth) < 0.01, (heights, truth)


def test_launch_run_go1_stand_from_lying(tmp_path):
    """`launch run go1-stand` (lockstep, MuJoCo): from lying to standing within the run, no fall,
    0 misses, base height within 1 cm of the standing height at the end; plots, run.mcap and
    the side-view animation are written."""
    out = subprocess.run([sys.executable, "-m", "launch", "run", "go1-stand", "--duration", "2.5", "--json"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    summary = json.loads(out.stdout)
    folder = tmp_path / summary["run_dir"]
    assert summary["fell"] is False and summary["misses"] == 0
    with np.load(folder / "trajectory.npz") as d:
        q, force = d["q"], d["force"]
    assert q[0, 2] < 0.6 * GO1.q0[2] and abs(q[-1, 2] - GO1.q0[2]) < 0.01  # it started lying, it stands
    assert force.shape[1:] == (4, 3)
    for name in ("trajectory.png", "run.mcap", "animation.mp4"):
        assert (folder / name).stat().st_size > 0, name
