"""MuJoCo as a plant (sim/mujoco_plant.py): the protocol, forces in the right frame, and a
resting height that agrees with the ESS plant's."""
from __future__ import annotations

import numpy as np
import pytest

from robots import get_robot, numeric
from sim.protocol import JointCommand, actuated_joints, actuated_positions
from sim.mujoco_plant import MujocoPlant
from sim.registry import make_plant


def _stand(name: str, plant_name: str, seconds: float = 2.0):
    model = get_robot(name)
    plant = make_plant(plant_name, model)
    q = np.array(model.q0, dtype=float)
    q[model.q_names.index("z")] -= float(numeric(model, verbose=False).contact_gap(q).min())  # feet on the ground
    j = actuated_joints(model)
    cmd = JointCommand(np.zeros(model.nu), q[j], np.zeros(model.nu), np.full(model.nu, 100.0), np.full(model.nu, 5.0))
    state = plant.reset(q)
    for _ in range(int(round(seconds / 0.01))):
        state = plant.step(cmd, 0.01)
    return model, state


@pytest.mark.parametrize("name", ["hopper", "quadruped"])
def test_standing_robot_carries_its_weight_and_rests_where_ess_does(name):
    model, state = _stand(name, "mujoco")
    weight = float(numeric(model, verbose=False).mass_matrix(model.q0)[1, 1]) * model.gravity  # z row: total mass
    assert state.violation == "" and state.contact.all()
    assert state.force[:, 0].sum() == pytest.approx(weight, rel=0.02)  # normal forces push up, in N
    assert np.abs(state.force[:, 1]).max() < 0.05 * weight
    assert state.t == pytest.approx(2.0, abs=1e-12)
    _, ess = _stand(name, "ess")
    z = model.q_names.index("z")
    assert abs(state.q[z] - ess.q[z]) < 0.01  # resting base heights within 1 cm


def test_bad_input_is_refused():
    model = get_robot("hopper")
    plant = make_plant("mujoco", model)
    with pytest.raises(RuntimeError, match="reset"):
        plant.step(JointCommand.zero(model.nu), 0.01)
    plant.reset(model.q0)
    with pytest.raises(ValueError, match="dt"):
        plant.step(JointCommand.zero(model.nu), -1.0)
    with pytest.raises(ValueError, match="q"):
        plant.reset(np.zeros(3))
    with pytest.raises(ValueError, match="plant_rate_hz"):
        make_plant("mujoco", model, plant_rate_hz=0.0)
    import dataclasses

    no_floor = dataclasses.replace(model, mjcf=model.mjcf.replace('name="floor"', 'name="ground"'))
    with pytest.raises(ValueError, match="geom named 'floor'"):
        MujocoPlant(no_floor)
    head, tail = model.mjcf.rsplit("</mujoco>", 1)  # a sensor of the MJCF's own would shift the feet's
    own_sensor = dataclasses.replace(model, mjcf=f'{head}<sensor><clock name="c"/></sensor></mujoco>{tail}')
    with pytest.raises(ValueError, match="sensors of its own"):
        MujocoPlant(own_sensor)


def _contact_list_forces(plant, model) -> np.ndarray:
    """The oracle: each foot's force (normal, x (, y), N, the floor's on the foot) from MuJoCo's
    contact list, mj_contactForce rotated to the world frame."""
    import mujoco

    d = plant.data
    floor = mujoco.mj_name2id(plant.mj, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    foot_of = {mujoco.mj_name2id(plant.mj, mujoco.mjtObj.mjOBJ_GEOM, c.name): i for i, c in enumerate(model.contacts)}
    want = np.zeros((model.nc, model.dim))
    f6 = np.zeros(6)
    for k in range(d.ncon):
        g1, g2 = int(d.contact.geom1[k]), int(d.contact.geom2[k])
        if floor not in (g1, g2):
            continue
        foot, sign = (g2, 1.0) if g1 == floor else (g1, -1.0)
        mujoco.mj_contactForce(plant.mj, d, k, f6)
        world = sign * d.contact.frame[k].reshape(3, 3).T @ f6[:3]
        want[foot_of[foot]] += world[[2, 0, 1]][:model.dim]
    return want


@pytest.mark.parametrize("name", ["go1", "quadruped"])
def test_compiled_outputs_equal_mujocos_contact_force_and_the_state_conversion(name):
    """The plant's compiled reading of its foot sensors, of the state and of the torques equal
    mj_contactForce over MuJoCo's contact list rotated to the world, MuJoCo's qpos and qvel (for
    go1 through robots.urdf.mujoco_state, the free joint's convention) and its actuator forces:
    go1 landing tilted with its feet sliding, the planar quadruped dropped with a forward speed."""
    from robots.urdf import mujoco_state

    model = get_robot(name)
    plant = MujocoPlant(model)
    q0, v0 = np.array(model.q0, dtype=float), np.zeros(model.nv)
    if model.floating_base:
        q0[2] += 0.02
        q0[3:7] = [0.02, -0.03, 0.1, 1.0] / np.linalg.norm([0.02, -0.03, 0.1, 1.0])
        v0[:6] = [0.4, -0.3, -0.2, 0.5, 0.2, -0.4]
    else:
        v0[model.q_names.index("x")] = 0.5
    plant.reset(q0, v0)
    cmd = JointCommand(np.zeros(model.nu), q0[actuated_positions(model)], np.zeros(model.nu),
                       np.full(model.nu, 40.0), np.full(model.nu, 1.0))
    touching, ticks = 0, 300
    for _ in range(ticks):
        s = plant.step(cmd, 1e-3)
        want = _contact_list_forces(plant, model)
        np.testing.assert_allclose(s.force, want, rtol=1e-12, atol=1e-9)
        np.testing.assert_array_equal(s.contact, want[:, 0] != 0.0)
        touching += int(s.contact.sum())
        qpos, qvel = mujoco_state(s.q, s.v) if model.floating_base else (s.q, s.v)
        np.testing.assert_allclose(qpos, plant.data.qpos, rtol=0, atol=1e-14)  # the quaternion made unit
        np.testing.assert_allclose(qvel, plant.data.qvel, rtol=0, atol=1e-13)
        np.testing.assert_array_equal(s.tau, plant.data.actuator_force)
    assert touching > ticks  # feet were in contact on most steps


def test_reset_clears_the_command_and_a_bad_command_is_refused_by_name():
    """After reset the actuators apply nothing until a command arrives; a command with a bad
    field raises ValueError naming it and loads nothing; int and list fields are converted."""
    model = get_robot("go1")
    plant = MujocoPlant(model)
    nu = model.nu
    good = JointCommand(np.ones(nu), model.q0[7:], np.zeros(nu), np.full(nu, 40.0), np.full(nu, 1.0))
    plant.reset(model.q0)
    plant.step(good, 1e-3)
    assert np.abs(plant.state().tau).max() > 0
    assert not plant.reset(model.q0).tau.any()
    for field, bad in (("kp", -np.ones(nu)), ("tau_ff", np.full(nu, np.nan)), ("q_des", np.zeros(nu - 1))):
        cmd = JointCommand(**{**good.__dict__, field: bad})
        with pytest.raises(ValueError, match=field):
            plant.step(cmd, 1e-3)
        assert not plant.data.ctrl.any()
    s = plant.step(JointCommand(list(range(nu)), np.zeros(nu, dtype=int), None, [0] * nu, [0] * nu), 1e-3)
    np.testing.assert_allclose(s.tau, np.arange(nu))  # no gains: tau is the feed-forward


def test_read_only_commands_take_the_compiled_path(monkeypatch):
    """The bridge decodes a COMMAND's fields as read-only views of the message: they load
    straight into the actuators (pack_command, the validating path, is never called), as
    writable ones do."""
    import sim.mujoco_plant as mp

    model = get_robot("go1")
    plant = MujocoPlant(model)
    plant.reset(model.q0)
    nu = model.nu
    fields = [np.zeros(nu), model.q0[7:].copy(), np.zeros(nu), np.full(nu, 40.0), np.full(nu, 1.0)]
    for a in fields:
        a.setflags(write=False)

    def refuse(*args, **kwargs):
        raise AssertionError("pack_command called for a well-formed command")

    monkeypatch.setattr(mp, "pack_command", refuse)
    for cmd in (JointCommand(*fields), JointCommand(*(a.copy() for a in fields))):
        assert plant.step(cmd, 1e-3).violation == ""


@pytest.mark.parametrize("dt", [1e-3, 1e-2, 2.5e-3])
def test_the_compiled_step_is_mujocos_own_step(dt):
    """The plant's one compiled call per period (the command loaded into MuJoCo's buffers by their
    addresses, mj_step called by address) gives bit for bit what the bindings' mj_step gives on a
    twin model with the same actuator inputs, for whole and partial MuJoCo steps (2.5 ms at 1 kHz)."""
    import mujoco

    from sim.mujoco_plant import _load_command

    model = get_robot("go1")
    plant, twin = MujocoPlant(model), MujocoPlant(model)
    q0 = np.array(model.q0, dtype=float)
    q0[2] += 0.05
    plant.reset(q0)
    twin.reset(q0)
    rng = np.random.default_rng(4)
    for k in range(40):
        cmd = JointCommand(rng.normal(0, 2, model.nu), model.q0[7:] + rng.normal(0, 0.2, model.nu),
                           rng.normal(0, 1, model.nu), np.full(model.nu, 40.0), np.full(model.nu, 1.0))
        s = plant.step(cmd, dt)
        assert _load_command(cmd.tau_ff, cmd.q_des, cmd.v_des, cmd.kp, cmd.kd, twin._act, twin.data.ctrl,
                             twin.mj.actuator_biasprm)
        n = int((dt + 1e-12) / twin.h)
        mujoco.mj_step(twin.mj, twin.data, n)
        if dt - n * twin.h > 1e-12:
            twin.mj.opt.timestep = dt - n * twin.h
            mujoco.mj_step(twin.mj, twin.data)
            twin.mj.opt.timestep = twin.h
        np.testing.assert_array_equal(plant.data.qpos, twin.data.qpos)
        np.testing.assert_array_equal(plant.data.qvel, twin.data.qvel)
        np.testing.assert_array_equal(s.tau, twin.data.actuator_force)
        assert s.t == pytest.approx((k + 1) * dt, abs=1e-12)
