"""The plants' shared invariants (sim/invariants.py, PlantState.violation), and property-based
checks that no plant loses the robot (issue 25)."""
from __future__ import annotations

import numpy as np
import pytest

from robots import get_robot
from sim.invariants import DEFAULT_PENETRATION_LIMIT_M, Invariants
from sim.protocol import JointCommand, PlantState
from sim.registry import PLANTS, make_plant


def test_plant_state_violation_defaults_to_empty_and_survives_copy():
    s = PlantState(0.0, np.zeros(1), np.zeros(1), np.zeros(1, bool), np.zeros((1, 2)), np.zeros(1))
    assert s.violation == ""
    s.violation = "contact bottom gap -0.030 m below -0.020 m limit at t=1 s"
    c = s.copy()
    assert c.violation == s.violation and c.q is not s.q


def test_invariants_name_the_failure():
    model = get_robot("point_mass")
    inv = Invariants(model)
    assert inv.limit == DEFAULT_PENETRATION_LIMIT_M
    assert inv.check(0.0, np.array([0.1]), np.zeros(1)) == ""
    assert inv.check(0.0, np.array([-0.019]), np.zeros(1)) == ""
    deep = inv.check(1.23, np.array([-0.034]), np.zeros(1))
    assert deep == "contact bottom gap -0.034 m below -0.020 m limit at t=1.23 s"
    assert "non-finite" in inv.check(0.5, np.array([np.nan]), np.zeros(1))
    assert "v[z]" in inv.check(0.5, np.zeros(1), np.array([np.inf]))
    for bad in (0.0, -1.0, np.nan, "1"):
        with pytest.raises(ValueError, match="penetration_limit_m"):
            Invariants(model, bad)


@pytest.mark.parametrize("plant_name", PLANTS)
def test_penetration_past_the_limit_is_flagged_held_and_cleared_by_reset(plant_name, capsys):
    """A plant whose contact sinks past its penetration_limit_m returns the state with the
    violation (printed once to stderr), holds it until reset, and still rejects bad commands."""
    model = get_robot("point_mass")
    if plant_name == "hybrid":  # rigid contacts never penetrate: make its integrator fail instead
        plant = make_plant(plant_name, model)
    else:  # a limit below the resting depth (mg/k ~ 1 mm) is crossed on landing
        plant = make_plant(plant_name, model, penetration_limit_m=1e-4)
    assert plant.reset([0.01]).violation == ""
    if plant_name == "hybrid":
        def broken(t_end):
            raise RuntimeError("events repeat without time advancing (test)")
        plant._segment = broken
    cmd = JointCommand.zero(model.nu)
    for _ in range(300):
        state = plant.step(cmd, 1e-3)
        if state.violation:
            break
    assert state.violation, "no violation reported"
    if plant_name == "hybrid":
        assert "events repeat" in state.violation and state.t == 0.0
    else:
        assert "gap" in state.violation and "limit" in state.violation
    held = plant.step(cmd, 1e-3)
    assert held.violation == state.violation and held.t == state.t
    np.testing.assert_array_equal(held.q, state.q)
    with pytest.raises(ValueError):
        plant.step(JointCommand(np.zeros(2)), 1e-3)  # point_mass has one actuator
    err = capsys.readouterr().err
    assert err.count("invariant violated") == 1
    if plant_name == "hybrid":
        del plant._segment
    fresh = plant.reset([0.01])
    assert fresh.violation == ""
    assert plant.step(cmd, 1e-3).violation == ""


@pytest.mark.parametrize("plant_name", ["ess", "nmdp"])
def test_penetration_limit_is_a_validated_plant_option(plant_name):
    with pytest.raises(ValueError, match="penetration_limit_m"):
        make_plant(plant_name, get_robot("point_mass"), penetration_limit_m=-1.0)


def test_hybrid_penetration_limit_is_a_validated_option():
    with pytest.raises(ValueError, match="penetration_limit_m"):
        make_plant("hybrid", get_robot("point_mass"), penetration_limit_m=0.0)


# ---------------------------------------------------------------- property-based: no lost robot

from hypothesis import HealthCheck, given, settings  # noqa: E402

from sim import fuzz  # noqa: E402

POOL = fuzz.PlantPool()  # compiled plants reused across examples (and tests)
# examples per (plant, robot): the whole file stays within ~2 minutes on the 2-core machine; the
# bench (`python -m launch bench plant-fuzz`) runs the same generators at >= 10,000 per plant
EXAMPLES = {"ess": 30, "nmdp": 30, "hybrid": 6, "mujoco": 30}


def _fuzz_settings(plant_name: str):
    return settings(max_examples=EXAMPLES[plant_name], deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


def _check_case(plant_name: str, case: fuzz.Case, pool=POOL) -> None:
    r = fuzz.run_case(pool, plant_name, case)
    assert r["exception"] == "", f"{r['exception']} escaped the {plant_name} plant on {case}"
    assert r["violation"] == "", f"{plant_name} plant flagged {r['violation']!r} on {case}"
    assert not r["fall_through"] and r["min_gap"] >= -r["limit"], (r, case)
    if case.command == "limp":  # no input: the mechanical energy (with the PD's springs) must not grow
        assert r["energy_growth"] <= fuzz.energy_rtol(plant_name), (r, case)
    if r["rest_penetration"] == r["rest_penetration"]:  # not nan: it rests
        assert r["rest_penetration"] <= r["limit"], (r, case)


def _property(plant_name: str, robot: str):
    @_fuzz_settings(plant_name)
    @given(fuzz.strategy(robots=(robot,)))
    def check(case):
        _check_case(plant_name, case)

    return check


@pytest.mark.parametrize("robot", fuzz.ROBOTS)
@pytest.mark.parametrize("plant_name", PLANTS)
def test_never_loses_the_robot(plant_name, robot):
    _property(plant_name, robot)()


def test_the_fuzz_check_catches_a_fall_through():
    """The property can fail: a plant that lets the robot sink (5 cm per tick, unflagged) is
    reported as a fall-through, and one whose step raises as an escaped exception."""
    case = fuzz.Case("point_mass", 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, "limp", 0.0, 0, ticks=3)
    plant, model = POOL.get("ess", case)

    class Sinking:
        invariants = plant.invariants

        def reset(self, q, v):
            return plant.reset(q, v)

        def step(self, cmd, dt):
            s = plant.step(cmd, dt)
            s.q = s.q - 0.05 * (s.t / 0.01)
            return s

    class Raising(Sinking):
        def step(self, cmd, dt):
            raise RuntimeError("events repeat without time advancing")

    for broken, what in ((Sinking(), "fall_through"), (Raising(), "exception")):
        class Pool:
            def get(self, name, c, broken=broken):
                return broken, model

        r = fuzz.run_case(Pool(), "ess", case)
        assert r[what]
        with pytest.raises(AssertionError):
            _check_case("ess", case, Pool())
