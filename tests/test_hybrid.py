"""The event-driven hybrid reference simulator against physics nobody here wrote.

- Housner (1963): a uniform rocking block's angular velocity ratio at each plastic impact is
  1 - (3/2) sin^2(alpha).
- Ballistics: apex heights of a bouncing mass scale by e^2; free-fall touchdown time sqrt(2H/g).
- Seed 001, Section 2.7: without the pseudo-impulse, contacts held by gravity chatter after a
  small impact elsewhere; with it they persist.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robots import get_robot, numeric
from robots.planar import Body, Joint, PlanarTree, PointContact, build_planar_robot
from sim.hybrid import DEFAULT_PSEUDO_IMPULSE, HybridOptions, HybridPlant
from sim.hybrid.lcp import lemke
from sim.protocol import JointCommand

G = 9.81


def tilted_block(model, tilt: float) -> np.ndarray:
    """q of a block resting on its left corner, right corner lifted by `tilt` rad."""
    hw, hh = 0.5 * model.params["width"], 0.5 * model.params["height"]
    return np.array([-hw + hw * math.cos(tilt) - hh * math.sin(tilt), hw * math.sin(tilt) + hh * math.cos(tilt), tilt])


def pivot_changes(plant):
    """Touchdown events where the block switched from one corner to the other."""
    return [e for e in plant.events if e.kind == "touchdown" and len(e.mode_before) == 1
            and len(e.mode_after) == 1 and e.mode_before != e.mode_after]


def test_contact_bias_acceleration_is_the_time_derivative_of_the_jacobian():
    """dJn/dt v from the generated function equals a central difference of Jn(q(t)) v along a
    motion (the test may difference; the simulator never does)."""
    model = get_robot("hopper")
    fns = numeric(model)
    rng = np.random.default_rng(11)
    for _ in range(5):
        q, v = model.q0 + rng.normal(scale=0.4, size=4), rng.normal(size=4)
        h = 1e-6
        Jn_p, Jt_p = fns.contact_jacobians(q + h * v)
        Jn_m, Jt_m = fns.contact_jacobians(q - h * v)
        an, at = fns.contact_bias_accelerations(q, v)
        np.testing.assert_allclose(an, (Jn_p - Jn_m) @ v / (2 * h), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(at, (Jt_p - Jt_m) @ v / (2 * h), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("width,height,eps", [(0.2, 0.6, 0.0), (0.2, 0.6, DEFAULT_PSEUDO_IMPULSE), (0.3, 0.5, 0.0)])
def test_rocking_block_follows_housner(width, height, eps):
    model = get_robot("block", width=width, height=height)
    alpha = math.atan2(width, height)
    expected = 1.0 - 1.5 * math.sin(alpha) ** 2
    plant = HybridPlant(model, pseudo_impulse=eps)
    plant.reset(tilted_block(model, 0.5 * alpha))
    plant.step(JointCommand.zero(0), 3.0)
    impacts = pivot_changes(plant)
    assert len(impacts) >= 8
    for e in impacts:
        ratio = e.v_plus[2] / e.v_minus[2]
        assert ratio == pytest.approx(expected, rel=1e-6), f"impact at t={e.t:.4f}: ratio {ratio}"
    # the execution ends at rest on both corners (Zeno completion without the pseudo-impulse,
    # the pseudo-impulse's truncation with it) and the run finished
    assert plant.mode == (0, 1)
    assert np.abs(plant.state().v).max() < 1e-9
    assert (plant.stats["zeno"] == 1) == (eps == 0.0)


@pytest.mark.parametrize("e", [0.5, 0.8])
def test_bouncing_mass_apex_heights_scale_by_e_squared(e):
    model = get_robot("point_mass")
    plant = HybridPlant(model, restitution=e)
    plant.reset([1.0])
    plant.step(JointCommand.zero(1), 0.5)  # first bounce at 0.4515 s, first apex e^2 m at 0.4515 + e 0.4515 s
    touchdowns = [ev.t for ev in plant.events if ev.kind == "touchdown"]
    # apex read from the simulated state itself, half-way between touchdowns
    t_apex = touchdowns[0] + e * math.sqrt(2 * 1.0 / G)
    plant.advance(t_apex)
    apex_measured = plant.state().q[0]
    plant.step(JointCommand.zero(1), 12.0)
    touchdowns = [ev.t for ev in plant.events if ev.kind == "touchdown"]
    assert touchdowns[0] == pytest.approx(math.sqrt(2.0 / G), abs=1e-12)
    apex = G * np.diff(touchdowns) ** 2 / 8.0  # ballistic flight between touchdowns
    assert apex_measured == pytest.approx(apex[0], rel=1e-9)
    assert apex[0] == pytest.approx(e**2 * 1.0, rel=1e-6)
    ratios = apex[1:6] / apex[:5]
    np.testing.assert_allclose(ratios, e**2, rtol=1e-6)
    # Zeno: the accumulation is detected, completed into contact, and the run ends at rest
    assert plant.stats["zeno"] == 1 and plant.mode == (0,)
    assert plant.state().force[0, 0] == pytest.approx(10.0 * G)
    assert len(plant.events) < 60


def test_plastic_mass_comes_to_rest_after_one_event():
    plant = HybridPlant(get_robot("point_mass"), restitution=0.0)
    plant.reset([1.0])
    state = plant.step(JointCommand.zero(1), 2.0)
    assert [ev.kind for ev in plant.events] == ["touchdown"]
    assert state.q[0] == pytest.approx(0.0, abs=1e-12) and state.v[0] == pytest.approx(0.0, abs=1e-12)
    assert state.contact[0] and state.force[0, 0] == pytest.approx(10.0 * G)
    # kinetic energy lost in the impact: m g H
    assert plant.events[0].impulse[0] == pytest.approx(10.0 * math.sqrt(2 * G), rel=1e-9)


def bench_with_tail():
    """A 5 kg bench on two sticking feet 0.6 m apart, with a 0.5 kg, 0.3 m rod hinged 0.15 m
    beyond its right foot whose frictionless tip swings down onto the ground between the feet
    (the 'small impact elsewhere': the rod's momentum pushes the hinge down, which would pivot
    the bench about its right foot and unload the left one)."""
    a, d, c, L = 0.3, 0.1, 0.45, 0.3
    tree = PlanarTree(
        name="bench_tail",
        bodies=(
            Body("bench", None, (0.0, 0.0),
                 (Joint("x", "slide_x"), Joint("z", "slide_z"), Joint("pitch", "hinge", axis_sign=-1)),
                 5.0, inertia=5.0 * (0.6**2 + 0.2**2) / 12),
            Body("tail", "bench", (c, 0.0), (Joint("swing", "hinge", axis_sign=-1),), 0.5,
                 com=(0.0, -L / 2), inertia=0.5 * L**2 / 12),
        ),
        point_contacts=(PointContact("left", "bench", (-a, -d), mu=1.0),
                        PointContact("right", "bench", (a, -d), mu=1.0),
                        PointContact("tip", "tail", (0.0, -L), mu=0.0)),
    )
    model = build_planar_robot(tree)
    q0 = np.array([0.0, d, 0.0, -math.acos(d / L) - 0.3])  # tip 88 mm above the ground
    return model, q0


def test_pseudo_impulse_keeps_loaded_contacts_after_a_small_impact():
    model, q0 = bench_with_tail()
    counts = {}
    for eps in (0.0, DEFAULT_PSEUDO_IMPULSE):
        plant = HybridPlant(model, pseudo_impulse=eps)
        plant.reset(q0)
        assert plant.mode == (0, 1)  # both feet loaded by gravity
        plant.step(JointCommand.zero(0), 0.5)
        changes = [e for e in plant.events if e.kind != "reset" and e.changed_mode]
        left_lifts = sum(1 for e in changes if 0 in e.mode_before and 0 not in e.mode_after)
        counts[eps] = (len(changes), left_lifts)
        assert plant.mode == (0, 1, 2)  # all at rest in the end
    # without: the tail's impact lifts the left foot, its return lifts the tail, ... (chatter,
    # ended by the Zeno completion); with: one transition, the feet never leave
    assert counts[0.0] == (5, 2), counts
    assert counts[DEFAULT_PSEUDO_IMPULSE] == (1, 0), counts


def test_hopper_free_fall_touchdown_time():
    """Dropped from rest, legs straight, zero torque: touchdown at sqrt(2 H / g) (tolerance 1e-9 s)."""
    model = get_robot("hopper")
    H = 0.3
    plant = HybridPlant(model)
    plant.reset([0.0, 0.4 + H, 0.0, 0.0])
    plant.step(JointCommand.zero(2), 0.5)
    first = plant.events[0]
    assert first.kind == "touchdown" and first.mode_after == (0,)
    assert first.t == pytest.approx(math.sqrt(2 * H / G), abs=1e-9)


def test_liftoff_is_located_where_the_normal_force_vanishes():
    """A crouched hopper extending its leg with a stiff PD command leaves the ground inside a
    plant step, at the instant its stance-mode normal force reaches zero."""
    model = get_robot("hopper")
    fns = numeric(model)
    plant = HybridPlant(model, friction="none")
    plant.reset([0.0, 0.4 * math.cos(0.5), 0.5, -1.0])
    cmd = JointCommand(np.zeros(2), np.zeros(2), np.zeros(2), np.array([150.0, 150.0]), np.array([3.0, 3.0]))
    forces_before = []
    for _ in range(20):
        forces_before.append(plant.state().force[0, 0])
        plant.step(cmd, 0.01)
    lift = [e for e in plant.events if e.kind == "liftoff"]
    assert len(lift) == 1 and lift[0].mode_after == ()
    assert 0.0 < lift[0].t < 0.2 and abs(lift[0].t / 0.01 - round(lift[0].t / 0.01)) > 1e-6
    assert max(forces_before) > 50.0  # it was pushing hard before
    # the stance-mode force at the located event state is zero to solver precision
    probe = HybridPlant(model, friction="none")
    probe.reset(lift[0].q, lift[0].v_minus)
    probe._cmd = cmd.validated(model)
    probe._set_mode(frozenset({0}))
    assert abs(probe.state().force[0, 0]) < 1e-6
    assert fns.contact_gap(plant.state().q)[0] > 0.0


def test_lemke_matches_enumeration_on_random_contact_problems():
    rng = np.random.default_rng(12)
    for _ in range(200):
        n = int(rng.integers(1, 7))
        A = rng.normal(size=(n, n + 2))
        W = A @ A.T + 1e-3 * np.eye(n)
        q = rng.normal(size=n)
        z = lemke(W, q)
        w = W @ z + q
        assert z.min() >= -1e-12 and w.min() >= -1e-9 and abs(z @ w) < 1e-9


def test_lcp_mode_selection_agrees_with_enumeration():
    model = get_robot("block")
    runs = []
    for enumerate_max in (8, 0):
        plant = HybridPlant(model, pseudo_impulse=0.0, enumerate_max=enumerate_max)
        plant.reset(tilted_block(model, 0.1))
        plant.step(JointCommand.zero(0), 2.0)
        runs.append([(e.kind, e.mode_after, round(e.t, 9)) for e in plant.events])
        if enumerate_max == 0:
            assert plant.stats["lcp_solves"] > 5
    assert runs[0] == runs[1]


def test_thrust_above_weight_lifts_the_mass_at_the_command():
    model = get_robot("point_mass")
    plant = HybridPlant(model)
    plant.reset([0.0])
    assert plant.mode == (0,)
    state = plant.step(JointCommand.torque([150.0]), 0.1)
    assert plant.mode == () and plant.events[-1].kind == "liftoff"
    assert state.q[0] == pytest.approx(0.5 * (150.0 / 10.0 - G) * 0.1**2, rel=1e-9)


def test_bad_input_names_the_field():
    model = get_robot("point_mass")
    with pytest.raises(ValueError, match="restitution must be >= 0"):
        HybridPlant(model, restitution=-0.1)
    with pytest.raises(ValueError, match="restitution must be in"):
        HybridOptions(restitution=1.5)
    with pytest.raises(ValueError, match="pseudo_impulse must be >= 0"):
        HybridPlant(model, pseudo_impulse=-1e-3)
    with pytest.raises(ValueError, match="unknown option"):
        HybridPlant(model, pseudo_impuls=0.01)
    plant = HybridPlant(model)
    with pytest.raises(ValueError, match=r"q contains non-finite values \(z=nan\)"):
        plant.reset([float("nan")])
    with pytest.raises(ValueError, match=r"v contains non-finite values"):
        plant.reset([1.0], [float("inf")])
    with pytest.raises(ValueError, match="penetrates the ground at bottom"):
        plant.reset([-0.1])
    plant.reset([1.0])
    with pytest.raises(ValueError, match="dt must be a finite number of seconds >= 0"):
        plant.step(JointCommand.zero(1), -0.01)
    with pytest.raises(ValueError, match="dt must be"):
        plant.step(JointCommand.zero(1), float("nan"))
    with pytest.raises(ValueError, match="tau_ff"):
        plant.step(JointCommand.torque([float("nan")]), 0.01)


@pytest.mark.parametrize("v0, thrust", [(-1e-9, 98.2), (-5e-9, 120.0), (-1e-9, 98.0)])
def test_touchdown_at_vanishing_speed_under_lifting_thrust_advances(v0, thrust):
    """A contact touching at an approach speed below velocity_tol while the thrust lifts the mass:
    the force-acceleration predicate chose flight, the approach re-hit the touchdown at once, and
    the plant raised "events repeat without time advancing (mode [], last guard touchdown of
    contact 0)" (issue 25). The creep is brought to rest, and time advances."""
    model = get_robot("point_mass")
    plant = HybridPlant(model)
    plant.reset([0.1])
    plant.step(JointCommand.torque([thrust]), 1e-3)  # the thrust is held when the contact touches
    plant.reset([0.0], [v0])
    state = plant.step(JointCommand.torque([thrust]), 0.01)
    assert state.violation == "" and state.t == pytest.approx(0.01)
    weight = model.params["m"] * model.params["g"]
    if thrust > weight:  # lifts off: rises from rest
        assert plant.mode == () and state.v[0] > 0 and state.q[0] > 0
    else:  # stays on the ground
        assert plant.mode == (0,) and state.q[0] == pytest.approx(0.0, abs=1e-9)


def test_stance_with_a_thrust_equal_to_the_weight_advances():
    """A thrust exactly equal to the weight leaves a resting contact at zero normal force: the
    lift-off guard (the force) started at zero and fired at once, forever ("events repeat without
    time advancing (mode [0], last guard liftoff of contact 0)", found by the plant fuzz)."""
    model = get_robot("point_mass")
    plant = HybridPlant(model)
    plant.reset([0.0])
    weight = model.params["m"] * model.params["g"]
    for _ in range(10):
        state = plant.step(JointCommand.torque([weight]), 0.01)
    assert state.violation == "" and state.t == pytest.approx(0.1)
    assert abs(state.q[0]) < 1e-9 and abs(state.v[0]) < 1e-9


def test_slip_guard_starting_on_the_cone_boundary_advances():
    """Found by the plant fuzz: a quadruped foot whose tangential force sat exactly on the Coulomb
    cone at a segment's start re-fired its slip guard forever ("events repeat without time
    advancing (mode [0], last guard slip of contact 0)" at t = 0.115 s). Such a guard now waits
    tol_f past the boundary, as the touchdown and lift-off guards do."""
    from sim import fuzz

    case = fuzz.Case(robot="quadruped", drop=0.0, k_scale=0.5, b_scale=0.5, mu=0.3, vx0=-0.2544819574844452,
                     vz0=-0.15, command="pd", noise=0.5361023625966302, seed=667, ticks=13)
    r = fuzz.run_case(fuzz.PlantPool(), "hybrid", case)
    assert r["exception"] == "" and r["violation"] == ""
    assert not r["fall_through"]


def test_painleve_like_biped_tick_resolves_by_sliding(monkeypatch):
    """Found on the "bring your own robot" biped walking under the MPC (issue 25): with one foot
    sticking, the other foot needed a pulling impulse to stop and sank when left out, so the plant
    cycled touchdown -> Zeno completion -> lift-off ~2,700 times in this 10 ms tick (4-11 s of wall
    time per tick). A contact left out of a mode may no longer approach or accelerate into the
    ground, and when no mode with the sticking contacts is consistent, the fewest contacts slide."""
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "examples"))
    model = get_robot("my_biped:build")
    plant = HybridPlant(model)
    plant.reset(model.q0 + np.r_[0.0, 0.05, np.zeros(model.nq - 2)])
    # the state and the MPC's command at t = 0.03 s of that walk (feet 0 and 1 active, 0 sliding)
    q = [-0.007448038843834304, 0.44819957609349254, 0.07734085855642352, 0.33294200014681147,
         -0.9140085817952387, 0.5546967722806855, -0.7997277267154468]
    v = [0.31356596108036494, 0.6234140532114775, -3.0646924516272755, 10.512147612668938,
         3.8728382460988406, -0.07172658330265706, 6.975070356771929]
    plant._t, plant._q, plant._v, plant._sliding = 0.03, np.array(q), np.array(v), {0}
    plant._set_mode(frozenset({0, 1}))
    plant.events.clear()
    cmd = JointCommand(np.array([-13.262135350020532, -3.344221052592563, 13.45222846984149, 6.050420957851053]),
                       np.array([0.39949539281219143, -0.870017833263464, 0.5628665571638696, -0.7449790820538496]),
                       np.array([6.655339266537992, 4.3990748531774715, 0.8169784883184024, 5.474864466159729]),
                       np.full(4, 5.0), np.full(4, 0.5))
    state = plant.step(cmd, 0.01)
    assert state.violation == ""
    assert state.t == pytest.approx(0.04)
    assert len(plant.events) < 20, [(e.kind, e.contacts, e.mode_before, e.mode_after) for e in plant.events[:12]]
    assert plant.stats["zeno"] == 0
    assert plant.stats["friction_slides"] >= 1
    gaps = numeric(model, verbose=False).contact_gap(state.q)
    assert np.min(gaps) > -1e-6


def test_block_set_down_sliding_stops_after_v2_over_2_mu_g():
    """A block set flat on the ground while moving sideways at v0 (normal speed 0): its corners join
    the mode sliding, kinetic friction mu m g brakes it, and it sticks where the speed reaches zero,
    after v0 / (mu g) s and v0^2 / (2 mu g) m. (Joining them sticking zeroed the velocity through
    the projection onto the sticking rows, a jump no impulse paid for; found while fixing the
    biped above.)"""
    _block_slides_to_v2_over_2_mu_g(0.5, 1.0)


@settings(max_examples=12, deadline=None, derandomize=True, database=None)
@given(mu=st.floats(0.05, 1.5), v0=st.floats(-3.0, 3.0).filter(lambda v: abs(v) > 1e-3))
def test_sliding_distance_property(mu, v0):
    """The same over friction coefficients and speeds (either direction); a flat block whose
    width exceeds its height never tips under kinetic friction up to mu = width / height."""
    _block_slides_to_v2_over_2_mu_g(mu, v0)


def _block_slides_to_v2_over_2_mu_g(mu: float, v0: float) -> None:
    model = get_robot("block", width=0.6, height=0.2, mu=mu)
    plant = HybridPlant(model)
    state = plant.reset(np.array([0.0, 0.1, 0.0]), np.array([v0, 0.0, 0.0]))
    assert plant.mode == (0, 1) and plant._sliding == {0, 1}
    assert state.v[0] == pytest.approx(v0, rel=1e-12)
    np.testing.assert_allclose(state.force[:, 1], -np.sign(v0) * mu * state.force[:, 0], rtol=1e-9)  # opposes vt
    state = plant.step(JointCommand.zero(0), abs(v0) / (mu * G) + 0.2)
    assert state.violation == ""
    stops = [e for e in plant.events if e.kind == "stick"]
    assert len(stops) == 1 and stops[0].t == pytest.approx(abs(v0) / (mu * G), rel=1e-8)
    assert state.q[0] == pytest.approx(np.sign(v0) * v0**2 / (2 * mu * G), rel=1e-8)
    assert abs(state.v).max() < 1e-9 and plant.mode == (0, 1) and plant._sliding == set()


def test_subnormal_drop_does_not_fail_the_integrator():
    """Found by the 10,000-case plant fuzz: a hopper dropped from 4e-295 m at -1.4e-45 m/s made
    DOP853's error norm 0/0 (squares of ~1e-162 underflow) and the step failed with "Required step
    size is less than spacing between numbers" at t = 0.06 s. Derivatives below 1e-150 are zero."""
    from sim import fuzz

    case = fuzz.Case(robot="hopper", drop=4.345522846907469e-295, k_scale=1.0, b_scale=1.0, mu=1.0, vx0=0.0,
                     vz0=-1.401298464324817e-45, command="pd", noise=0.0, seed=2668291, ticks=40)
    r = fuzz.run_case(fuzz.PlantPool(), "hybrid", case)
    assert r["exception"] == "" and r["violation"] == ""


@pytest.mark.parametrize("case_args", [
    dict(drop=0.0, k_scale=1.0, b_scale=1.0, vx0=-0.4515070917308255, vz0=-0.26328829189073416,
         noise=0.8400373121172942, seed=222),
    dict(drop=0.084313689720109, k_scale=0.5, b_scale=2.0, vx0=1.029185468042263e-149, vz0=0.11966940438555052,
         noise=0.9986090469494058, seed=797),
    dict(drop=0.0, k_scale=2.0, b_scale=2.0, vx0=0.0, vz0=-0.0019500042726846578, noise=0.5292822009194639,
         seed=247711),
])
def test_kinetic_friction_near_the_painleve_point_does_not_fail(case_args):
    """Found by the plant fuzz once sliding contacts had kinetic friction: the hopper's foot sliding
    with mu = 1 drives det(A M^-1 F^T) to zero (the Painleve paradox), the normal force grows
    without bound and the integrator stopped on "Array must not contain infs or NaNs". Within
    painleve_margin of that point the foot slides frictionless."""
    from sim import fuzz

    case = fuzz.Case(robot="hopper", mu=1.0, command="pd", ticks=40, **case_args)
    pool = fuzz.PlantPool()
    r = fuzz.run_case(pool, "hybrid", case)
    assert r["exception"] == "" and r["violation"] == "" and not r["fall_through"]
    assert pool.get("hybrid", case)[0].stats["painleve"] >= 1
