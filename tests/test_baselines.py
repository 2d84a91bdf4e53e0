"""The tutorial's three contact methods (seed 003) as plants, checked against closed-form physics."""
from __future__ import annotations

import math

import numpy as np
import pytest

from robots import get_robot
from sim.baselines import TUTORIAL_TANH, HybridResetPlant, PenaltyPlant, TimeSteppingPlant
from sim.protocol import JointCommand, PlantState

G, MASS = 9.81, 10.0


def run(plant, q0, duration, dt=1e-3, command=None):
    """Reset, then step at dt; returns the list of heights (first coordinate) after each step."""
    plant.reset(q0)
    command = command or JointCommand.zero(plant.model.nu)
    return np.array([plant.step(command, dt).q[0] for _ in range(int(round(duration / dt)))])


def apexes(z: np.ndarray) -> np.ndarray:
    """Local maxima of a sampled height above 1 mm."""
    return np.array([z[i] for i in range(1, len(z) - 1) if z[i] >= z[i - 1] and z[i] > z[i + 1] and z[i] > 1e-3])


def test_hybrid_reset_apex_ratio_is_e_squared_to_step_accuracy():
    """Guard + jump map with restitution e: apex heights scale by e^2 up to the O(dt) error of
    locating the guard on the step grid (0.3 % at dt = 0.1 ms, 2 % at 1 ms)."""
    e = 0.7
    plant = HybridResetPlant(get_robot("point_mass"), restitution=e, dt_sim=1e-4)
    z = run(plant, [1.0], 2.0, dt=1e-4)
    ap = apexes(z)
    assert len(ap) >= 3
    assert ap[0] == pytest.approx(e**2, rel=1e-2)
    np.testing.assert_allclose(ap[1:3] / ap[:2], e**2, rtol=5e-3)


def test_hybrid_reset_plastic_mass_rests_on_the_ground():
    plant = HybridResetPlant(get_robot("point_mass"), restitution=0.0)
    z = run(plant, [1.0], 1.0)
    state = plant.state()
    assert z[-1] == pytest.approx(0.0, abs=1e-12)
    assert plant.stats["transitions"] == 1  # lands once and stays
    assert plant.stats["max_penetration"] <= math.sqrt(2 * G * 1.0) * 1e-3 + 1e-9  # at most one step of motion
    assert state.contact[0] and state.force[0, 0] == pytest.approx(MASS * G, rel=1e-9)


def test_penalty_tanh_law_rests_above_the_ground_where_the_law_balances_gravity():
    """The tutorial's law F = amp/2 (1 - tanh(100 z)) (1 - (b/k) dz) holds the mass at
    z* = atanh(1 - 2 m g / amp) / 100 = 13.3 mm, above the ground."""
    plant = PenaltyPlant(get_robot("point_mass"))
    z = run(plant, [1.0], 2.0)
    z_star = math.atanh(1.0 - 2.0 * MASS * G / TUTORIAL_TANH["amp"]) / TUTORIAL_TANH["sharpness"]
    assert z_star == pytest.approx(0.0133, abs=1e-4)
    assert z[-1] == pytest.approx(z_star, abs=1e-6)
    assert plant.state().force[0, 0] == pytest.approx(MASS * G, rel=1e-6)


def test_penalty_linear_law_sinks_by_weight_over_stiffness():
    model = get_robot("point_mass")
    plant = PenaltyPlant(model, law="linear", integrator="semi_implicit", dt_sim=1e-4)
    z = run(plant, [0.2], 3.0)
    k = model.contacts[0].stiffness
    assert z[-1] == pytest.approx(-MASS * G / k, rel=1e-6)
    assert plant.stats["max_penetration"] > MASS * G / k  # the dynamic overshoot of a spring


def test_penalty_block_rests_on_both_corners():
    model = get_robot("block")
    plant = PenaltyPlant(model, law="linear", integrator="semi_implicit", dt_sim=1e-4)
    plant.reset([0.0, 0.305, 0.0])
    state = plant.step(JointCommand.zero(0), 1.5)
    k = model.contacts[0].stiffness
    assert state.q[1] == pytest.approx(0.3 - MASS * G / (2 * k), rel=1e-6)
    np.testing.assert_allclose(state.force[:, 0], MASS * G / 2, rtol=1e-6)


def free_fall(z0: float, steps: int, h: float = 1e-3) -> np.ndarray:
    """Semi-implicit Euler free fall from rest: z_k = z0 - g h^2 k (k + 1) / 2, m."""
    k = np.arange(1, steps + 1)
    return z0 - G * h**2 * k * (k + 1) / 2


def test_time_stepping_falls_then_rests_without_penetrating():
    """The tutorial's relaxation (min s^2) leaks a small impulse lam <= s / gap even in flight
    (2 um off free fall after 10 ms at 0.1 m) and holds the mass within a millimetre above the
    ground, never below it; the relaxed contact behaves like a soft spring there (the force
    still oscillates ~15 % about the weight 0.2 s after landing)."""
    plant = TimeSteppingPlant(get_robot("point_mass"))
    z = run(plant, [0.1], 0.3)
    np.testing.assert_allclose(z[:10], free_fall(0.1, 10), rtol=0, atol=1e-5)
    assert z.min() >= -1e-9
    assert 0.0 <= z[-1] < 1e-3
    assert plant.state().force[0, 0] == pytest.approx(MASS * G, rel=0.25)
    assert plant.stats["ipopt_failures"] == 0 and plant.stats["transitions"] == 1


def test_time_stepping_linear_slack_objective_is_tighter():
    """With min s instead, flight is free fall to 1e-9 m and the rest height is below 10 um."""
    plant = TimeSteppingPlant(get_robot("point_mass"), objective="s")
    z = run(plant, [0.1], 0.3)
    np.testing.assert_allclose(z[:10], free_fall(0.1, 10), rtol=0, atol=1e-9)
    assert abs(z[-1]) < 1e-5 and z.min() >= -1e-8


@pytest.mark.parametrize("make", [
    lambda m: HybridResetPlant(m, restitution=0.5),
    lambda m: PenaltyPlant(m),
    lambda m: TimeSteppingPlant(m),
], ids=["hybrid-reset", "penalty", "time-stepping"])
def test_baselines_are_plants(make):
    """Plant protocol: reset/step return PlantState of the right shapes; thrust above the weight
    (N) lifts the mass off the ground (the tanh law first holds it back: it turns adhesive
    above 0.1 m/s near the ground); dt = 0 is a no-op."""
    model = get_robot("point_mass")
    plant = make(model)
    state = plant.reset([0.0])
    assert isinstance(state, PlantState) and state.t == 0.0
    assert state.q.shape == (1,) and state.force.shape == (1, 2) and state.contact.shape == (1,)
    assert plant.step(JointCommand.zero(1), 0.0).t == 0.0
    for _ in range(300):
        state = plant.step(JointCommand.torque([300.0]), 1e-3)
    assert state.t == pytest.approx(0.3)
    assert state.q[0] > 0.1 and state.v[0] > 1.0 and not state.contact[0]
    np.testing.assert_allclose(state.tau, [300.0])


def test_bad_input_names_the_field():
    model = get_robot("point_mass")
    with pytest.raises(ValueError, match="restitution must be a finite number >= 0"):
        HybridResetPlant(model, restitution=-0.2)
    with pytest.raises(ValueError, match="restitution must be in"):
        HybridResetPlant(model, restitution=1.2)
    with pytest.raises(ValueError, match="dt_sim must be a finite number > 0"):
        PenaltyPlant(model, dt_sim=-1e-3)
    with pytest.raises(ValueError, match="law must be"):
        PenaltyPlant(model, law="cubic")
    with pytest.raises(ValueError, match="objective must be"):
        TimeSteppingPlant(model, objective="s3")
    for plant in (HybridResetPlant(model), PenaltyPlant(model)):
        with pytest.raises(ValueError, match=r"q contains non-finite values"):
            plant.reset([float("nan")])
        plant.reset([1.0])
        with pytest.raises(ValueError, match="dt must be a finite number of seconds >= 0"):
            plant.step(JointCommand.zero(1), -1e-3)
        with pytest.raises(ValueError, match="dt must be"):
            plant.step(JointCommand.zero(1), float("inf"))


def test_baselines_take_the_penetration_limit_and_flag_deeper_states():
    """The baselines share the plants' invariants (sim/invariants.py): a penalty contact sinking
    past penetration_limit_m is flagged in PlantState.violation, held until reset, not raised."""
    from sim.baselines import PenaltyPlant

    model = get_robot("point_mass")
    plant = PenaltyPlant(model, law="linear", integrator="semi_implicit", dt_sim=1e-4, penetration_limit_m=1e-4)
    assert plant.invariants.limit == 1e-4
    plant.reset([0.01])
    for _ in range(200):
        state = plant.step(JointCommand.zero(model.nu), 1e-3)
        if state.violation:
            break
    assert "below" in state.violation and "limit" in state.violation
    assert plant.step(JointCommand.zero(model.nu), 1e-3).t == state.t
    assert plant.reset([0.01]).violation == ""
    with pytest.raises(ValueError, match="penetration_limit_m"):
        PenaltyPlant(model, penetration_limit_m=0.0)
