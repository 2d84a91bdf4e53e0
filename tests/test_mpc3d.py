"""The 3D contact-implicit MPC (mpc.centroidal): its reduced model, OCP, gaits, solver and loop."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mpc.acados.rti import CostWeights, RtiOptions, RtiSolver
from mpc.centroidal.controller import Mpc3dOptions, make_mpc3d
from mpc.centroidal.gaits import Gait3dTask, feature_weights, periodic_gait3d
from mpc.centroidal.ocp import CentroidalOcp
from mpc.centroidal.srb import SingleRigidBody
from mpc.problem import OcpOptions
from mpc.ipopt_ocp import TrackingCost, solve_ipopt
from mpc.reference import FourierReference
from robots import get_robot


@pytest.fixture(scope="module")
def go1():
    return get_robot("go1")


@pytest.fixture(scope="module")
def ocp(go1):
    return CentroidalOcp(SingleRigidBody.from_model(go1), Mpc3dOptions().ocp)  # the MPC's own discretization


@pytest.fixture(scope="module")
def trot(ocp):
    """The reference trot at 0.5 m/s: (features Gait, states, controls)."""
    return periodic_gait3d(ocp, Gait3dTask(vx=0.5), full=True, verbose=False)


def test_srb_is_read_from_the_model(go1):
    srb = SingleRigidBody.from_model(go1)
    assert srb.mass == pytest.approx(go1.params["mass_kg"], rel=1e-9)
    assert np.allclose(srb.inertia, srb.inertia.T) and np.all(np.linalg.eigvalsh(srb.inertia) > 0)
    assert sorted(srb.mirror) == [0, 1, 2, 3] and all(srb.mirror[srb.mirror[i]] == i for i in range(4))
    # the standing CoM is over the support polygon's middle, the feet below it
    assert np.all(srb.feet_nominal[:, 2] < -0.2) and abs(srb.feet_nominal[:, 0].mean()) < 0.01


def test_srb_refuses_planar_robots():
    with pytest.raises(ValueError, match="no floating base"):
        SingleRigidBody.from_model(get_robot("quadruped"))


@settings(max_examples=25, deadline=None)
@given(yaw=st.floats(-np.pi, np.pi), dx=st.floats(-2, 2), dy=st.floats(-2, 2))
def test_ocp_is_translation_and_yaw_invariant(ocp, yaw, dx, dy):
    """The step and the cost features commute with moving and turning the whole scene: one
    reference serves every heading (the features do not change at all)."""
    x, u = ocp.standing_state(), ocp.standing_control()
    u[:12] = np.linspace(-0.3, 0.3, 12)
    x[6:12] = [0.2, -0.1, 0.05, 0.1, -0.2, 0.3]
    Rz = np.array([[np.cos(yaw), -np.sin(yaw), 0], [np.sin(yaw), np.cos(yaw), 0], [0, 0, 1]])
    move = lambda v, pos: Rz @ v + (np.array([dx, dy, 0.0]) if pos else 0)  # noqa: E731
    x2 = x.copy()
    x2[0:3], x2[5], x2[6:9] = move(x[0:3], True), x[5] + yaw, move(x[6:9], False)
    for i in range(4):
        x2[12 + 3 * i: 15 + 3 * i] = move(x[12 + 3 * i: 15 + 3 * i], True)
    u2 = u.copy()
    for i in range(4):
        u2[3 * i: 3 * i + 3] = move(u[3 * i: 3 * i + 3], False)
    # the pyramid's edges are world-axis aligned: this control has no tangential force (equal
    # opposite edges), so it is the same control in the turned scene
    f1 = [np.asarray(a).ravel() for a in ocp.features(x, u)]
    f2 = [np.asarray(a).ravel() for a in ocp.features(x2, u2)]
    np.testing.assert_allclose(f1[0], f2[0], atol=1e-9)
    np.testing.assert_allclose(f1[1], f2[1], atol=1e-9)
    y1 = np.asarray(ocp.features(np.asarray(ocp.step(x, u)).ravel(), u)[0]).ravel()
    y2 = np.asarray(ocp.features(np.asarray(ocp.step(x2, u2)).ravel(), u2)[0]).ravel()
    np.testing.assert_allclose(y1, y2, atol=1e-9)


def test_standing_is_an_equilibrium(ocp):
    """Feet still, the weight shared over the four feet: the CoM does not accelerate."""
    x, u = ocp.standing_state(), ocp.standing_control()
    x1 = np.asarray(ocp.step(x, u)).ravel()
    assert np.max(np.abs(x1[6:9])) < 1e-12
    assert np.max(np.abs(x1[9:12])) < 0.02  # the CoM is a few mm off the feet's centre


def test_trot_emerges_from_the_gait_problem(ocp, trot):
    """No contact schedule is given: the optimizer makes the diagonal feet land together, each
    foot spends part of the period in the air, and the body moves at the asked speed."""
    gait, xs, us = trot
    fz = ocp.normal_forces(us) / ocp.weight  # (N, 4) weights
    z = xs[:-1, [14, 17, 20, 23]]
    loaded = fz > 0.1
    for i in range(4):
        assert loaded[:, i].any() and (~loaded[:, i]).any(), f"foot {i} never changes contact"
        assert z[:, i].max() > 0.02, f"foot {i} never lifts"
    diag = [(i, j) for i in range(4) for j in range(i + 1, 4)
            if np.all(ocp.srb.feet_nominal[i, :2] * ocp.srb.feet_nominal[j, :2] < 0)]
    for i, j in diag:  # diagonal feet carry load at the same stages
        assert np.mean(loaded[:, i] == loaded[:, j]) >= 0.85
    assert np.mean(xs[:, 6]) == pytest.approx(0.5, abs=0.01)
    np.testing.assert_allclose(gait.x[-1], gait.x[0], atol=1e-6)  # periodic in the features
    # a loaded foot is on the ground at the stage's end, sunk by its compliance
    gap = xs[1:, [14, 17, 20, 23]] + ocp.srb.compliance * fz
    assert np.max(np.abs(gap[loaded])) < 1e-3


def test_rti_iterates_reach_ipopt_cost(ocp, trot, tmp_path):
    """The real-time solver's iterations, repeated at one state until they stop moving, reach a
    solution of the OCP that IPOPT (same problem, exact Hessian) certifies: started there, IPOPT
    stays, at the same cost (relative 1e-3; measured 3e-7). The complementarity makes the OCP
    non-convex: IPOPT started from the reference gait instead finds another local minimum on
    this instance (cost 0.016 against 0.031, docs/MPC.md)."""
    gait, xs_g, us_g = trot
    n = 10
    problem = CentroidalOcp(ocp.srb, OcpOptions(n_stages=n, sigma=ocp.options.sigma))
    ref = FourierReference.fit(gait)
    w_x, w_u = feature_weights(problem)
    weights = CostWeights(w_x=w_x, w_u=w_u, z_l1=1000.0, z_l2=1e4)
    rti = RtiSolver(problem, ref, weights, RtiOptions(qp_iter_max=100, qp_tol=1e-10, hpipm_mode="ROBUST"),
                    cache_dir=tmp_path, verbose=False)
    k0 = 5
    tau0 = k0 * problem.options.dt
    x0 = xs_g[k0] + np.concatenate([[0, 0, 0.01, 0.02, -0.02, 0, 0.05, 0.05, 0, 0.1, 0, 0], np.zeros(12)])
    xs = np.column_stack([xs_g[k0:k0 + n + 1], tau0 + problem.options.dt * np.arange(n + 1)])
    xs[0, :-1] = x0
    rti.io.set(xs, us_g[k0:k0 + n])
    x0c = np.append(x0, tau0)
    costs = []
    for _ in range(200):
        rti.prepare()
        status = rti.feedback(x0c)
        assert status in (0, 2), f"acados status {status}"
        costs.append(rti.solver.get_cost())
    xs_r, us_r = rti.trajectory()
    taus = tau0 + problem.options.dt * np.arange(n + 1)
    cost = TrackingCost(w=np.concatenate([w_x, w_u]), w_e=weights.terminal_factor * w_x,
                        yref=np.column_stack([ref.x_at(taus[:-1]), ref.u_at(taus[:-1])]), xref_e=ref.x_at(taus[-1])[0],
                        z_l1=weights.z_l1, z_l2=weights.z_l2, stage_scale=problem.options.dt)
    sol = solve_ipopt(problem, cost, x0=x0, x_init=xs_r[:, :-1], u_init=us_r)
    assert sol.success, sol.status
    assert abs(costs[-1] - costs[-2]) < 1e-9 * max(1.0, abs(costs[-1])), "the RTI iterations did not settle"
    assert costs[-1] == pytest.approx(sol.cost, rel=1e-3)
    assert np.max(np.abs(sol.x - xs_r[:, :-1])) < 1e-4
    assert np.max(ocp.normal_forces(sol.u)) > 0.3 * ocp.weight  # the instance has loaded feet


def test_options_are_checked(go1):
    with pytest.raises(ValueError, match="unknown mpc options"):
        make_mpc3d(go1, apex_height=0.4)
    with pytest.raises(ValueError, match="vx"):
        Mpc3dOptions(vx=9.0).validate()
    with pytest.raises(ValueError, match="stand"):
        Mpc3dOptions(vx=0.3, stand=True).validate()
    with pytest.raises(ValueError, match="period"):
        Mpc3dOptions(period=0.05).validate()


def test_go1_trots_in_closed_loop(go1, trot):
    """Lockstep in process on the ESS plant for 3 s: no fall, the commanded speed (after the
    0.5 s ramp) within 10 %, the executed stages complementary."""
    from mpc.closed_loop import run_in_process
    from sim.registry import make_plant

    plant = make_plant("ess", go1, plant_rate_hz=1000.0)
    ctrl = make_mpc3d(go1, vx=0.5)
    log = run_in_process(plant, ctrl, duration_s=3.0, q0=go1.q0)
    assert log["violation"] == ""
    q, t = log["q"], log["t"]
    assert q[:, 2].min() > 0.2, "the base dropped"
    i0 = np.searchsorted(t, 1.0)
    vx = (q[-1, 0] - q[i0, 0]) / (t[-1] - t[i0])
    assert vx == pytest.approx(0.5, rel=0.1)
    assert abs(q[-1, 1]) < 0.1
    comp = np.array([r["complementarity"] for r in log["rows"]])
    assert np.percentile(comp, 99) < 1e-2
    assert all(r["status"] in (0, 2) for r in log["rows"])


def test_failed_qp_sends_the_previous_plan_and_recovers(go1, trot, monkeypatch):
    """A tick whose QP fails (acados status 4) sends the previous plan's next stage, counts as
    missed, restarts the solver from the measured state, and the next tick plans again."""
    from sim.registry import make_plant

    ctrl = make_mpc3d(go1, vx=0.5)
    plant = make_plant("ess", go1, plant_rate_hz=1000.0)
    state = plant.reset(go1.q0, None)
    for _ in range(5):
        cmd, _ = ctrl.compute(state.t, state.q, state.v, state.contact)
        ctrl.prepare()
        state = plant.step(cmd, 0.01)
    plan_x = ctrl._plan_x.copy()
    real = ctrl.rti.feedback
    monkeypatch.setattr(ctrl.rti, "feedback", lambda x0: 4)
    cmd, _ = ctrl.compute(state.t, state.q, state.v, state.contact)
    info = ctrl.tick_info()
    assert info["status"] == 4 and info["missed"] == 1
    assert np.all(np.isfinite(cmd.tau_ff)) and np.all(np.isfinite(cmd.q_des))
    np.testing.assert_array_equal(ctrl._plan_x, plan_x)  # the previous plan is kept
    ctrl.prepare()
    state = plant.step(cmd, 0.01)
    monkeypatch.setattr(ctrl.rti, "feedback", real)
    cmd, _ = ctrl.compute(state.t, state.q, state.v, state.contact)
    assert ctrl.tick_info()["status"] in (0, 2) and ctrl.tick_info()["missed"] == 0


def test_episode_row_reports_heading_velocities(trot):
    """A sweep episode of go1 reports its heading-frame speeds and yaw rate with the error."""
    from launch.episode import run_episode
    from launch.scenario import load_scenario

    row = run_episode(load_scenario("go1").with_overrides(duration_s=1.0).validate())
    assert row["error"] == "" and row["success"]
    assert row["vy_mps"] is not None and abs(row["vy_mps"]) < 0.05
    assert row["yaw_rate_error_radps"] == pytest.approx(row["yaw_rate_radps"])  # target 0
