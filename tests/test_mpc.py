"""The contact-implicit MPC: acados against the IPOPT oracle, warm start, deadline, closed loop."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from mpc.acados.rti import RtiOptions, RtiSolver
from mpc.ipopt_ocp import TrackingCost, solve_ipopt
from mpc.problem import OcpOptions
from mpc.reference import FourierReference, TrajectoryReference
from mpc.wholebody.controller import ContactMpc, MpcOptions, default_weights, make_mpc, mpc_options
from mpc.wholebody.gaits import periodic_gait
from mpc.wholebody.ocp import ContactOcp
from mpc.wholebody.tasks import GaitTask
from robots import get_robot


@pytest.fixture(scope="module")
def hopper():
    return get_robot("hopper")


# the hopper's gait task as its scenarios give it (its guess pose is its data); the solver
# settings stay MpcOptions' own (BALANCE)
HOPPER = {"apex_height": 0.45, "guess_pose": get_robot("hopper").controller_defaults["mpc"]["guess_pose"]}


@pytest.fixture(scope="module")
def hopper_gait(hopper):
    opts = mpc_options(hopper)
    return periodic_gait(hopper, opts.task, opts.ocp, verbose=False)


def test_gait_is_periodic_hops_and_respects_task(hopper, hopper_gait):
    g = hopper_gait
    task = mpc_options(hopper).task
    assert g.x[0, 1] == pytest.approx(task.apex_height, abs=1e-6)  # starts at the apex
    np.testing.assert_allclose(g.x[-1, 1:], g.x[0, 1:], atol=1e-6)  # periodic
    assert g.x[-1, 0] - g.x[0, 0] == pytest.approx(task.vx * task.period, abs=1e-6)
    ocp = ContactOcp(hopper, OcpOptions(n_stages=g.u.shape[0]))
    fn = ocp.normal_forces(g.u)[:, 0]
    loaded = fn > 0.2 * ocp.weight
    assert 0.1 < loaded.mean() < 0.9, "the gait has both flight and stance (found by the optimizer)"
    assert np.sum(loaded[1:] & ~loaded[:-1]) == 1, "exactly one touchdown per period"
    # the smoothed complementarity holds: a * b == sigma for the gap pair at every stage
    a, b = (np.asarray(z).ravel()[0] for z in ocp.pairs(g.x[5], g.u[5]))
    assert a * b == pytest.approx(ocp.options.sigma, rel=1e-3)


def test_fourier_reference_reproduces_positions(hopper_gait):
    ref = FourierReference.fit(hopper_gait)
    n = hopper_gait.u.shape[0]
    t = hopper_gait.dt * np.arange(n)
    err = np.abs(ref.x_at(t) - hopper_gait.x[:n])
    assert err[:, :4].max() < 0.05  # positions (m, rad); velocities jump at impacts
    xs, _ = hopper_gait.sample(t + hopper_gait.period)
    np.testing.assert_allclose(xs[:, 0] - hopper_gait.x[:n, 0], hopper_gait.shift_x)  # repeats, advancing


def test_acados_converged_matches_ipopt(hopper, hopper_gait, tmp_path):
    """Iterating acados (full SQP) on one fixed problem reaches IPOPT's solution of the same OCP."""
    opts = OcpOptions(n_stages=10)
    problem = ContactOcp(hopper, opts)
    ref = FourierReference.fit(hopper_gait)
    weights = default_weights(problem)
    rti = RtiSolver(problem, ref, weights, RtiOptions(nlp_solver="SQP", sqp_iter_max=300, qp_tol=1e-10, tol=1e-10,
                                                      hpipm_mode="ROBUST", cond_n=None),
                    cache_dir=tmp_path, verbose=False)
    tau0 = 0.05  # descending, touchdown inside the horizon
    taus = tau0 + opts.dt * np.arange(opts.n_stages + 1)
    x0 = ref.x_at(tau0)[0] + np.array([0, 0.01, 0.05, -0.05, 0.1, -0.1, 0, 0])
    rti.initialize(x0, tau0)
    status = rti.solve_to_convergence(np.append(x0, tau0))
    assert status == 0, f"acados SQP status {status}"
    xs, us = rti.trajectory()
    cost = TrackingCost(w=np.concatenate([weights.w_x, weights.w_u]), w_e=weights.terminal_factor * weights.w_x,
                        yref=np.column_stack([ref.x_at(taus[:-1]), ref.u_at(taus[:-1])]), xref_e=ref.x_at(taus[-1])[0],
                        z_l1=weights.z_l1, z_l2=weights.z_l2, stage_scale=opts.dt)
    x_init = ref.x_at(taus)
    x_init[0] = x0
    sol = solve_ipopt(problem, cost, x0=x0, x_init=x_init, u_init=np.clip(ref.u_at(taus[:-1]), problem.u_lb, problem.u_ub))
    assert sol.success, sol.status
    assert np.max(np.abs(xs[:, :-1] - sol.x)) < 1e-4
    assert rti.solver.get_cost() == pytest.approx(sol.cost, rel=1e-6)
    assert np.sum(problem.normal_forces(sol.u) > 0.2 * problem.weight) >= 1, "the instance includes a touchdown"


def test_warm_start_shift_moves_every_stage(hopper, tmp_path):
    ctrl = ContactMpc(hopper, MpcOptions(**HOPPER), verbose=False)
    x = np.concatenate([hopper.q0 + np.array([0, 0.03, 0.2, -0.4]), np.zeros(4)])
    ctrl.compute(0.0, x[:4], x[4:], np.zeros(1, bool))
    xs, us = ctrl.rti.trajectory()
    np.testing.assert_array_equal(xs, ctrl.rti.iterate()[0])  # the feedback read the iterate
    for shift in (lambda: ctrl.rti.shift(xs, us), ctrl.rti.shift):  # a given iterate, then the solver's own
        ctrl.rti.io.set(xs, us)
        shift()
        xs2, us2 = ctrl.rti.trajectory()
        np.testing.assert_array_equal(xs2[:-1], xs[1:])
        np.testing.assert_array_equal(us2[:-1], us[1:])
        np.testing.assert_array_equal(us2[-1], us[-1])
        np.testing.assert_array_equal(xs2[-1, :-1], xs[-1, :-1])
        assert xs2[-1, -1] == pytest.approx(xs[-1, -1] + ctrl.options.dt)  # the clock advances


def test_solver_failure_or_overrun_sends_previous_plan_and_flags_the_failure(hopper, monkeypatch):
    ctrl = ContactMpc(hopper, MpcOptions(**HOPPER), verbose=False)
    q, v = hopper.q0 + np.array([0, 0.03, 0.2, -0.4]), np.zeros(4)
    ctrl.compute(0.0, q, v, np.zeros(1, bool))
    ctrl.prepare()
    plan_x, plan_u = ctrl._plan_x.copy(), ctrl._plan_u.copy()
    monkeypatch.setattr(ctrl.rti, "feedback", lambda x0: 4)  # QP failure (acados status 4)
    cmd, _ = ctrl.compute(0.01, q, v, np.zeros(1, bool))
    info = ctrl.tick_info()
    assert ctrl.solver_ok is False and info["status"] == 4  # the client flags it: the plant counts a `solver` miss
    np.testing.assert_allclose(cmd.tau_ff[0], plan_u[1, :2])  # the previous plan's next stages
    np.testing.assert_allclose(cmd.q_des[0], plan_x[2, 2:4])
    np.testing.assert_allclose(cmd.q_des[1], plan_x[3, 2:4])
    np.testing.assert_allclose(cmd.t_offset[:3], [0.0, 0.01, 0.02])
    ctrl.prepare()  # after a failed QP the next guess restarts from the reference, not from the failed iterate
    xs, us = ctrl.rti.trajectory()
    np.testing.assert_allclose(xs[0, :-1], np.concatenate([q, v]))
    tau = info["gait_clock_s"] + ctrl.options.dt
    np.testing.assert_allclose(xs[1:, :-1], ctrl.reference.x_at(tau + ctrl.options.dt * np.arange(1, len(xs))), atol=1e-12)
    assert xs[0, -1] == pytest.approx(tau) and np.isnan(ctrl.tick_info()["touchdown_plan_s"])
    monkeypatch.undo()
    slow = ContactMpc(hopper, MpcOptions(**HOPPER, inject_delay_s=0.02, deadline_s=0.009), verbose=False)
    cmd, phases = slow.compute(0.0, q, v, np.zeros(1, bool))
    assert slow.tick_info()["slack_s"] < 0 and phases["feedback"] > 0.009 and slow.solver_ok
    assert np.all(np.isfinite(cmd.tau_ff))


@pytest.mark.parametrize("kwargs, match", [
    ({"vx": -5.0}, "vx"),
    ({"n_stages": 0}, "n_stages"),
    ({"apex_height": 2.0}, "apex_height"),
    ({"kp": -1.0}, "kp"),
    ({"horizon": 3}, "unknown mpc options"),
])
def test_bad_task_parameters_are_named(hopper, kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_mpc(hopper, **kwargs)


def test_unknown_robot_is_refused():
    with pytest.raises(ValueError, match="point_mass"):
        GaitTask(vx=0.1).validate(get_robot("point_mass"))
    with pytest.raises(ValueError, match="unknown robot"):
        get_robot("no_such_robot")


def test_closed_loop_hopper_hops_on_the_ess_plant(hopper):
    from mpc.closed_loop import run_in_process
    from sim.registry import make_plant

    ctrl = make_mpc(hopper, vx=0.3, apex_height=0.45)
    plant = make_plant("ess", hopper, plant_rate_hz=1000.0)
    q0 = hopper.q0.copy()
    q0[1] += 0.03
    log = run_in_process(plant, ctrl, duration_s=3.0, q0=q0)
    z, x, contact = log["q"][:, 1], log["q"][:, 0], log["contact"][:, 0]
    assert z.min() > 0.25, "no fall"
    touchdowns = int(np.sum(contact[1:] & ~contact[:-1]))
    assert touchdowns >= 5, f"hopping: {touchdowns} touchdowns in 3 s"
    airborne = ~contact
    late = log["t"] > 1.0
    apex = [z[i] for i in range(1, len(z) - 1) if late[i] and airborne[i] and z[i] >= z[i - 1] and z[i] > z[i + 1]]
    assert np.mean(apex) == pytest.approx(0.45, rel=0.1)
    vx = (x[-1] - x[len(x) // 3]) / (log["t"][-1] - log["t"][len(x) // 3])
    assert vx == pytest.approx(0.3, rel=0.15)
    assert all(r["status"] in (0, 2) for r in log["rows"])
    # undisturbed, the planned touchdowns keep the reference gait's timing (to a stage or two);
    # a wrong phase bookkeeping in _touchdown_vs_reference would show here as a large offset
    dev = np.array([r["touchdown_vs_ref_s"] for r in log["rows"] if r["t"] > 1.0])
    assert np.isfinite(dev).sum() > 100
    assert np.nanmedian(np.abs(dev)) <= 0.02


def test_upward_push_in_flight_delays_the_planned_touchdown(hopper):
    """Contacts are planned, not scheduled: an upward push near the apex lengthens the flight,
    the MPC re-plans its touchdown later than the reference gait's within a few ticks, and the
    plant touches down when the plan says, not when the reference does."""
    from mpc.closed_loop import run_in_process
    from sim.registry import make_plant

    ctrl = make_mpc(hopper)
    plant = make_plant("ess", hopper, plant_rate_hz=1000.0)
    q0 = hopper.q0.copy()
    q0[1] += 0.03
    t_push = 1.22  # in flight, near the apex of the hop that lands at ~1.38 s
    log = run_in_process(plant, ctrl, duration_s=1.6, q0=q0, push_ns=1.5, push_at_s=t_push, push_axis="z")
    rows = log["rows"]
    t = np.array([r["t"] for r in rows])
    plan = np.array([r["touchdown_plan_s"] for r in rows])
    dev = np.array([r["touchdown_vs_ref_s"] for r in rows])
    before = (t > 1.0) & (t < t_push)
    assert np.nanmax(np.abs(dev[before])) <= 0.011, "undisturbed: the plan keeps the reference's timing"
    after = np.flatnonzero(t > t_push)[:3]
    assert np.nanmax(dev[after]) >= 0.02, f"re-planned touchdown vs reference: {dev[after]}"
    contact = log["contact"][:, 0]
    landings = log["t"][np.flatnonzero(contact[1:] & ~contact[:-1]) + 1]
    landing = landings[landings > t_push][0]
    planned_before, planned_after = plan[before][-1], plan[after[-1]]
    assert landing - planned_before >= 0.02, (landing, planned_before)
    assert abs(landing - planned_after) <= 0.015, (landing, planned_after)
    assert log["q"][:, 1].min() > 0.25


def test_run_hopper_over_the_bridge_prints_the_issue_json(tmp_path):
    """`python -m launch run hopper --json` path: MPC and plant as two processes; every field of its
    summary.json is documented in docs/RUNS.md."""
    from launch.run import run
    from launch.scenario import load_scenario

    summary = run(load_scenario("hopper").with_overrides(duration_s=1.0, push_ns=1.0), runs_dir=tmp_path, progress=False)
    for key in ("ticks", "rate_hz", "deadline_ms", "solve_ms", "misses", "fell", "apex_height_m", "vx_mps",
                "complementarity_max", "plant"):
        assert key in summary, key
    assert summary["ticks"] == 100 and summary["plant"] == "ess" and summary["exit_codes"] == [0, 0]
    assert set(summary["solve_ms"]) == {"p50", "p90", "p99", "max"}
    assert summary["apex_height_m"]["target"] == 0.45 and summary["vx_mps"]["target"] == 0.3
    assert 0 < summary["complementarity_max"] < 1.0
    assert not summary["fell"]
    assert "vy_mps" not in summary and "yaw_rate_radps" not in summary  # a planar robot's run
    documented = (Path(__file__).resolve().parents[1] / "docs/RUNS.md").read_text()
    undocumented = [key for key in summary if f"`{key}`" not in documented]
    assert not undocumented, f"summary.json fields missing from docs/RUNS.md: {undocumented}"
    replanned = summary["touchdown_replanned_s"]
    assert "after_push" in replanned and set(replanned["vs_reference_s"]) == {"before_push", "after_push"}
    # the plan of every tick, for the animation's ghost: ticks x stages x nq, starting at the state

    folder = Path(summary["run_dir"])
    with np.load(folder / "controller_horizon.npz") as data, np.load(folder / "trajectory.npz") as traj:
        plans = data["q"]
        assert plans.shape[0] == 100 and plans.shape[2] == 4 and plans.shape[1] > 10
        # stage 0 is the state the tick's STATE carried: the trajectory's row of the tick before
        np.testing.assert_allclose(plans[50, 0], traj["q"][49], atol=1e-9)


def test_touchdown_planning_spread():
    from launch.runfolder import _planning_spread

    t = np.arange(0, 1, 0.01)
    td = np.where(t < 0.5, 0.52, np.nan)
    td[(t > 0.3) & (t < 0.5)] = 0.55  # re-planned later while approaching it
    out = _planning_spread(t, td, 0.2)
    assert out["spread_s"] == pytest.approx(0.03) and out["first_plan_s"] == pytest.approx(0.52)
    assert _planning_spread(t, np.full_like(t, np.nan), 0.0) is None


def test_trajectory_reference_symbolic_matches_numeric_and_holds_ends():
    import casadi as ca

    t = np.array([0.0, 0.1, 0.1, 0.3])  # a repeated time (frozen clock at an impact) keeps the last sample
    xs = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 0.0], [4.0, 0.0]])
    ref = TrajectoryReference.from_samples(t, xs, np.array([0.0, 0.2, 0.3]), np.array([[5.0], [7.0]]))
    tau = ca.SX.sym("tau")
    fx = ca.Function("fx", [tau], [ref.x(tau), ref.u(tau)])
    for tt in (-0.1, 0.05, 0.1, 0.2, 0.25, 0.5):
        x_sym, u_sym = (np.asarray(a).ravel() for a in fx(tt))
        np.testing.assert_allclose(x_sym, ref.x_at(tt)[0])
        np.testing.assert_allclose(u_sym, ref.u_at(tt)[0])
    np.testing.assert_allclose(ref.x_at(0.1)[0], [2.0, 0.0])  # post-impact sample
    np.testing.assert_allclose(ref.x_at(1.0)[0], [4.0, 0.0])  # held after the end
    assert ref.u_at(0.25)[0, 0] == 7.0 and ref.u_at(0.1)[0, 0] == 5.0
    with pytest.raises(ValueError, match="shape"):
        TrajectoryReference.from_samples(t, xs[:2], np.array([0.0, 0.3]), np.array([[1.0]]))


def _standing_plan(hopper, path):
    """A 1 s plan file of the hopper standing at q0 (no torque), as `launch plan` writes them."""
    t = np.linspace(0.0, 1.0, 11)
    np.savez(path, t=t, q=np.tile(hopper.q0, (11, 1)), v=np.zeros((11, 4)), t_grid=np.array([0.0, 0.5, 1.0]),
             u=np.zeros((2, 2)))
    return str(path)


def test_plans_are_resolved_on_the_mpc_model_with_their_contact_forces(hopper, tmp_path):
    """The plan file has no contact forces; its re-solve on the MPC's model carries the stance
    load (one weight standing) and stays on the plan; a second call reads the cache."""
    from mpc.wholebody.plan_transcription import plan_samples, transcribe_plan

    path = _standing_plan(hopper, tmp_path / "stand.npz")
    problem = ContactOcp(hopper, OcpOptions())
    fn = problem.n_tau  # the first contact variable: the normal force, in weights
    assert np.all(plan_samples(problem, path).us[:, fn] == 0.0)
    ref = transcribe_plan(problem, path, cache=tmp_path / "cache", verbose=False)
    assert ref.t[-1] == pytest.approx(1.1)  # the plan's second, plus 10 stages held
    # the foot settles into the compliant ground (6 mm) and the load rings down to one weight
    assert np.mean(ref.us[20:100, fn]) == pytest.approx(1.0, abs=0.02)
    np.testing.assert_allclose(ref.us[70:100, fn], 1.0, atol=0.01)
    assert np.abs(ref.xs[:, :4] - hopper.q0).max() < 0.01  # on the plan, to the stance sinkage
    again = transcribe_plan(problem, path, cache=tmp_path / "cache", verbose=False)
    assert len(list((tmp_path / "cache").glob("plan-*.npz"))) == 1
    np.testing.assert_array_equal(again.us, ref.us)
    with pytest.raises(ValueError, match="hole_margin"):
        transcribe_plan(problem, path, hole_margin=-0.1)


def test_plan_tracking_starts_from_a_presolved_iterate(hopper, tmp_path, monkeypatch):
    """From a reference without contact forces one real-time iteration plans the standing hopper
    sinking; the iterations at the plan's start before the first tick plan it standing. Also:
    the leg is kept in the planner's joint ranges (the hopper-holes scenario's)."""
    import mpc.wholebody.controller as mc
    import mpc.wholebody.plan_transcription as pt
    from launch.scenario import load_scenario

    monkeypatch.setattr(pt, "transcribe_plan", lambda problem, path, **kw: pt.plan_samples(problem, path))
    path = _standing_plan(hopper, tmp_path / "stand.npz")
    ranges = load_scenario("hopper-holes").controller_options["plan_joint_ranges"]
    heights = {}
    for iterations in (1, mc.PLAN_PRESOLVE_ITERATIONS):
        monkeypatch.setattr(mc, "PLAN_PRESOLVE_ITERATIONS", iterations)
        ctrl = make_mpc(hopper, plan=path, plan_joint_ranges=ranges)
        ctrl.compute(0.0, hopper.q0.copy(), np.zeros(4), np.ones(1, bool))
        xs, _ = ctrl.rti.iterate()
        heights[iterations] = xs[:, 1]
    assert heights[1].min() < hopper.q0[1] - 0.05  # one iteration: the plan sinks by > 5 cm
    np.testing.assert_allclose(heights[mc.PLAN_PRESOLVE_ITERATIONS], hopper.q0[1], atol=0.01)
    idx, lo, hi = ctrl.task.joint_limits(hopper)
    assert [hopper.q_names[i] for i in idx] == ["hip", "knee"]
    np.testing.assert_allclose(hi, [3 * np.pi / 8, np.pi / 2]) and np.testing.assert_allclose(lo, -hi)


def test_missing_plan_file_is_a_clear_error(hopper, tmp_path):
    with pytest.raises(ValueError, match=r"nope.npz' does not exist; make a plan with `python -m launch plan"):
        make_mpc(hopper, plan=str(tmp_path / "nope.npz"))


@pytest.mark.parametrize("name", ["hopper", "quadruped"])
def test_block_solve_equals_dense_solve(name):
    import casadi as ca

    from robots.mass_solve import block_solve, mass_matrix_pattern

    m = get_robot(name)
    r = ca.SX.sym("r", m.nv)
    f = ca.Function("f", [m.q, r], [ca.solve(m.mass_matrix, r), block_solve(m.mass_matrix, r, mass_matrix_pattern(m))])
    rng = np.random.default_rng(7)
    for _ in range(10):
        dense, block = (np.asarray(a).ravel() for a in f(rng.uniform(-1, 1, m.nq), rng.normal(size=m.nv)))
        np.testing.assert_allclose(block, dense, rtol=1e-9, atol=1e-9)


def test_feet_in_the_air_carry_no_planned_load(tmp_path):
    """The L1 slack penalty is exact enough that the QP does not buy "ghost" contact forces:
    the quadruped held 1 cm above the ground against a reference that loads all four feet plans
    no normal force on a foot that is still in the air after the first stage. With the old
    penalty (z_l1 = 100) the front feet carried 0.095 weights there (and in closed loop on the
    ESS plant such forces preceded every fall, docs/MPC.md); with its default (1000), 0.012."""
    model = get_robot("quadruped")
    problem = ContactOcp(model, OcpOptions(n_stages=20))
    x_stand = np.concatenate([model.q0, np.zeros(model.nv)])
    fn = problem.fn_columns
    u_stand = np.zeros(problem.nu)
    u_stand[fn] = 1.0 / model.nc
    reference = TrajectoryReference.from_samples([0.0, 10.0], np.vstack([x_stand, x_stand]), [0.0, 10.0],
                                                 u_stand[None, :])
    weights = replace(default_weights(problem), z_l1=model.controller_defaults["mpc"]["z_l1"])
    rti = RtiSolver(problem, reference, weights, RtiOptions(hpipm_mode="BALANCE", qp_tol=1e-3),
                    cache_dir=tmp_path, verbose=False)
    x0 = x_stand.copy()
    x0[model.q_names.index("z")] += 0.01
    rti.initialize(x0, 0.0)
    for _ in range(3):
        rti.prepare()
        assert rti.feedback(np.append(x0, 0.0)) == 0
    xs, us = rti.trajectory()
    gap_next = np.asarray(problem.pairs(xs[0, :-1], us[0])[0]).ravel()[: model.nc]
    airborne = gap_next > 5e-3
    assert airborne.any()
    assert np.all(us[0, fn][airborne] < 0.03), (us[0, fn], gap_next)


def test_solver_creation_prints_nothing_on_stdout(hopper, capfd):
    """acados_template's chatter on loading a solver goes to stderr: stdout stays clean for --json."""
    capfd.readouterr()
    ContactMpc(hopper, MpcOptions(apex_height=0.45), verbose=False)
    out, _ = capfd.readouterr()
    assert out == ""
