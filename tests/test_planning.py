"""Offline planning (mpc.planning): the time-freezing construction and the paper's Example 5.

The hopper OCP itself takes minutes and is run by `python -m launch plan hopper-holes`, not here.
"""
from __future__ import annotations

import json
import subprocess
import sys

import casadi as ca
import numpy as np
import pytest

from mpc.planning import ContactLagrangian, PlannerOptions, time_freezing_system
from mpc.planning.particle import GRAVITY, particle_system
from mpc.planning.scenarios import count_touchdowns, run_scenario
from mpc.planning.time_freezing import dense_regions, lifted_step_field, step_multipliers
from robots import get_robot


def test_particle_regions_match_example_4():
    """Example 4: f1 = (v, u1, -g, 1, L), f2/f3 = (0, 0, -+mu a_n, a_n, 0, 0) for v1 >< 0."""
    a_n, mu = 5.0, 0.6
    sys_ = particle_system(a_n=a_n, mu=mu)
    x = np.array([0.3, 0.2, 1.5, -2.0, 0.1, 0.0])  # q, v, t, ell
    F = np.asarray(sys_.functions["F"](x, [4.0]))
    np.testing.assert_allclose(F[:, 0], [1.5, -2.0, 4.0, -GRAVITY, 1.0, 16.0])
    np.testing.assert_allclose(F[:, 0], F[:, 1])
    np.testing.assert_allclose(F[:, 2], [0, 0, -mu * a_n, a_n, 0, 0])  # c3 = v1 > 0: friction along -x
    np.testing.assert_allclose(F[:, 3], [0, 0, mu * a_n, a_n, 0, 0])
    np.testing.assert_allclose(np.asarray(sys_.functions["switching"](x)).ravel(), [0.2, -2.0, 1.5])


def test_step_multipliers_partition_unity_and_dense_regions():
    sys_ = particle_system()
    rng = np.random.default_rng(0)
    for alpha in rng.uniform(size=(20, 3)):
        assert step_multipliers(sys_.S, alpha).sum() == pytest.approx(1.0)
    # in an orthant the Step multipliers pick the region of Eq. (25)
    np.testing.assert_allclose(step_multipliers(sys_.S, [1, 0, 0]), [1, 0, 0, 0])
    np.testing.assert_allclose(step_multipliers(sys_.S, [0, 1, 0]), [0, 1, 0, 0])
    np.testing.assert_allclose(step_multipliers(sys_.S, [0, 0, 1]), [0, 0, 1, 0])
    np.testing.assert_allclose(step_multipliers(sys_.S, [0, 0, 0]), [0, 0, 0, 1])
    F, S, aux = dense_regions(sys_)
    assert S.shape == (8, 3) and aux == (6, 7)  # only c1 < 0, c2 < 0 is auxiliary


@pytest.mark.parametrize("mu", [0.6, 0.0])
def test_lifted_step_field_equals_the_step_field(mu):
    """With beta = (1 - alpha_1)(1 - alpha_2) the lifted field is F @ theta(alpha) of Eq. (32)."""
    sys_ = particle_system(mu=mu)
    alpha, beta, f_x, g_z = lifted_step_field(sys_)
    lifted = ca.Function("lifted", [sys_.x, sys_.u, alpha, beta], [f_x, g_z])
    rng = np.random.default_rng(1)
    for _ in range(10):
        x, u, a = rng.normal(size=6), rng.normal(size=1), rng.uniform(size=alpha.numel())
        b = (1 - a[0]) * (1 - a[1])
        f, g = (np.asarray(v).ravel() for v in lifted(x, u, a, b))
        F = np.asarray(sys_.functions["F"](x, u))
        np.testing.assert_allclose(f, F @ step_multipliers(sys_.S, a), atol=1e-12)
        assert g == pytest.approx(0.0, abs=1e-15)
        # a wrong beta shows in the residual
        assert float(lifted(x, u, a, b + 0.1)[1]) == pytest.approx(0.1)


def test_sliding_mode_slowdown_is_gamma_of_theorem_4():
    """On Sigma the convex combination keeping n^T v = 0 has theta_1 = D a_n / (D a_n - phi)."""
    a_n = GRAVITY
    sys_ = particle_system(a_n=a_n, mu=0.0)
    x = np.array([1.0, 0.0, 0.5, 0.0, 0.3, 0.0])  # on the table, v2 = 0
    F = np.asarray(sys_.functions["F"](x, [0.0]))
    vn = F[3, [0, 2]]  # d(v2)/dtau under f1 and the auxiliary field
    theta1 = vn[1] / (vn[1] - vn[0])
    D = float(sys_.functions["delassus"](x))
    phi = float(sys_.functions["phi"](x, [0.0]))
    assert theta1 == pytest.approx(D * a_n / (D * a_n - phi)) == pytest.approx(0.5)


def test_hopper_time_freezing_uses_the_robot_model():
    model = get_robot("hopper")
    cls = ContactLagrangian.from_robot(model, "foot")
    sys_ = time_freezing_system(cls, a_n=200.0, stage_cost=ca.dot(cls.u, cls.u))
    fns = model.symbolic_functions()
    q = np.array([0.1, 0.35, 0.4, -0.8])
    v = np.array([0.5, -1.0, 2.0, -3.0])
    u = np.array([10.0, -20.0])
    x = np.concatenate([q, v, [0.2, 0.0]])
    F = np.asarray(sys_.functions["F"](x, u))
    M = np.asarray(fns["mass_matrix"](q))
    h = np.asarray(fns["bias"](q, v)).ravel()
    np.testing.assert_allclose(F[4:8, 0], np.linalg.solve(M, model.B @ u - h), rtol=1e-10, atol=1e-10)
    assert F[9, 0] == pytest.approx(u @ u)  # cost runs with the clock only
    Jn, Jt = (np.asarray(J).ravel() for J in fns["contact_jacobians"](q))
    mu = model.params["mu"]
    # default tangent "geometric": friction along the ground, b = Jt
    Minv = np.linalg.inv(M)
    np.testing.assert_allclose(F[4:8, 2], 200.0 * Minv @ (Jn - mu * Jt), rtol=1e-10)
    np.testing.assert_allclose(F[:4, 2:], 0.0)  # q and clock frozen in the auxiliary regions
    np.testing.assert_allclose(F[8, 2:], 0.0)
    # tangent "kinetic": b = Jt - k Jn with b^T M^-1 Jn = 0 (the assumption of Sec. 4.1)
    kinetic = time_freezing_system(cls, a_n=200.0, stage_cost=ca.dot(cls.u, cls.u), tangent="kinetic")
    F_k = np.asarray(kinetic.functions["F"](x, u))
    k = (Jn @ Minv @ Jt) / (Jn @ Minv @ Jn)
    assert abs(mu * k) > 0.5  # this bent leg is far from kinetically orthogonal: the test means something
    b = Jt - k * Jn
    np.testing.assert_allclose(F_k[4:8, 2], 200.0 * Minv @ (Jn - mu * b), rtol=1e-10)
    np.testing.assert_allclose(F_k[4:8, 3], 200.0 * Minv @ (Jn + mu * b), rtol=1e-10)
    # both auxiliary fields stop the normal velocity at the same rate a_n n^T M^-1 n ...
    np.testing.assert_allclose(Jn @ F_k[4:8, 2:], 200.0 * (Jn @ Minv @ Jn), rtol=1e-10)
    # ... which the geometric fields do not
    assert abs(Jn @ F[4:8, 2] - Jn @ F[4:8, 3]) > 0.5 * abs(Jn @ F[4:8, 2] + Jn @ F[4:8, 3])
    # on the contact manifold (n^T v = 0) c3 is the foot's tangential velocity either way
    v_on = v - (Jn @ v) / (Jn @ Jn) * Jn
    for system in (sys_, kinetic):
        c_on = np.asarray(system.functions["switching"](np.concatenate([q, v_on, [0.2, 0.0]]))).ravel()
        assert c_on[1] == pytest.approx(0.0, abs=1e-12)
        assert c_on[2] == pytest.approx(Jt @ v_on, rel=1e-12)
    assert float(sys_.functions["friction_coupling"](x)) == pytest.approx(abs(mu * k))
    # a straight leg tilted by 0.2 rad: a frictional impact along the ground cannot stop it
    tilted = np.concatenate([[0.0, 0.4, -0.2, 0.0], np.zeros(4), [0.0, 0.0]])
    assert float(sys_.functions["friction_coupling"](tilted)) > 1.0
    assert float(sys_.functions["friction_coupling"](np.concatenate([[0, 0.4, 0, 0], np.zeros(6)]))) < 1e-12
    with pytest.raises(ValueError, match="tangent"):
        time_freezing_system(cls, a_n=200.0, tangent="normal")
    # gap_scale multiplies the first switching function only; the field and the gap are unchanged
    scaled = time_freezing_system(cls, a_n=200.0, stage_cost=ca.dot(cls.u, cls.u), gap_scale=10.0)
    c, c_scaled = (np.asarray(s.functions["switching"](x)).ravel() for s in (sys_, scaled))
    np.testing.assert_allclose(c_scaled, c * np.array([10.0, 1.0, 1.0]), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(scaled.functions["F"](x, u)), F, rtol=1e-12)
    assert float(scaled.functions["gap"](x)) == pytest.approx(c[0])


def test_hopper_foot_coordinates_give_the_same_motion_and_a_linear_gap():
    from mpc.planning.hopper_holes import HopperTask, foot_coordinates, hopper_holes_ocp

    model = get_robot("hopper")
    q_f, q_of_f, to_robot, from_robot = foot_coordinates(model)
    cls = ContactLagrangian.from_robot(model, "foot")
    new = cls.in_coordinates(q_f, q_of_f)
    # in q_f the gap is the second coordinate and the tangent coordinate the first: linear
    grads = ca.Function("g", [q_f], [ca.jacobian(ca.vertcat(new.gap, new.tangent_coordinate), q_f)])
    for q_rand in np.random.default_rng(1).uniform(-1.0, 1.0, (5, 4)):
        np.testing.assert_allclose(np.asarray(grads(q_rand)), [[0, 1, 0, 0], [1, 0, 0, 0]], atol=1e-14)
    q = np.array([0.3, 0.45, 0.4, -0.7])
    v = np.array([0.5, -1.0, 2.0, -3.0])
    u = np.array([10.0, -20.0])
    qf, vf = (np.asarray(a).ravel() for a in from_robot(q, v))
    foot = ca.Function("foot", [model.q], [model.contacts[0].point])
    np.testing.assert_allclose(qf, np.concatenate([np.asarray(foot(q)).ravel(), q[2:]]), atol=1e-12)
    q_back, v_back = (np.asarray(a).ravel() for a in to_robot(qf, vf))
    np.testing.assert_allclose(q_back, q, atol=1e-12)
    np.testing.assert_allclose(v_back, v, atol=1e-12)

    def accel(c, *args):
        return np.asarray(ca.Function("a", [c.q, c.v, c.u], [ca.solve(c.mass_matrix, c.actuation @ c.u - c.bias)])(*args)).ravel()

    # the robot's acceleration is T a_f + (dT/dt) v_f: the same equations of motion
    vf_sym = ca.SX.sym("vf", 4)
    T = ca.jacobian(q_of_f, q_f)
    T_num = np.asarray(ca.Function("T", [q_f], [T])(qf))
    dT_v = np.asarray(ca.Function("dTv", [q_f, vf_sym], [ca.jacobian(T @ vf_sym, q_f) @ vf_sym])(qf, vf)).ravel()
    np.testing.assert_allclose(T_num @ accel(new, qf, vf, u) + dT_v, accel(cls, q, v, u), rtol=1e-9, atol=1e-9)
    ocp = hopper_holes_ocp(HopperTask())
    np.testing.assert_allclose(ocp.q0, [0.0, 0.0, 0.0, 0.0], atol=1e-12)  # foot at the origin, leg straight
    assert {"body_x", "body_z"} <= set(ocp.path_names)
    with pytest.raises(ValueError, match="coordinates"):
        HopperTask(coordinates="polar")
    with pytest.raises(ValueError, match="tangent"):
        HopperTask(tangent="normal")


def test_bad_inputs_name_the_field():
    q = ca.SX.sym("q", 2)
    with pytest.raises(ValueError, match="mu"):
        ContactLagrangian(q=q, v=ca.SX.sym("v", 2), u=ca.SX.sym("u", 1), mass_matrix=ca.SX.eye(2),
                          bias=ca.SX.zeros(2), actuation=ca.SX.zeros(2, 1), gap=q[1], tangent_coordinate=q[0], mu=-1)
    with pytest.raises(ValueError, match="a_n"):
        particle_system(a_n=0.0)
    with pytest.raises(ValueError, match="gap_scale"):
        time_freezing_system(particle_system(a_n=1.0).cls, a_n=1.0, gap_scale=-1.0)
    with pytest.raises(ValueError, match="s_max"):
        PlannerOptions(s_max=0.5)
    with pytest.raises(ValueError, match="first_nlp_max_iter"):
        PlannerOptions(first_nlp_max_iter=0)
    with pytest.raises(ValueError, match="init"):
        PlannerOptions(init="spline")
    with pytest.raises(ValueError, match="alpha_init"):
        PlannerOptions(alpha_init=1.5)
    with pytest.raises(ValueError, match="unknown plan scenario"):
        run_scenario("no-such-plan")
    with pytest.raises(ValueError, match="linear_solver"):
        PlannerOptions(linear_solver="no-such-solver")
    # a linear solver IPOPT knows but cannot load (HSL's, without the library) stops the plan with
    # the option named, instead of a homotopy of NLPs that never ran
    from mpc.planning.particle import particle_ocp, particle_options
    from mpc.planning.solve import solve_plan

    try:
        plan = solve_plan(particle_ocp(), particle_options(linear_solver="ma57", max_homotopy=1))
    except RuntimeError as err:
        assert "linear_solver='ma57'" in str(err) and "libhsl" in str(err)
    else:  # an HSL library is installed: then the NLP really ran
        assert plan.homotopy[0]["status"] != "Invalid_Option" and plan.homotopy[0]["iters"] > 0


def test_summary_is_strict_json():
    from mpc.planning.scenarios import _json_ready

    out = _json_ready({"a": float("nan"), "b": [1.0, float("inf")], "c": {"d": 2}})
    assert out == {"a": None, "b": [1.0, None], "c": {"d": 2}}
    json.dumps(out, allow_nan=False)


def test_count_touchdowns():
    assert count_touchdowns(np.array([0.0, 0.1, 0.2, 0.0, 0.0, 0.3, 0.0])) == 2
    assert count_touchdowns(np.array([0.0, 0.0])) == 0


@pytest.fixture(scope="module")
def example5(tmp_path_factory):
    """The paper's Example 5, solved once through the same path as `python -m launch plan particle`."""
    out = tmp_path_factory.mktemp("plans")
    return run_scenario("particle", out_dir=out, progress=lambda m: None), out


def test_example5_reaches_the_target_through_an_impact(example5):
    summary, out = example5
    assert summary["converged"], summary
    assert summary["complementarity_max"] <= 1e-6
    np.testing.assert_allclose(summary["final_q"], [3.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(summary["final_v"], [0.0, 0.0], atol=1e-6)
    assert abs(summary["physical_time_end"] - 2.0) <= 1e-6
    assert summary["clock_residual"] <= 1e-6  # t_k = k T / N: equidistant physical control grid
    assert max(abs(u) for u in summary["u"]) <= 10.0 + 1e-6
    assert summary["n_touchdowns"] == 1
    data = np.load(out / "particle" / "plan.npz")
    np.testing.assert_allclose(np.diff(data["t_grid"]), 0.1)
    # the impact: time frozen while the vertical velocity jumps to zero at t = sqrt(2 / g)
    frozen = data["mode"] == 1
    assert frozen.any()
    np.testing.assert_allclose(data["t"][frozen][0], np.sqrt(2 / GRAVITY), atol=1e-3)
    assert np.all(np.abs(data["v"][data["t"] > 0.5, 1]) < 1e-5)
    # speed of time: catches up in the impact interval, compensates gamma = 1/2 in contact (a_n = g)
    s = np.asarray(summary["s"])
    assert s.max() > 2.0
    np.testing.assert_allclose(s[-5:], 2.0, atol=1e-4)
    assert (out / "particle" / "torques.png").stat().st_size > 0


def test_plan_command_is_listed():
    out = subprocess.run([sys.executable, "-m", "launch", "plan", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "hopper-holes" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "launch", "plan", "no-such-plan"], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode != 0 and "no-such-plan" in bad.stderr


def test_active_set_polish_ends_at_the_homotopy_optimum(example5):
    """Polishing Example 5 from the sigma = 1e-3 NLP gives the full homotopy's optimum with
    every complementarity product exactly zero (the particle's gap is linear, see active_set.py)."""
    from mpc.planning.particle import particle_ocp, particle_options
    from mpc.planning.solve import solve_plan

    summary, _ = example5
    plan = solve_plan(particle_ocp(), particle_options(polish_below=1.5e-3))
    assert plan.converged and "polish" in plan.homotopy[-1], plan.homotopy[-1]
    assert plan.homotopy[-1]["polish"]["sliding"] > 0  # the contact phase is a sliding mode
    assert plan.complementarity == 0.0
    assert plan.cost == pytest.approx(summary["cost"], rel=1e-5)
    np.testing.assert_allclose(plan.q_grid[-1], [3.0, 0.0], atol=1e-6)
    assert plan.clock_residual <= 1e-6 and abs(plan.physical_time_end - 2.0) <= 1e-6
    with pytest.raises(ValueError, match="polish_below"):
        PlannerOptions(polish_below=1e-3, pss="stewart")


def test_polish_rounds_repair_an_early_active_set(example5):
    """From the sigma = 1e-2 point the exact active set is infeasible (penetrations of ~1e-3 m
    read as "c < 0"); relaxing only the intervals with violated rows and trying again reaches
    the homotopy's optimum, exactly complementary."""
    from mpc.planning.particle import particle_ocp, particle_options
    from mpc.planning.solve import solve_plan

    summary, _ = example5
    plan = solve_plan(particle_ocp(), particle_options(polish_below=1.5e-2, polish_rounds=4))
    last = plan.homotopy[-1]
    assert plan.converged and last.get("polish_rounds", 0) >= 3, last  # exact, relaxed, exact
    assert len(plan.homotopy) == 4  # three NLPs (sigma 1, 0.1, 0.01) and the polish
    assert plan.complementarity == 0.0
    assert plan.cost == pytest.approx(summary["cost"], rel=1e-5)
    np.testing.assert_allclose(plan.q_grid[-1], [3.0, 0.0], atol=1e-6)
    assert plan.clock_residual <= 1e-6 and abs(plan.physical_time_end - 2.0) <= 1e-6
    with pytest.raises(ValueError, match="polish_rounds"):
        PlannerOptions(polish_rounds=0)


def _nlp_problem(ocp, options):
    """nosnoc's NLP of an OCP as solve_plan builds it (variables, bounds, index sets), unsolved."""
    from mpc.planning.solve import _HomotopySolver, _nosnoc_description

    model, nocp, opts = _nosnoc_description(ocp, options)
    return _HomotopySolver(opts, model, nocp, ocp, options, None).problem


def test_h_max_sets_the_element_length_bound():
    """h_max replaces nosnoc's (1 + gamma_h) h0 bound on every finite element length."""
    from mpc.planning.particle import particle_ocp, particle_options

    ocp = particle_ocp()
    for h_max, factor in ((None, 2.0), (3.0, 3.0)):
        options = particle_options(h_max=h_max)
        prob = _nlp_problem(ocp, options)
        ih = np.asarray(prob.ind_h, dtype=int)
        h0 = ocp.horizon / (ocp.n_intervals * options.n_fe)  # the numerical horizon is T here
        np.testing.assert_allclose(prob.ubw[ih], factor * h0)
        np.testing.assert_allclose(prob.lbw[ih], 0.0)
    with pytest.raises(ValueError, match="h_max"):
        PlannerOptions(h_max=4.0, n_fe=3)


def _nlp_names(ocp, options):
    """Names of nosnoc's NLP variables (e.g. 'X_3_0_1_2': interval 3 first), in primal order."""
    w = _nlp_problem(ocp, options).w
    return [str(w[i]) for i in range(w.numel())]


def _renumber(name: str, offset: int) -> str:
    """The NLP variable name with its control-interval index (its first number) moved by offset."""
    parts = name.split("_")
    first = next(i for i, p in enumerate(parts) if p.isdigit())
    parts[first] = str(int(parts[first]) + offset)
    return "_".join(parts)


def test_tile_primal_lays_tiles_end_to_end():
    """Every variable of a 2 + 3 interval tiling lands where the 5-interval NLP has it, and the
    shift moves the states (and only them)."""
    import dataclasses

    from mpc.planning.particle import particle_ocp, particle_options
    from mpc.planning.solve import solve_plan, tile_primal

    options = particle_options(max_homotopy=1, ipopt_max_iter=1, first_nlp_max_iter=None)
    ocps = {n: particle_ocp(horizon=0.1 * n, n_intervals=n) for n in (2, 3, 5)}
    plans = {n: solve_plan(ocps[n], options) for n in (2, 3)}
    names = {n: _nlp_names(ocps[n], options) for n in (2, 3, 5)}
    # label every tile variable by its own position (tile 2 offset by 1000), no shift
    tiles = [(dataclasses.replace(plans[2], w=np.arange(len(names[2]), dtype=float)), np.zeros(6)),
             (dataclasses.replace(plans[3], w=1000.0 + np.arange(len(names[3]))), np.zeros(6))]
    w = tile_primal(tiles)
    assert w.shape == (len(names[5]),)
    got = [names[2][int(v)] if v < 1000 else _renumber(names[3][int(v) - 1000], 2) for v in w]
    assert got == names[5]
    # a shift is added to the stage states of its tile only
    shift = np.arange(1.0, 7.0)
    moved = tile_primal([tiles[0], (tiles[1][0], shift)])
    index = plans[3].state_index + 0  # (N, stages, nx) positions inside tile 2
    assert np.count_nonzero(moved - w) == index.size
    state_rows = [names[5].index(_renumber(names[3][i], 2)) for i in index.reshape(-1)]
    np.testing.assert_allclose((moved - w)[state_rows], np.broadcast_to(shift, index.shape).reshape(-1))
    with pytest.raises(ValueError, match="shift"):
        tile_primal([(plans[2], np.zeros(3))])
    with pytest.raises(ValueError, match="at least one"):
        tile_primal([])


def test_terrain_scale_tasks():
    """The scaled task and its one-hole tiles (hopper-holes continuation, no NLP solved here)."""
    from mpc.planning.hopper_holes import HoleTerrain, HopperTask
    from mpc.planning.terrain_scale import ScaleSchedule, hole_tiles, scaled_task

    assert HopperTask().terrain.semi_x == 0.25  # holes 0.5 m wide (seed 004, Section 6: "width of the hole")
    small = scaled_task(HopperTask(terrain=HoleTerrain(semi_x=0.5)), 0.4, 0.05)
    assert small.terrain.centers == pytest.approx((0.2, 0.6, 1.0))
    assert small.terrain.semi_x == pytest.approx(0.15) and small.terrain.semi_z == 0.1
    assert small.q_target == pytest.approx((1.2, 0.4, 0.0, 0.0))
    assert scaled_task(HopperTask(), 1.0, 0.0) == HopperTask()
    tiles = hole_tiles(small)
    assert [t.n_intervals for t, _ in tiles] == [7, 7, 6]
    assert [t.horizon for t, _ in tiles] == pytest.approx([0.875, 0.875, 0.75])
    for tile, hop in tiles:
        assert hop == pytest.approx(0.4) and tile.terrain.centers == pytest.approx((0.2,))
        assert tile.q_target == pytest.approx((0.4, 0.4, 0.0, 0.0)) and tile.q0 == small.q0
    with pytest.raises(ValueError, match="equally spaced"):
        hole_tiles(HopperTask(terrain=HoleTerrain(centers=(0.5, 1.0, 2.5))))
    with pytest.raises(ValueError, match="no hole"):
        scaled_task(HopperTask(), 0.2, 0.05)
    with pytest.raises(ValueError, match="path_semi_x"):
        ScaleSchedule(path_semi_x=0.0)
    with pytest.raises(ValueError, match="hopper-holes only"):
        run_scenario("particle", hole_semi_axis=0.5)
    with pytest.raises(ValueError, match="scales"):
        ScaleSchedule(scales=(0.5, 0.4, 1.0))
    with pytest.raises(ValueError, match="strategy"):
        run_scenario("hopper-holes", strategy="guess")


def test_stop_on_failure_ends_the_homotopy_at_the_first_failed_nlp():
    from mpc.planning.particle import particle_ocp, particle_options
    from mpc.planning.solve import solve_plan

    ocp = particle_ocp(horizon=0.4, n_intervals=4)
    for stop, n_nlps in ((True, 1), (False, 3)):
        plan = solve_plan(ocp, particle_options(max_homotopy=3, ipopt_max_iter=1, first_nlp_max_iter=None,
                                                stop_on_failure=stop))
        assert [h["status"] for h in plan.homotopy] == ["Maximum_Iterations_Exceeded"] * n_nlps
        assert not plan.converged


def test_terrain_scale_retries_from_midpoints_and_returns_the_last_converged_scale(monkeypatch):
    """The continuation's control flow, with the NLP solves replaced by a rule on the task."""
    from types import SimpleNamespace

    from mpc.planning import terrain_scale as ts
    from mpc.planning.hopper_holes import HoleTerrain, HopperTask

    wide = HopperTask(terrain=HoleTerrain(semi_x=0.5))  # the path's own holes: no narrowing stage
    system = SimpleNamespace(x=ca.SX.sym("x", 10), index_t=8, index_ell=9)
    monkeypatch.setattr(ts, "hopper_holes_ocp", lambda task: SimpleNamespace(task=task, system=system))
    monkeypatch.setattr(ts, "tile_primal", lambda parts: np.array([0.0]))  # scale 0: the tiles

    def run(rule):
        def fake_solve(ocp, options, progress=None, w_start=None):
            scale = ocp.task.q_target[0] / 3.0
            ok = ocp.task.n_intervals < 20 or rule(scale, 0.0 if w_start is None else float(w_start[0]))
            return SimpleNamespace(converged=ok, complementarity=1e-7, cost=scale, cpu_s=1.0,
                                   homotopy=[{"sigma": 1e-2}], w=np.array([scale]))
        monkeypatch.setattr(ts, "solve_plan", fake_solve)
        return ts.solve_by_terrain_scale(wide)

    # every step beyond scale 0.6 fails: 0.65, then the midpoints 0.625 and 0.6125
    res = run(lambda scale, start: scale <= 0.6 + 1e-9)
    assert not res.converged and not res.plan.converged and res.scale == pytest.approx(0.6)
    assert res.task.q_target[0] == pytest.approx(1.8) and res.plan.cost == pytest.approx(0.6)
    assert [s["stage"].split(" (")[0] for s in res.stages[-3:]] == ["scale 0.65", "scale 0.625", "scale 0.6125"]
    assert len(res.plan.homotopy) == len(res.stages) == 2 + 5 + 3 and res.plan.cpu_s == pytest.approx(10.0)
    # the step 0.6 -> 0.65 is too long, 0.625 -> 0.65 is not: one midpoint, then on to scale 1
    res = run(lambda scale, start: not (start == pytest.approx(0.6) and scale == pytest.approx(0.65)))
    assert res.converged and res.scale == 1.0 and res.margin == 0.0 and res.task == wide
    names = [s["stage"] for s in res.stages]
    assert names[names.index("scale 0.625 (semi-axis 0.2625 m)") + 1] == "scale 0.65 (semi-axis 0.275 m)"
    assert names[-1] == "scale 1 (semi-axis 0.5 m)"


def test_terrain_scale_narrows_wide_path_holes_to_the_tasks(monkeypatch):
    """Narrower holes than the path's: stages 1-3 grow the path's holes (semi-axis 0.5 m at
    scale 1) until a step fails for good, then the task's holes take over at the last converged
    scale (solves replaced by a rule on the task, as above)."""
    from types import SimpleNamespace

    from mpc.planning import terrain_scale as ts
    from mpc.planning.hopper_holes import HopperTask

    system = SimpleNamespace(x=ca.SX.sym("x", 10), index_t=8, index_ell=9)
    monkeypatch.setattr(ts, "hopper_holes_ocp", lambda task: SimpleNamespace(task=task, system=system))
    monkeypatch.setattr(ts, "tile_primal", lambda parts: np.array([0.0]))
    task = HopperTask()  # holes of semi-axis 0.25 m

    def run(rule):
        def fake_solve(ocp, options, progress=None, w_start=None):
            scale = ocp.task.q_target[0] / 3.0
            on_path = ocp.task.terrain.semi_x / scale > 0.3  # path: 0.5 - 0.05 / scale; task: 0.25
            ok = ocp.task.n_intervals < 20 or rule(scale, on_path)
            return SimpleNamespace(converged=ok, complementarity=1e-7, cost=scale, cpu_s=1.0,
                                   homotopy=[{"sigma": 1e-2}], w=np.array([scale]))
        monkeypatch.setattr(ts, "solve_plan", fake_solve)
        return ts.solve_by_terrain_scale(task)

    # the path's holes go to 0.9 (0.95 and its midpoints 0.925, 0.9125 fail); the task's to 1
    res = run(lambda scale, on_path: not on_path or scale <= 0.9 + 1e-9)
    names = [s["stage"] for s in res.stages]
    assert names[2] == "scale 0.4 (semi-axis 0.15 m)"  # tiles and growth on the path's holes
    assert names[-6:] == ["scale 0.95 (semi-axis 0.425 m)", "scale 0.925 (semi-axis 0.4125 m)",
                          "scale 0.9125 (semi-axis 0.4063 m)", "scale 0.9 (semi-axis 0.225 m)",
                          "scale 0.95 (semi-axis 0.2375 m)", "scale 1 (semi-axis 0.25 m)"]
    assert res.converged and res.task == task and (res.scale, res.margin) == (1.0, 0.0)
    # the task's holes fail beyond 0.95: midpoints between the task's own scales, then the stop
    res = run(lambda scale, on_path: scale <= (0.9 if on_path else 0.95) + 1e-9)
    assert [s["stage"] for s in res.stages[-3:]] == [
        "scale 1 (semi-axis 0.25 m)", "scale 0.975 (semi-axis 0.2437 m)", "scale 0.9625 (semi-axis 0.2406 m)"]
    assert not res.converged and res.scale == pytest.approx(0.95) and res.margin == 0.0
    assert res.task.terrain.semi_x == pytest.approx(0.2375) and res.task.q_target[0] == pytest.approx(2.85)
    # the narrowed holes fail at once: no midpoint towards the path's holes; the path's plan is returned
    res = run(lambda scale, on_path: on_path and scale <= 0.9 + 1e-9)
    assert res.stages[-1]["stage"] == "scale 0.9 (semi-axis 0.225 m)" and not res.converged
    assert res.task.terrain.semi_x == pytest.approx(0.4) and res.scale == pytest.approx(0.9)


def test_plan_files_carry_their_terrain(tmp_path):
    """plan.npz keeps the holes it avoids, so that the closed-loop run judges the right ones."""
    from mpc.planning.hopper_holes import HoleTerrain, terrain_arrays, terrain_from_plan

    terrain = HoleTerrain(centers=(0.2, 0.6), semi_x=0.15, semi_z=0.08)
    np.savez(tmp_path / "plan.npz", t=np.zeros(2), **terrain_arrays(terrain))
    assert terrain_from_plan(tmp_path / "plan.npz") == terrain
    np.savez(tmp_path / "old.npz", t=np.zeros(2))
    with pytest.raises(ValueError, match="make it again"):
        terrain_from_plan(tmp_path / "old.npz")
