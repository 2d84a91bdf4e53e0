"""NMDP plant (issue 6): resting and sliding blocks, PGM monotonicity, step halving, errors.

The incline is a flat-ground block whose gravity is split along the slope: vertical gravity
g cos(angle) and a constant force m g sin(angle) on an actuated x slide, which is the same
dynamics in the slope's frame.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from robots import get_robot, numeric
from robots.planar import Body, Joint, PlanarTree, PointContact, build_planar_robot
from sim.nmdp import NmdpPlant
from sim.nmdp.qp import DenseQp
from sim.nmdp.terms import nmdp_library
from sim.protocol import JointCommand

G = 9.81


def incline_block(angle: float, mu: float, m: float = 2.0, width: float = 0.4, height: float = 0.1):
    """A box (x, z, theta) on a slope of `angle` rad, built as described in the module docstring."""
    hw, hh = width / 2, height / 2
    corners = tuple(PointContact(name, "block", (sx * hw, -hh), mu=mu) for name, sx in (("left", -1.0), ("right", 1.0)))
    body = Body("block", None, (0.0, 0.0),
                (Joint("x", "slide_x", actuated=True), Joint("z", "slide_z"), Joint("theta", "hinge", axis_sign=-1)),
                m, inertia=m * (width ** 2 + height ** 2) / 12)
    tree = PlanarTree("incline_block", (body,), corners, gravity=G * math.cos(angle), params={"m": m})
    return build_planar_robot(tree, q0=[0.0, hh, 0.0])


def slope_push(model, angle: float) -> JointCommand:
    """The along-slope part of gravity, m g sin(angle) (N), as a constant force on the x slide."""
    return JointCommand.torque(np.array([model.params["m"] * G * math.sin(angle)]))


# ----------------------------------------------------------------------------- building blocks


def test_qpoases_qp_solves_a_projection_and_warm_starts_from_its_duals():
    qp = DenseQp(2, 1)
    # min 1/2 |x - (0.8, 0.6)|^2  s.t.  0 <= x <= 1, x0 + x1 <= 1  ->  (0.6, 0.4)
    data = (np.eye(2), [-0.8, -0.6], [0, 0], [1, 1], [[1.0, 1.0]], [-1.0], [1.0])
    x, changes, status = qp.solve(*data)
    assert status == 0 and changes > 0  # cold: the sum constraint enters the working set
    np.testing.assert_allclose(x, [0.6, 0.4], atol=1e-12)
    x2, changes2, status2 = qp.solve(*data, y_warm=qp.duals)
    assert status2 == 0 and changes2 == 0  # warm: that working set is already the solution's
    np.testing.assert_allclose(x2, [0.6, 0.4], atol=1e-12)
    # a warm start from another problem's duals (x0 at its upper bound, the sum inactive) still solves
    x3, _, status3 = qp.solve(*data, y_warm=[-1.0, 0.0, 0.0])
    assert status3 == 0
    np.testing.assert_allclose(x3, [0.6, 0.4], atol=1e-12)
    with pytest.raises(ValueError, match="ng"):
        DenseQp(2, 0)


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 3), planar=st.booleans(), seed=st.integers(0, 2 ** 32 - 1),
       mu=st.floats(0.05, 1.5), theta=st.floats(-math.pi, math.pi))
def test_force_polytope_qp_equals_the_paper_vertex_weight_qp(k, planar, seed, mu, theta):
    """kernel._solve_qp over the forces lam (the polytope by its faces) finds the force the
    paper's QP over vertex weights alpha finds (lam = V alpha: the same polytope by its
    vertices), for a random metric and gradient, and returns it exactly feasible."""
    from sim.nmdp import kernel as K
    from sim.nmdp.terms import EDGES_3D

    D, E = (2, 2) if planar else (3, EDGES_3D)
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(D * k, D * k))
    H = A @ A.T + 0.1 * np.eye(D * k)  # the force metric G^T S G: positive definite
    g = rng.normal(size=D * k) * rng.uniform(0.1, 5.0)
    thetas = theta + np.arange(k)  # a different polygon orientation per contact
    mus = mu * (1.0 + 0.5 * np.arange(k))
    # the paper's QP: vertex weights, 0 <= alpha <= 1, sum per contact <= 1, force V alpha
    V = np.zeros((D * k, E * k))
    for i in range(k):
        a = thetas[i] + np.pi + 2 * np.pi * np.arange(E) / E
        rows = [np.ones(E), mus[i] * np.array([1.0, -1.0])] if planar else \
            [np.ones(E), mus[i] * np.cos(a), mus[i] * np.sin(a)]
        V[D * i:D * i + D, E * i:E * i + E] = np.vstack(rows)
    weights = DenseQp(E * k, k, verbose=False)
    alpha, _, status = weights.solve(V.T @ H @ V + 1e-11 * np.eye(E * k), V.T @ g, np.zeros(E * k), np.ones(E * k),
                                     np.kron(np.eye(k), np.ones((1, E))), -np.ones(k), np.ones(k))
    assert status == 0
    # ours: the same problem over lam, through the kernel's QP with k workspaces as the plant sets up
    qps = [DenseQp(D * j, E * j, verbose=False) for j in range(1, k + 1)]
    addr = np.zeros(K.QP_HANDLES + k, dtype=np.int64)
    addr[2] = qps[0].solve_address
    addr[K.QP_HANDLES:] = [qp.handle for qp in qps]
    nl = D * k
    qp_in, qp_out = np.zeros(qps[-1].n_in), np.zeros(nl + qps[-1].n_out)
    status = K._solve_qp(addr, qp_in, qp_out, np.zeros((k, 1 + nl + E * k)), H.copy(), g.copy(), np.zeros(nl), k, E,
                         thetas, mus, 0.0)
    assert status == 0
    lam = qp_out[:nl]
    np.testing.assert_allclose(lam, V @ alpha, atol=2e-6)
    for i in range(k):  # exactly inside: normal in [0, 1], every face
        n, t = lam[D * i], lam[D * i + 1:D * i + D]
        assert 0.0 <= n <= 1.0
        if planar:
            assert abs(t[0]) <= mus[i] * n
        else:
            m = thetas[i] + np.pi + 2 * np.pi * (np.arange(E) + 0.5) / E
            assert np.max(np.cos(m) * t[0] + np.sin(m) * t[1]) <= mus[i] * math.cos(math.pi / E) * n + 1e-15


def test_a_reset_plant_replays_bit_for_bit_and_solve_step_leaves_no_trace():
    """The QP warm starts are plant state: reset clears them, solve_step restores them."""
    model = get_robot("go1")
    cmd = JointCommand(np.zeros(model.nu), model.q0[7:].copy(), np.zeros(model.nu), np.full(model.nu, 60.0),
                       np.full(model.nu, 2.0))
    q0 = model.q0.copy()
    q0[2] += 0.02
    plant = NmdpPlant(model, verbose=False)

    def run(probe: bool) -> np.ndarray:
        plant.reset(q0)
        out = []
        for k in range(150):
            if probe and k % 7 == 3:
                plant.solve_step(0.004, JointCommand.zero(model.nu))
            out.append(plant.step(cmd, 0.002).q)
        return np.array(out)

    first = run(False)
    assert plant.stats["iters"] > 150  # the QPs ran (feet on the ground)
    np.testing.assert_array_equal(run(False), first)
    np.testing.assert_array_equal(run(True), first)


def test_chord_projection_reaches_newtons_point_with_fewer_jacobians():
    """kernel.project: chord steps with K's factors from a nearby point converge to the point
    Newton's method finds, evaluating K fewer times."""
    from sim.nmdp import kernel as K

    model = get_robot("go1")
    cmd = JointCommand(np.zeros(model.nu), model.q0[7:].copy(), np.zeros(model.nu), np.full(model.nu, 60.0),
                       np.full(model.nu, 2.0))
    plant = NmdpPlant(model, verbose=False)
    plant.reset(model.q0)
    for _ in range(200):
        plant.step(cmd, 0.001)  # standing, four feet loaded
    b = plant._bufs
    imp_in, imp_out, LU, piv, rhs, res_out = b[0], b[1], b[5], b[6], b[7], b[17]
    nq, nv, na, dt = model.nq, model.nv, plant.lam.size, 0.001
    K._setup_implicit(imp_in, plant.q, plant.v, dt, plant._cmd, plant._cp, nq, nv, na)
    tol = 1e-9 * 10.0 * 0.1

    def run(v_start, lam, chord):
        st = np.zeros(K.N_STATS)
        v1 = v_start.copy()
        status, it, _ = K._newton(plant._addr, imp_in, imp_out, res_out, LU, piv, rhs, v1, lam, nq, nv, na, False,
                                  tol, 30, chord, chord, st)
        assert status == K.OK
        return v1, it, st[K.S_JACOBIANS]

    v_here, _, _ = run(plant.v, plant.lam, False)  # LU now holds K at (v_here, lam)
    moved = 0.8 * plant.lam  # the next PGM trial: lam moved by a QP step
    v_chord, it_chord, jac_chord = run(v_here, moved, True)
    v_newton, it_newton, jac_newton = run(v_here, moved, False)
    assert it_chord >= 1 and jac_chord < jac_newton == it_newton  # Newton: K at every iterate
    np.testing.assert_allclose(v_chord, v_newton, atol=1e-8)


def test_generated_jacobians_match_finite_differences():
    model = get_robot("hopper")
    lib = nmdp_library(model, verbose=False)
    fn, fn_zo = lib["nmdp_implicit"], lib["nmdp_implicit_zo"]  # first order's K, zeroth order's Kzo
    nv, nu, nc = model.nv, model.nu, model.nc
    q = model.q0 + np.array([0.01, -0.003, 0.2, -0.3])  # foot 3 mm deep, leg bent
    v = np.array([0.3, -0.5, 1.0, -2.0])
    lam = np.array([0.4, 0.1])  # normal and tangential force, fractions of the capacity
    cmd = np.concatenate([np.zeros(nu), [0.1, -0.2], np.zeros(nu), [50.0, 50.0], [2.0, 2.0]])
    cp = np.concatenate([[300.0], [0.004], [0.8]])  # F (N), delta (m), mu
    dt = 0.01
    v1 = v + 0.1

    def residual(x, a=lam):
        return fn(q, v, x, a, [dt], cmd, cp)[0]

    R, K, no_zo, W, cap, _ = fn(q, v, v1, lam, [dt], cmd, cp)
    R_zo, no_k, Kzo, W_zo, cap_zo, _ = fn_zo(q, v, v1, lam, [dt], cmd, cp)
    assert not np.any(no_zo) and not np.any(no_k)  # each function computes only its own Jacobian
    np.testing.assert_array_equal(R, R_zo), np.testing.assert_array_equal(W, W_zo)
    K = K.reshape(nv, nv)
    fd = np.column_stack([(residual(v1 + h) - residual(v1 - h)) / 2e-7 for h in 1e-7 * np.eye(nv)])
    np.testing.assert_allclose(K, fd, rtol=1e-5, atol=1e-6)
    assert cap[0] > 0
    assert np.abs(K - Kzo.reshape(nv, nv)).max() > 1e-3  # the capacity's q-derivative matters here
    K0, Kzo0 = fn(q, v, v1, np.zeros(2 * nc), [dt], cmd, cp)[1], fn_zo(q, v, v1, np.zeros(2 * nc), [dt], cmd, cp)[2]
    np.testing.assert_allclose(K0, Kzo0, atol=1e-12)  # ... and drops out when the contact is idle


# ----------------------------------------------------------------------------- physics


@pytest.mark.parametrize("method", ["pgm", "zopgm", "mdp"])
def test_block_at_rest_stays_within_1mm_for_2s_at_10ms(method):
    model = get_robot("block")
    plant = NmdpPlant(model, method=method, stiffness=1e6, verbose=False)
    plant.reset(model.q0)
    qs = np.array([plant.step(JointCommand.zero(0), 0.01).q for _ in range(200)])
    assert np.abs(qs - model.q0).max() < 1e-3
    state = plant.state()
    assert state.contact.all()
    assert state.force[:, 0].sum() == pytest.approx(model.params["m"] * G, rel=1e-3)  # resting: weight carried


@pytest.mark.parametrize("method", ["pgm", "zopgm"])
def test_block_sticks_on_an_incline_when_tan_below_mu(method):
    angle, mu = math.radians(20.0), 0.5  # tan = 0.36 < 0.5
    model = incline_block(angle, mu)
    plant = NmdpPlant(model, method=method, stiffness=1e6, verbose=False)
    plant.reset(model.q0)
    cmd = slope_push(model, angle)
    xs = [plant.step(cmd, 0.005).q[0] for _ in range(200)]
    assert abs(xs[-1]) < 1e-4  # no sliding over 1 s
    assert np.ptp(xs[100:]) < 1e-8  # and no creep once settled (PGM's first-iteration rule, kernel)


@pytest.mark.parametrize("method", ["pgm", "zopgm", "mdp"])
@pytest.mark.parametrize("deg, mu", [(35.0, 0.5), (50.0, 0.3)])
def test_block_slides_with_coulomb_acceleration(method, deg, mu):
    angle = math.radians(deg)
    model = incline_block(angle, mu)
    plant = NmdpPlant(model, method=method, stiffness=1e6, verbose=False)
    plant.reset(model.q0)
    cmd = slope_push(model, angle)
    dt = 0.005
    t = dt * np.arange(1, 201)
    x = np.array([plant.step(cmd, dt).q[0] for _ in t])
    late = t > 0.2
    accel = 2.0 * np.polyfit(t[late], x[late], 2)[0]
    assert accel == pytest.approx(G * (math.sin(angle) - mu * math.cos(angle)), rel=0.05)


def test_pgm_objective_decreases_monotonically_on_a_fixed_step():
    model = get_robot("block")
    # the capacity this landing was set up with (3 weights: the default before issue 25)
    plant = NmdpPlant(model, method="pgm", stiffness=1e6, force_limit=3 * 10.0 * 9.81, pgm_rtol=1e-12, verbose=False)
    q0 = model.q0.copy()
    q0[1] += 0.01
    q0[2] = 0.1
    plant.reset(q0, [0.5, -1.0, 1.0])  # tilted, spinning, landing on one corner
    res = plant.solve_step(0.02, JointCommand.zero(0))
    assert res["status"] == 0 and res["stats"]["halvings"] == 0
    trace = res["trace"]
    assert len(trace) >= 3
    assert np.all(np.diff(trace) <= 1e-12 * trace[0]), trace
    assert trace[-1] < 0.5 * trace[0]
    np.testing.assert_array_equal(plant.q, q0)  # solve_step leaves the plant untouched


def test_hard_step_triggers_halving_and_completes():
    model = get_robot("block")
    plant = NmdpPlant(model, method="pgm", stiffness=1e7, verbose=False)
    q0 = model.q0.copy()
    q0[1] += 0.01
    plant.reset(q0, [0.5, -3.0, 1.0])  # 3 m/s into a very stiff floor in one 50 ms step
    state = plant.step(JointCommand.zero(0), 0.05)
    last = plant.last_step()
    assert last["halvings"] >= 1 and last["min_dt"] < 0.05
    assert last["substeps"] >= 2
    assert state.t == pytest.approx(0.05)
    assert np.isfinite(state.q).all() and np.isfinite(state.v).all()
    assert plant.stats["min_dt"] == last["min_dt"]
    # without Algorithm 2 the same step is reported as a failure (never raised out of step): the
    # state before it, flagged with the violation, and held until reset
    rigid = NmdpPlant(model, method="pgm", stiffness=1e7, adaptive=False, verbose=False)
    rigid.reset(q0, [0.5, -3.0, 1.0])
    failed = rigid.step(JointCommand.zero(0), 0.05)
    assert "diverged" in failed.violation and failed.t == 0.0
    np.testing.assert_array_equal(rigid.q, q0)
    np.testing.assert_array_equal(failed.q, q0)
    again = rigid.step(JointCommand.zero(0), 0.05)
    assert again.violation == failed.violation and again.t == 0.0
    with pytest.raises(ValueError, match="kp"):  # a bad command still raises
        rigid.step(JointCommand(np.zeros(0), kp=np.zeros(1)), 0.05)
    assert rigid.reset(q0).violation == ""


@pytest.mark.parametrize("method", ["pgm", "mdp"])
def test_hopper_stands_on_its_pd(method):
    model = get_robot("hopper")
    plant = NmdpPlant(model, method=method, stiffness=2e5, verbose=False)
    plant.reset(model.q0)
    cmd = JointCommand(np.zeros(2), model.q0[2:].copy(), np.zeros(2), np.full(2, 200.0), np.full(2, 5.0))
    for _ in range(100):
        state = plant.step(cmd, 0.01)
    assert abs(state.q[1] - model.q0[1]) < 0.02  # still standing after 1 s
    assert np.abs(state.q[2:] - model.q0[2:]).max() < 0.05
    assert state.contact[0] and state.force[0, 0] > 0.5 * 6.3 * G


def test_quadruped_rollout_equals_step_loop():
    model = get_robot("quadruped")
    nu = model.nu
    cmd = JointCommand(np.zeros(nu), model.q0[3:].copy(), np.zeros(nu), np.full(nu, 100.0), np.full(nu, 3.0))
    a = NmdpPlant(model, method="pgm", stiffness=2e5, verbose=False)
    a.reset(model.q0)
    states = [a.step(cmd, 0.02).q for _ in range(25)]
    b = NmdpPlant(model, method="pgm", stiffness=2e5, verbose=False)
    b.reset(model.q0)
    out = b.rollout([cmd] * 25, 0.02)
    assert out["status"] == 0 and out["steps"] == 25
    np.testing.assert_allclose(out["q"], np.array(states), atol=1e-12)
    assert abs(states[-1][2]) < 0.05 and states[-1][1] > 0.25  # standing, level


# ----------------------------------------------------------------------------- errors


def test_bad_parameters_give_errors_naming_the_field():
    model = get_robot("block")
    with pytest.raises(ValueError, match="mu of contact 'left' must be finite and >= 0"):
        NmdpPlant(model, mu=-0.1, verbose=False)
    with pytest.raises(ValueError, match="stiffness"):
        NmdpPlant(model, stiffness=0.0, verbose=False)
    with pytest.raises(ValueError, match="method must be one of"):
        NmdpPlant(model, method="newton", verbose=False)
    with pytest.raises(ValueError, match="max_iter"):
        NmdpPlant(model, max_iter=0, verbose=False)
    with pytest.raises(ValueError, match="unknown option"):
        NmdpPlant(model, stifness=1e5, verbose=False)
    plant = NmdpPlant(model, verbose=False)
    with pytest.raises(RuntimeError, match="reset"):
        plant.step(JointCommand.zero(0), 0.01)
    plant.reset(model.q0)
    for bad in (-0.01, 0.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="dt must be a finite number > 0"):
            plant.step(JointCommand.zero(0), bad)
    with pytest.raises(ValueError, match=r"q contains non-finite values \(z=nan\)"):
        plant.reset([0.0, math.nan, 0.0])
    with pytest.raises(ValueError, match="v contains non-finite"):
        plant.reset(model.q0, [0.0, math.inf, 0.0])
    with pytest.raises(ValueError, match="t must be a finite number"):
        plant.reset(model.q0, t=math.nan)
    hopper = get_robot("hopper")
    hp = NmdpPlant(hopper, verbose=False)
    hp.reset(hopper.q0)
    with pytest.raises(ValueError, match="kp"):
        hp.step(JointCommand(np.zeros(2), np.zeros(2), np.zeros(2), np.array([-1.0, 1.0]), np.zeros(2)), 0.01)


@pytest.mark.parametrize("name", ["point_mass", "hopper1d", "plate_springs", "hopper", "quadruped", "block"])
def test_default_capacity_rests_within_5_mm(name):
    """At default settings every robot of the library, set down on the ground (joints held by a PD
    at q0), rests at most 5 mm deep (issue 25: the hopper rested 19.6 mm deep, the 1-D hopper
    31 mm, the plate's springs 55 mm with the old default of 3 weights at the model's stiffness)."""
    from sim.protocol import actuated_joints

    model = get_robot(name)
    gap = numeric(model, verbose=False).contact_gap
    plant = NmdpPlant(model, max_step=1e-3, verbose=False)
    q = model.q0.copy()
    q[model.q_names.index("z")] -= gap(q).min()  # lowest contact on the ground
    nu, joints = model.nu, actuated_joints(model)
    if name == "point_mass":  # no thrust
        cmd = JointCommand.zero(nu)
    else:
        cmd = JointCommand(np.zeros(nu), q[joints], np.zeros(nu), np.full(nu, 100.0), np.full(nu, 5.0))
    plant.reset(q)
    for _ in range(1000):
        state = plant.step(cmd, 1e-3)
    assert state.violation == ""
    assert -gap(state.q).min() <= 5e-3
    assert -gap(state.q).min() > 0.0  # it does rest on its contacts
