"""MuJoCo as a plant (sim/mujoco_plant.py): the protocol, forces in the right frame, and a
resting height that agrees with the ESS plant's."""
from __future__ import annotations

import numpy as np
import pytest

from robots import get_robot, numeric
from sim.protocol import JointCommand, actuated_joints
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
