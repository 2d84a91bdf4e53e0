"""Plant-side model errors (launch/model_errors.py) and the in-process episode (launch/episode.py)."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

from launch.model_errors import ModelErrorController, plant_robot, plant_robot_params, with_model_errors
from launch.scenario import Scenario, load_scenario
from robots import get_robot
from sim.protocol import JointCommand


def _mass_matrix(model, q):
    return np.array(ca.Function("M", [model.q], [model.mass_matrix])(q))


@pytest.mark.parametrize("changes, match", [
    ({"mass_scale": 0.0}, "mass_scale must be a factor in"),
    ({"inertia_scale": float("nan")}, "inertia_scale must be a finite number"),
    ({"ground_stiffness_scale": 50.0}, "ground_stiffness_scale must be a factor in"),
    ({"friction_mu": -0.1}, "friction_mu must be a friction coefficient"),
    ({"command_latency_ticks": 1.5}, "command_latency_ticks must be a whole number"),
    ({"sensor_noise_v": -1.0}, "sensor_noise_v must be a standard deviation"),
])
def test_bad_model_errors_are_named(changes, match):
    with pytest.raises(ValueError, match=match):
        load_scenario("hopper").with_overrides(**changes).validate()


def test_ground_stiffness_on_a_plant_without_compliant_contacts_is_refused():
    with pytest.raises(ValueError, match="plant 'mujoco' has its own contact model"):
        load_scenario("hopper").with_overrides(plant="mujoco", ground_stiffness_scale=2.0).validate()


def test_an_error_the_robot_has_no_parameter_for_is_refused():
    sc = Scenario(name="b", robot="block", plant="ess", controller="pd", inertia_scale=1.2)
    with pytest.raises(ValueError, match="inertia_scale: robot 'block' has no inertia parameters"):
        sc.validate()


def test_plant_robot_scales_masses_and_inertias_and_the_controller_keeps_the_nominal_one():
    sc = load_scenario("hopper")
    assert plant_robot_params(sc) == {} and plant_robot(sc) is get_robot("hopper")
    sc = sc.with_overrides(mass_scale=1.2, inertia_scale=1.2, friction_mu=0.3, ground_stiffness_scale=0.5).validate()
    params = plant_robot_params(sc)
    nominal = get_robot("hopper")
    assert params["m_body"] == pytest.approx(1.2 * nominal.params["m_body"])
    assert params["I_shank"] == pytest.approx(1.2 * nominal.params["I_shank"])
    plant = plant_robot(sc)
    q = nominal.q0 + np.array([0.0, 0.0, 0.3, -0.6])
    np.testing.assert_allclose(_mass_matrix(plant, q), 1.2 * _mass_matrix(nominal, q), rtol=1e-12)
    assert plant.contacts[0].mu == 0.3 and nominal.contacts[0].mu == 0.8
    assert plant.contacts[0].stiffness == pytest.approx(0.5 * nominal.contacts[0].stiffness)
    assert plant.contacts[0].damping == nominal.contacts[0].damping


class _Clock:
    """A controller whose command's tau_ff is the time it was computed at; it records what it saw."""

    def __init__(self):
        self.model = get_robot("hopper")
        self.seen = []

    def compute(self, t, q, v, contact):
        self.seen.append((q.copy(), v.copy()))
        return JointCommand.torque(np.array([t, t])), {"compute": 0.0}

    def tick_info(self):
        return {"status": 0}


def test_latency_delays_commands_by_whole_ticks():
    ctrl = ModelErrorController(_Clock(), latency_ticks=2)
    q, v = np.zeros(4), np.zeros(4)
    applied = [ctrl.compute(0.01 * k, q, v, np.zeros(1, bool))[0].tau_ff[0] for k in range(6)]
    assert applied == pytest.approx([0.0, 0.0, 0.0, 0.01, 0.02, 0.03])
    assert ctrl.tick_info() == {"status": 0} and ctrl.model.name == "hopper"  # the rest is the controller's


def test_sensor_noise_has_the_asked_spread_and_repeats_with_the_seed():
    def seen(seed):
        inner = _Clock()
        ctrl = ModelErrorController(inner, noise_q=0.01, noise_v=0.1, seed=seed)
        for _ in range(2000):
            ctrl.compute(0.0, np.zeros(4), np.zeros(4), np.zeros(1, bool))
        return np.array([s[0] for s in inner.seen]), np.array([s[1] for s in inner.seen])

    q, v = seen(3)
    assert q.std() == pytest.approx(0.01, rel=0.05) and v.std() == pytest.approx(0.1, rel=0.05)
    np.testing.assert_array_equal(seen(3)[0], q)
    assert not np.array_equal(seen(4)[0], q)
    sc = load_scenario("hopper")
    assert with_model_errors(inner := _Clock(), sc) is inner  # no errors, no wrapper


def test_episode_row_of_a_short_pd_stand():
    from launch.episode import RESULT_COLUMNS, run_episode

    row = run_episode(load_scenario("hopper-pd").with_overrides(duration_s=0.3).validate())
    assert set(row) == set(RESULT_COLUMNS)
    assert row["error"] == "" and row["success"] and not row["fell"] and row["ticks"] == 30
    assert row["misses"] == 0 and row["apex_error_m"] is None and row["solve_p99_ms"] > 0 and row["wall_s"] > 0


def test_a_crashing_episode_is_a_failed_row_with_its_error():
    from launch.episode import run_episode

    row = run_episode(load_scenario("hopper-pd").with_overrides(duration_s=0.3, plant_options={"bogus": 1}))
    assert not row["success"] and "bogus" in row["error"]
