"""The robot library: physics checks of every model, contact kinematics, bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from robots import get_robot, numeric, robot_names
from tests.conftest import random_state


def test_mass_matrix_symmetric_positive_definite(robot):
    model, fns = robot
    rng = np.random.default_rng(1)
    for _ in range(100):
        q, _ = random_state(model, rng, scale=1.5)
        M = fns.mass_matrix(q)
        np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-12)
        assert np.linalg.eigvalsh(M).min() > 0, f"{model.name}: M not positive definite at q={q}"


def test_passive_dynamics_conserve_energy(robot):
    """No contact, no damping, no torque: T + V is constant along a tight DOP853 solution
    (dq/dt = G(q) v: a floating base's quaternion moves on its manifold to 1e-12)."""
    model, fns = robot
    q0, v0 = random_state(model, np.random.default_rng(2))
    n = model.nq

    def rhs(_t, x):
        return np.concatenate([fns.configuration_rate(x[:n], x[n:]), fns.forward_dynamics(x[:n], x[n:])])

    sol = solve_ivp(rhs, (0.0, 1.0), np.concatenate([q0, v0]), method="DOP853", rtol=1e-12, atol=1e-12,
                    dense_output=False, t_eval=np.linspace(0, 1, 201))
    assert sol.success
    energies = np.array([fns.energy(x[:n], x[n:]) for x in sol.y.T])
    total = energies.sum(axis=1)
    scale = energies[:, 0].max()  # the kinetic energy that actually flows (V has an arbitrary offset)
    drift = np.abs(total - total[0]).max() / scale
    assert drift < 1e-6, f"{model.name}: relative energy drift {drift:.2e}"


def test_compiled_functions_match_symbolic(robot):
    """Pattern: one definition, two evaluations; the C code must equal CasADi's own evaluation."""
    model, fns = robot
    rng = np.random.default_rng(3)
    symbolic = model.symbolic_functions()
    for _ in range(10):
        q, v = random_state(model, rng)
        for name, f in symbolic.items():
            args = [q, v, np.array([0.01])][:f.n_in()]
            expected = [np.array(o) for o in f.call(args)]
            got = fns.raw[name](*args)
            got = got if isinstance(got, tuple) else (got,)
            for e, g in zip(expected, got):
                np.testing.assert_allclose(np.asarray(g).reshape(e.shape), e, rtol=1e-12, atol=1e-12, err_msg=name)


def test_hopper_matches_published_kinematics():
    """Foot and CoM positions follow the published monoped formulas (nosnoc example, seed 004)."""
    model = get_robot("hopper")
    fns = numeric(model)
    rng = np.random.default_rng(4)
    for _ in range(50):
        x, z, hip, knee = rng.uniform([-1, 0.2, -1.5, -1.5], [1, 1, 1.5, 1.5])
        foot = np.array([x - 0.2 * math.sin(hip) - 0.2 * math.sin(hip + knee),
                         z - 0.2 * math.cos(hip) - 0.2 * math.cos(hip + knee)])
        np.testing.assert_allclose(fns.contact_points([x, z, hip, knee])[0], foot, atol=1e-14)
    assert fns.contact_gap(model.q0)[0] == pytest.approx(0.0, abs=1e-15)
    total_mass = fns.mass_matrix(model.q0)[0, 0]
    assert total_mass == pytest.approx(3.975 + 1.782 + 0.548)


def test_quadruped_stands_on_four_feet_and_weighs_12kg():
    model = get_robot("quadruped")
    fns = numeric(model)
    np.testing.assert_allclose(fns.contact_gap(model.q0), 0.0, atol=1e-12)
    assert fns.mass_matrix(model.q0)[0, 0] == pytest.approx(12.0)
    # gravity load at rest equals the weight
    assert fns.bias(model.q0, np.zeros(model.nv))[1] == pytest.approx(12.0 * 9.81)


def test_plate_gap_matches_paper_event_function():
    """phi_i = -(L0 + tan(theta) (x - x_si) - z), and Jn_i = -[tan(theta), -1, sec^2(theta)(x - x_si)]."""
    n = 7
    model = get_robot("plate_springs", n_springs=n)
    fns = numeric(model)
    xs = np.array(model.params["x_springs"])
    assert model.nc == n
    rng = np.random.default_rng(5)
    for _ in range(20):
        x, z, th = rng.uniform([-0.3, 0.5, -0.3], [0.3, 3.0, 0.3])
        h = 1.0 + math.tan(th) * (x - xs) - z
        np.testing.assert_allclose(fns.contact_gap([x, z, th]), -h, atol=1e-13)
        Dh = np.stack([np.full(n, math.tan(th)), -np.ones(n), (x - xs) / math.cos(th) ** 2], axis=1)
        np.testing.assert_allclose(fns.contact_jacobians([x, z, th])[0], -Dh, atol=1e-13)


def test_hopper1d_spring_force_is_the_contact():
    model = get_robot("hopper1d")
    fns = numeric(model)
    assert model.nu == 0 and model.nc == 1
    assert fns.contact_gap([0.9])[0] == pytest.approx(-0.1)
    assert model.contacts[0].stiffness == 1000.0


@pytest.mark.parametrize("name", robot_names())
def test_mjcf_loads_with_the_same_dimensions(name):
    mujoco = pytest.importorskip("mujoco")
    model = get_robot(name)
    mj = mujoco.MjModel.from_xml_string(model.mjcf)
    assert (mj.nq, mj.nv, mj.nu) == (model.nq, model.nv, model.nu)
    # a floating base is one free joint (7 of q) named after the base body, then the joints
    names = [model.body_names[0], *model.u_names] if model.floating_base else list(model.q_names)
    assert [mj.joint(i).name for i in range(mj.njnt)] == names


def test_unknown_robot_name_is_a_clear_error():
    with pytest.raises(ValueError, match=r"unknown robot 'hoper'.*available robots: .*hopper.*Did you mean 'hopper'"):
        get_robot("hoper")


def test_wrong_length_q_is_a_clear_error():
    fns = numeric(get_robot("hopper"))
    with pytest.raises(ValueError, match=r"hopper: q has shape \(3,\), expected \(4,\)"):
        fns.mass_matrix([0.0, 0.4, 0.0])


def test_nan_in_q_is_a_clear_error():
    fns = numeric(get_robot("hopper"))
    with pytest.raises(ValueError, match=r"hopper: q contains non-finite values \(z=nan\)"):
        fns.mass_matrix([0.0, float("nan"), 0.0, 0.0])


def test_bad_robot_parameters_are_clear_errors():
    with pytest.raises(ValueError, match="n_springs must be an integer >= 1"):
        get_robot("plate_springs", n_springs=0)
    with pytest.raises(ValueError, match="mu must be finite and >= 0"):
        get_robot("hopper", mu=-0.1)


def test_models_are_read_only():
    model = get_robot("hopper")
    with pytest.raises(ValueError):
        model.q0[0] = 1.0
    with pytest.raises(AttributeError):
        model.name = "other"
