"""The 3D contact-implicit MPC (mpc.centroidal): its reduced model, OCP, gaits, solver and loop."""
from __future__ import annotations

import numpy as np

from sim.command_plan import JointPlan
import pytest
from hypothesis import given, settings, strategies as st

from mpc.acados.rti import CostWeights, RtiOptions, RtiSolver
from mpc.centroidal.controller import Mpc3dOptions, make_mpc3d
from mpc.centroidal.gaits import Gait3dTask, periodic_gait3d
from mpc.centroidal.tuning import feature_weights
from mpc.centroidal.ocp import CentroidalOcp
from mpc.centroidal.srb import SingleRigidBody
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
@given(yaw=st.floats(-np.pi, np.pi), dx=st.floats(-2, 2), dy=st.floats(-2, 2),
       edges=st.lists(st.floats(0.0, 0.3), min_size=16, max_size=16))
def test_ocp_is_translation_and_yaw_invariant(ocp, yaw, dx, dy, edges):
    """The step, the constraints and the cost features commute with moving and turning the whole
    scene: controls live in the heading frame (foot velocities, friction pyramid), so the same
    control, tangential forces included, means the same thing at every heading; one reference
    serves every heading."""
    x, u = ocp.standing_state(), ocp.standing_control()
    u[:12] = np.linspace(-0.3, 0.3, 12)
    u[12:] = edges
    x[6:12] = [0.2, -0.1, 0.05, 0.1, -0.2, 0.3]
    x[[14, 20]] = [0.01, 0.03]  # two feet in the air
    Rz = np.array([[np.cos(yaw), -np.sin(yaw), 0], [np.sin(yaw), np.cos(yaw), 0], [0, 0, 1]])
    move = lambda v, pos: Rz @ v + (np.array([dx, dy, 0.0]) if pos else 0)  # noqa: E731
    x2 = x.copy()
    x2[0:3], x2[5], x2[6:9] = move(x[0:3], True), x[5] + yaw, move(x[6:9], False)
    for i in range(4):
        x2[12 + 3 * i: 15 + 3 * i] = move(x[12 + 3 * i: 15 + 3 * i], True)
    f1 = [np.asarray(a).ravel() for a in ocp.features(x, u)]
    f2 = [np.asarray(a).ravel() for a in ocp.features(x2, u)]
    np.testing.assert_allclose(f1[0], f2[0], atol=1e-9)
    np.testing.assert_allclose(f1[1], f2[1], atol=1e-9)
    y1 = np.asarray(ocp.features(np.asarray(ocp.step(x, u)).ravel(), u)[0]).ravel()
    y2 = np.asarray(ocp.features(np.asarray(ocp.step(x2, u)).ravel(), u)[0]).ravel()
    np.testing.assert_allclose(y1, y2, atol=1e-9)
    np.testing.assert_allclose(np.asarray(ocp.residuals(x, u)).ravel(), np.asarray(ocp.residuals(x2, u)).ravel(),
                               atol=1e-9)
    f_world = np.asarray(ocp.forces(x2, u))  # the forces turn with the scene
    np.testing.assert_allclose(f_world, np.asarray(ocp.forces(x, u)) @ Rz.T, atol=1e-9)


def test_stages_of_differing_length(go1):
    """The MPC's horizon (Mpc3dOptions.stage_dts) is 0.4 s in 15 stages; each stage steps with its
    own length (the symbol dt_param), and the first is the control period."""
    opts = Mpc3dOptions()
    assert opts.horizon_s == pytest.approx(0.4) and opts.n_stages == 15 and opts.dt == 0.01
    problem = CentroidalOcp(SingleRigidBody.from_model(go1), opts.ocp, stage_dts=opts.stage_dts)
    assert problem.dt_param is not None and problem.horizon_s == pytest.approx(0.4)
    x, u = problem.standing_state(), problem.standing_control()
    u[0] = 0.5  # foot 0 moves forward at 0.5 m/s
    for h in (0.01, 0.05):
        x1 = np.asarray(problem.step_dt(x, u, h)).ravel()
        assert x1[12] - x[12] == pytest.approx(0.5 * h)
    np.testing.assert_allclose(np.asarray(problem.step(x, u)).ravel(),
                               np.asarray(problem.step_dt(x, u, 0.01)).ravel())
    with pytest.raises(ValueError, match="stage_dts"):
        Mpc3dOptions(stage_dts=(0.01,)).validate()
    with pytest.raises(ValueError, match="stage_dts"):
        Mpc3dOptions(stage_dts=(0.01, -0.02)).validate()
    with pytest.raises(ValueError, match="stage_dts"):
        CentroidalOcp(problem.srb, opts.ocp, stage_dts=opts.stage_dts[:-1])


def test_warm_start_shift_interpolates_the_plan():
    """The warm start one tick later, on stages of differing length: a plan linear in time stays
    the same line (states interpolated at the new stage times, the clock exact), and on equal
    stages the maps are the plain one-stage shift."""
    from types import SimpleNamespace

    from mpc.acados.rti import RtiSolver

    def maps(dts):
        fake = SimpleNamespace(problem=SimpleNamespace(options=SimpleNamespace(dt=dts[0])), n=len(dts),
                               grid=np.concatenate([[0.0], np.cumsum(dts)]), _shift_maps=None)
        return RtiSolver.shift_maps(fake), fake.grid

    (A, B), grid = maps(np.array(Mpc3dOptions().stage_dts))
    line = 3.0 + 2.0 * grid
    new = np.minimum(grid + 0.01, grid[-1])
    np.testing.assert_allclose(A @ line, 3.0 + 2.0 * new, atol=1e-12)
    np.testing.assert_allclose(A.sum(axis=1), 1.0)
    np.testing.assert_allclose(B.sum(axis=1), 1.0)
    # a foot moving at constant velocity keeps it; a velocity step is averaged over the new stage
    us = np.where(grid[:-1] < 0.1, 1.0, 0.0)
    moved = B @ us
    assert moved[0] == 1.0 and moved[-1] == 0.0 and np.all((moved >= 0) & (moved <= 1))
    (A, B), _ = maps(np.full(6, 0.01))
    np.testing.assert_allclose(A, np.eye(7, k=1) + np.diag([0.0] * 6 + [1.0]), atol=1e-12)
    np.testing.assert_allclose(B, np.eye(6, k=1) + np.diag([0.0] * 5 + [1.0]), atol=1e-12)


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
        assert z[:, i].max() > 0.005, f"foot {i} never lifts"  # about 1 cm: the lift rule sets it
    diag = [(i, j) for i in range(4) for j in range(i + 1, 4)
            if np.all(ocp.srb.feet_nominal[i, :2] * ocp.srb.feet_nominal[j, :2] < 0)]
    for i, j in diag:  # diagonal feet carry load at the same stages
        assert np.mean(loaded[:, i] == loaded[:, j]) >= 0.85
    assert np.mean(xs[:, 6]) == pytest.approx(0.5, abs=0.01)
    np.testing.assert_allclose(gait.x[-1], gait.x[0], atol=1e-6)  # periodic in the features
    # a loaded foot is on the (rigid) ground at the stage's end
    gap = xs[1:, [14, 17, 20, 23]]
    assert np.max(np.abs(gap[loaded])) < 1e-3


def test_rti_iterates_reach_ipopt_cost(ocp, trot, tmp_path):
    """At the MPC's own horizon (0.4 s in 15 stages of differing length), the real-time solver's
    iterations, repeated at one state until they stop moving, reach a solution of the OCP that
    IPOPT (same problem, each stage stepped and its cost scaled by its own length, exact
    Hessian) certifies: started there, IPOPT stays, at the same cost (relative 1e-3). The
    complementarity makes the OCP non-convex: IPOPT started elsewhere may find another local
    minimum (docs/MPC.md)."""
    gait, xs_g, us_g = trot
    opts = Mpc3dOptions()
    problem = CentroidalOcp(ocp.srb, opts.ocp, stage_dts=opts.stage_dts)
    dts = problem.stage_lengths()
    grid = np.concatenate([[0.0], np.cumsum(dts)])
    ref = FourierReference.fit(gait)
    w_x, w_u = feature_weights(problem)
    weights = CostWeights(w_x=w_x, w_u=w_u, terminal_factor=opts.terminal_factor, z_l1=1000.0, z_l2=1e4)
    rti = RtiSolver(problem, ref, weights, RtiOptions(qp_iter_max=100, qp_tol=1e-10, hpipm_mode="ROBUST"),
                    cache_dir=tmp_path, verbose=False)
    k0 = 5
    tau0 = k0 * problem.options.dt
    taus = tau0 + grid
    period = len(us_g) * problem.options.dt
    t_g = problem.options.dt * np.arange(len(xs_g))
    # the gait's states at the stage times (one period on: moved by the period's displacement)
    xs = np.column_stack([np.interp(taus % period, t_g, xs_g[:, j]) for j in range(problem.nx)] + [taus])
    xs[:, 0] += 0.5 * (taus // period) * period
    xs[:, 12::3] += 0.5 * (taus // period)[:, None] * period
    x0 = xs_g[k0] + np.concatenate([[0, 0, 0.01, 0.02, -0.02, 0, 0.05, 0.05, 0, 0.1, 0, 0], np.zeros(12)])
    xs[0, :-1] = x0
    us = us_g[np.minimum(((tau0 + grid[:-1]) / problem.options.dt).astype(int) % len(us_g), len(us_g) - 1)]
    rti.io.set(xs, us)
    x0c = np.append(x0, tau0)
    costs = []
    for _ in range(200):
        rti.prepare()
        status = rti.feedback(x0c)
        assert status in (0, 2), f"acados status {status}"
        costs.append(rti.solver.get_cost())
    xs_r, us_r = rti.trajectory()
    cost = TrackingCost(w=np.concatenate([w_x, w_u]), w_e=weights.terminal_factor * w_x,
                        yref=np.column_stack([ref.x_at(taus[:-1]), ref.u_at(taus[:-1])]), xref_e=ref.x_at(taus[-1])[0],
                        z_l1=weights.z_l1, z_l2=weights.z_l2, stage_scale=dts)
    sol = solve_ipopt(problem, cost, x0=x0, x_init=xs_r[:, :-1], u_init=us_r)
    assert sol.success, sol.status
    assert abs(costs[-1] - costs[-2]) < 1e-9 * max(1.0, abs(costs[-1])), "the RTI iterations did not settle"
    assert costs[-1] == pytest.approx(sol.cost, rel=1e-3)
    assert np.max(np.abs(sol.x - xs_r[:, :-1])) < 1e-4
    assert np.max(ocp.normal_forces(sol.u)) > 0.3 * ocp.weight  # the instance has loaded feet


@pytest.mark.parametrize("options, match", [
    ({"lift_price": 0}, r"lift_price must be a finite number > 0"),
    ({"first_stage_price": -1}, r"first_stage_price must be"),
    ({"kp": 0}, r"kp must be a finite number > 0"),
    ({"z_l1": -1}, r"z_l1 must be"),
    ({"sigma": "x"}, r"sigma must be a finite number"),
    ({"hpipm_mode": "FOO"}, r"hpipm_mode must be one of"),
    ({"cond_n": -3}, r"cond_n .* must be none or an integer in \[1, 15\]"),
    ({"qp_iter_max": True}, r"qp_iter_max must be an integer"),
    ({"stand": "yes"}, r"stand must be true or false"),
    ({"stage_dts": (0.02, 0.01, 0.05)}, r"no stage may be shorter than the first"),
    ({"stage_dts": (0.01,) * 1000}, r"stage_dts must be 3 to 100 .*\.\.\.$"),
    ({"stage_dts": (0.01, 0.025, 0.05)}, r"the first three stages must be the control period"),
    ({"dt": 0.01}, r"mpc option 'dt' \(from the scenario\) is replaced by stage_dts"),
])
def test_every_option_is_checked_with_its_name(go1, options, match):
    """Each bad value fails when the options are resolved (before a solver or process exists), in
    one line naming the field."""
    from mpc.centroidal.controller import mpc3d_options

    with pytest.raises(ValueError, match=match):
        mpc3d_options(go1, **options)


def test_a_bad_robot_default_names_the_robot(go1):
    from dataclasses import replace

    from mpc.centroidal.controller import mpc3d_options

    bad = replace(go1, controller_defaults={"mpc": {"kp": -5.0}})
    with pytest.raises(ValueError, match=r"kp must be .* \(from go1's controller_defaults\['mpc'\]\)"):
        mpc3d_options(bad)
    assert mpc3d_options(bad, kp=50.0).kp == 50.0  # the scenario's value replaces it
    old = replace(go1, controller_defaults={"mpc": {"n_stages": 20}})
    with pytest.raises(ValueError, match=r"'n_stages' \(from go1's controller_defaults\['mpc'\]\) is replaced"):
        mpc3d_options(old)
    # a robot default judged with the scenario's other fields, not the defaults': valid together
    long = replace(go1, controller_defaults={"mpc": {"cond_n": 18}})
    assert mpc3d_options(long, stage_dts=(0.01,) * 20).cond_n == 18


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
        state = plant.step(JointPlan.of(cmd).setpoint(0), 0.01)  # the tick's setpoint (the plant server's on-time tick)
    plan_x = ctrl._plan_x.copy()
    real = ctrl.rti.feedback
    monkeypatch.setattr(ctrl.rti, "feedback", lambda x0: 4)
    cmd, _ = ctrl.compute(state.t, state.q, state.v, state.contact)
    info = ctrl.tick_info()
    assert info["status"] == 4 and ctrl.solver_ok is False
    assert np.all(np.isfinite(cmd.tau_ff)) and np.all(np.isfinite(cmd.q_des))
    np.testing.assert_array_equal(ctrl._plan_x, plan_x)  # the previous plan is kept
    ctrl.prepare()
    state = plant.step(JointPlan.of(cmd).setpoint(0), 0.01)
    monkeypatch.setattr(ctrl.rti, "feedback", real)
    cmd, _ = ctrl.compute(state.t, state.q, state.v, state.contact)
    assert ctrl.tick_info()["status"] in (0, 2) and ctrl.solver_ok


def test_episode_row_reports_heading_velocities(trot):
    """A sweep episode of go1 reports its heading-frame speeds and yaw rate with the error."""
    from launch.episode import run_episode
    from launch.scenario import load_scenario

    row = run_episode(load_scenario("go1").with_overrides(duration_s=1.0).validate())
    assert row["error"] == "" and row["success"]
    assert row["vy_mps"] is not None and abs(row["vy_mps"]) < 0.05
    assert row["yaw_rate_error_radps"] == pytest.approx(row["yaw_rate_radps"])  # target 0


def test_settings_are_derived_from_the_robot(go1):
    """kp, kd, cost weights and contact limits come from the model (mpc.centroidal.tuning): go1
    gets the gains it was tuned with (60 N m/rad, 2 N m s/rad); a robot's own
    controller_defaults['mpc'] and the scenario override them, in that order; unknown keys in
    either are refused naming where they came from."""
    from dataclasses import replace

    from mpc.centroidal.controller import mpc3d_options
    from mpc.centroidal.ocp import ContactScales
    from mpc.centroidal.tuning import derived_gains, joint_damping

    gains = derived_gains(go1)
    assert gains["kp"] == pytest.approx(60.0, rel=0.02) and gains["kd"] == pytest.approx(2.0, rel=0.02)
    kd = joint_damping(go1, gains["kp"])  # each joint by its own inertia: the knee (light) least
    assert kd.shape == (12,) and np.all(kd[2::3] < 0.7 * kd[1::3]) and np.mean(kd) == pytest.approx(2.0, rel=0.1)
    srb = SingleRigidBody.from_model(go1)
    scales = ContactScales.of(srb)
    np.testing.assert_allclose(scales.foot_speed_max, [2.5, 2.5, 1.5], rtol=0.01)
    assert scales.lift_speed == pytest.approx(100.0, rel=0.01)
    heavy = replace(srb, mass=4 * srb.mass, height=2 * srb.height)
    assert ContactScales.of(heavy).lift_speed == pytest.approx(100.0 / np.sqrt(2), rel=0.01)
    assert mpc3d_options(go1).kp is None  # derived by the controller
    tuned = replace(go1, controller_defaults={**go1.controller_defaults, "mpc": {"kp": 80.0, "z_l1": 2e3}})
    opts = mpc3d_options(tuned, vx=0.3, z_l1=4e3)
    assert (opts.kp, opts.z_l1, opts.vx) == (80.0, 4e3, 0.3)
    bad = replace(go1, controller_defaults={"mpc": {"kpp": 80.0}})
    with pytest.raises(ValueError, match=r"kpp.*controller_defaults"):
        mpc3d_options(bad)


def test_plan_check_corrects_the_stage_it_sends():
    """A loaded foot in the air loses its force; a loaded foot on the ground that the plan would
    lift or slide stays where it is and pushes; unloaded feet and a sound stage pass untouched."""
    from mpc.centroidal.controller import PlanCheck
    from mpc.centroidal.ocp import SrbLayout

    check = PlanCheck(loaded=0.05, gap_max=0.005, slip_max=0.05, nc=4)
    lay = SrbLayout(4)
    #         gaps at the stage's end  slip speeds          fz (twice)
    pairs = [0.01, 0.02, 0.0, 0.03] + [0.0, 0.0, 0.4, 1.0] + [0.5, 0.3, 0.4, 0.01] * 2
    heights = [0.0, 0.015, 0.0, 0.03]
    assert check.failures(pairs, heights) == [(0, "lift"), (1, "air"), (2, "slip")]
    u = np.ones(lay.nu)
    x_now = np.arange(lay.nx, dtype=float)
    x1, x2 = np.full(lay.nx, -1.0), np.full(lay.nx, -2.0)
    check.correct(u, check.failures(pairs, heights), lay, x_now, (x1, x2))
    assert np.all(u[lay.edges(1)] == 0) and np.all(u[lay.foot_velocity(1)] == 1)  # swings on, no force
    assert np.all(x1[lay.foot(1)] == -1) and np.all(x2[lay.foot(1)] == -2)  # ... to its planned point
    for i in (0, 2):  # held still where it is (the joints are sent there), still pushing
        assert np.all(u[lay.foot_velocity(i)] == 0) and np.all(u[lay.edges(i)] == 1)
        assert np.all(x1[lay.foot(i)] == x_now[lay.foot(i)]) and np.all(x2[lay.foot(i)] == x_now[lay.foot(i)])
    assert np.all(u[lay.edges(3)] == 1) and np.all(u[lay.foot_velocity(3)] == 1)
    assert np.all(x1[lay.foot(3)] == -1) and np.all(x1[:12] == -1)  # the body and sound feet as planned
    assert check.failures([0.0] * 4 + [0.01] * 4 + [0.25] * 8, [0.0] * 4) == []


def test_the_presolved_plan_is_moved_to_where_the_robot_starts(go1, trot):
    """The plan presolved at the origin, heading 0, is moved and turned to the robot's place and
    heading at the first tick (the OCP is invariant under both): its stage 0 is the robot."""
    ctrl = make_mpc3d(go1, vx=0.5)
    q = np.array(go1.q0)
    q[0:2] = [1.5, -2.0]
    q[3:7] = [0, 0, np.sin(0.5), np.cos(0.5)]  # yaw 1.0
    x = ctrl._measured(q, np.zeros(go1.nv))
    ctrl._move_plan_to(x)
    xs, _ = ctrl.rti.io.get()
    np.testing.assert_allclose(xs[0, :2], x[:2], atol=1e-9)
    assert xs[0, 5] == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_allclose(xs[0, 12:24].reshape(4, 3)[:, :2], x[12:24].reshape(4, 3)[:, :2], atol=0.01)


def test_measured_yaw_is_unwrapped(go1, trot):
    """The measurement's yaw (atan2, in (-pi, pi]) is moved by whole turns to the one nearest the
    last tick's: a robot turning through pi is read at 3.1, then 3.18, not -3.1."""
    ctrl = make_mpc3d(go1, vx=0.5)
    q, v = np.array(go1.q0), np.zeros(go1.nv)
    for yaw, expected in ((3.1, 3.1), (-3.1, 2 * np.pi - 3.1), (-2.9, 2 * np.pi - 2.9), (3.0, 3.0)):
        q[3:7] = [0, 0, np.sin(yaw / 2), np.cos(yaw / 2)]
        assert ctrl._measured(q, v)[5] == pytest.approx(expected, abs=1e-9)


def test_turning_through_pi_keeps_the_plan_sound(go1):
    """go1 turning (0.3 m/s, 0.5 rad/s) from yaw 2.9 crosses pi after about 0.7 s: every executed
    stage stays complementary (before the yaw was unwrapped, the crossing tick's product leapt to
    3.9), the plan check passes, and the robot keeps turning."""
    from mpc.closed_loop import run_in_process
    from sim.registry import make_plant

    ctrl = make_mpc3d(go1, vx=0.3, yaw_rate=0.5)
    q0 = np.array(go1.q0)
    q0[3:7] = [0, 0, np.sin(1.45), np.cos(1.45)]
    log = run_in_process(make_plant("ess", go1, plant_rate_hz=1000.0), ctrl, duration_s=1.5, q0=q0)
    assert log["violation"] == ""
    q = log["q"]
    yaw = np.unwrap(2 * np.arctan2(q[:, 5], q[:, 6]))
    assert yaw[-1] > np.pi + 0.1, "the robot did not turn through pi"
    comp = np.array([r["complementarity"] for r in log["rows"]])
    assert comp.max() < 0.05
    assert sum(r["plan_inconsistent"] for r in log["rows"]) <= 1


def test_a_loaded_foot_may_not_slide(ocp):
    """The plan's ground is rigid: a loaded foot on it has no gap, so the lift rule lets it move
    sideways at no more than lift_speed x sigma / fz (about 1 mm/s). With the gap counted as
    height + compliance x force, go1's loaded foot (0.5 weights) could slide at 0.16 m/s for free,
    a softer robot faster."""
    x, u = ocp.standing_state(), ocp.standing_control()
    lay, nc = ocp.layout, ocp.nc
    u[lay.edges(0)] = 0.5 / 4  # foot 0 carries half the weight, on the ground
    for v in (0.01, 0.05):
        u[lay.foot_velocity(0)] = [v, 0.0, 0.0]
        h = np.asarray(ocp.residuals(x, u)).ravel()
        slide = h[nc + 3 * nc: nc + 3 * nc + 4 * nc]  # the lift rule's rows, (+) then (-)
        lb, ub = ocp.h_lb[nc + 3 * nc: nc + 7 * nc], ocp.h_ub[nc + 3 * nc: nc + 7 * nc]
        assert np.any((slide < lb - 1e-9) | (slide > ub + 1e-9)), f"a loaded foot slid at {v} m/s unpenalised"
