"""Randomised plant runs that look for lost robots, shared by the property-based tests
(tests/test_plant_invariants.py) and the bench (`python -m launch bench plant-fuzz`).

A `Case` drops a robot (its lowest contact `drop` m above the ground, initial velocity vx0, vz0)
onto the ground with contact stiffness and damping scaled from the model's (k_scale, b_scale)
and friction mu, then holds a joint command for `ticks` control ticks of TICK s: "limp" (all
zeros: no input at all) or "pd" (a PD at the nominal joint angles with per-tick noise of relative
amplitude `noise` on the set points and feed-forward torques). "limp" means no input: zero
thrust for the point mass; for the legged robots a passive PD at q0 (fixed set point, no
feed-forward: zero torques let the body, which has no contact of its own, fall through the
floor and drag the feet under it), whose springs' energy counts in the energy check.
`run_case` reports whether an
exception escaped the plant, the violation it flagged, the deepest contact gap, how much the
mechanical energy grew (limp cases: it must not) and the resting penetration.

How each plant takes the parameters: ESS builds the robot with the scaled k_contact, b_contact
and mu (one compiled plant per variant, cached); NMDP takes `stiffness` = k_scale times its
default and `mu` as options (it has no damping); the rigid hybrid plant and MuJoCo (its own soft
contacts) take mu from the model (stiffness and damping do not apply).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from robots import get_robot, numeric
from sim.protocol import JointCommand, actuated_joints

ROBOTS = ("point_mass", "hopper", "quadruped")
K_SCALES = (0.5, 1.0, 2.0)
B_SCALES = (0.5, 1.0, 2.0)
MUS = (0.3, 1.0)
DROP_MAX_M = 0.2
V0_MAX = 0.5  # m/s, each of vx0, vz0 in [-V0_MAX, V0_MAX]
TICK = 0.01  # s, one control tick (the command is held over it)
TICKS = 40  # 0.4 s per case
PD_GAINS = (60.0, 2.0)  # kp (N m/rad), kd (N m s/rad) of the "pd" command
REST_SPEED = 0.02  # m/s (rad/s): a case ending with every |v| below this rests
ENERGY_RTOL = 0.02  # limp cases: growth allowed, relative to the energy scale (integration error)
# ... except on MuJoCo, whose soft contacts are not strictly passive (measured up to 4.5 %,
# sim/mujoco_plant.py): its stated bound
ENERGY_RTOL_BY_PLANT = {"mujoco": 0.05}


def energy_rtol(plant: str) -> float:
    """Energy growth allowed in limp cases on `plant`, as a fraction of the energy scale."""
    return ENERGY_RTOL_BY_PLANT.get(plant, ENERGY_RTOL)


@dataclass(frozen=True)
class Case:
    robot: str
    drop: float  # m, lowest contact above the ground at t = 0
    k_scale: float
    b_scale: float
    mu: float
    vx0: float  # m/s (robots with a horizontal base coordinate)
    vz0: float  # m/s, positive up
    command: str  # "limp" or "pd"
    noise: float  # relative amplitude of the pd command's noise, in [0, 1]
    seed: int
    ticks: int = TICKS


def strategy(robots=ROBOTS, plant: str | None = None):
    """A hypothesis strategy of `Case`s (the generators of the tests and the bench)."""
    from hypothesis import strategies as st

    return st.builds(
        Case,
        robot=st.sampled_from(robots),
        drop=st.floats(0.0, DROP_MAX_M),
        k_scale=st.sampled_from(K_SCALES),
        b_scale=st.sampled_from(B_SCALES),
        mu=st.sampled_from(MUS),
        vx0=st.floats(-V0_MAX, V0_MAX),
        vz0=st.floats(-V0_MAX, V0_MAX),
        command=st.sampled_from(("limp", "pd")),
        noise=st.floats(0.0, 1.0),
        seed=st.integers(0, 2**31 - 1),
    )


class PlantPool:
    """Plants built once per (plant, robot, parameter variant) and reused across cases."""

    def __init__(self, **options):
        self.options = options
        self._plants: dict = {}

    def model(self, plant: str, case: Case):
        base = get_robot(case.robot)
        has_mu = any(c.mu > 0 for c in base.contacts)
        if plant == "ess":
            p = base.params
            over = dict(k_contact=p["k_contact"] * case.k_scale, b_contact=p["b_contact"] * case.b_scale)
            if has_mu:
                over["mu"] = case.mu
            return get_robot(case.robot, **over)
        if plant in ("hybrid", "mujoco") and has_mu:
            return get_robot(case.robot, mu=case.mu)
        return base

    def get(self, plant: str, case: Case):
        from sim.registry import make_plant

        model = self.model(plant, case)
        extra = {}
        if plant == "nmdp":
            extra = {"k_scale": case.k_scale}
            if any(c.mu > 0 for c in model.contacts):
                extra["mu"] = case.mu
        key = (plant, case.robot, repr(sorted(model.params.items())), tuple(sorted(extra.items())))
        if key not in self._plants:
            if plant == "nmdp":  # stiffness: k_scale times the plant's default (1.5 F / 1 cm)
                probe = make_plant("nmdp", model, **self.options)
                opts = dict(self.options, stiffness=probe.stiffness * case.k_scale)
                if "mu" in extra:
                    opts["mu"] = extra["mu"]
                self._plants[key] = (make_plant("nmdp", model, **opts), model)
            else:
                self._plants[key] = (make_plant(plant, model, **self.options), model)
        return self._plants[key]


def initial_state(model, case: Case) -> tuple[np.ndarray, np.ndarray]:
    """q0 with the lowest contact `drop` above the ground; v0 = (vx0, vz0) on the base."""
    q = np.array(model.q0, dtype=float)
    zi = model.q_names.index("z")
    q[zi] += case.drop - float(numeric(model, verbose=False).contact_gap(q).min())
    v = np.zeros(model.nv)
    v[zi] = case.vz0
    if "x" in model.q_names:
        v[model.q_names.index("x")] = case.vx0
    return q, v


def commands(model, case: Case) -> list[JointCommand]:
    """The case's command per tick."""
    nu = model.nu
    if nu == 0 or (case.command == "limp" and case.robot == "point_mass"):
        return [JointCommand.zero(nu)] * case.ticks
    rng = np.random.default_rng(case.seed)
    joints = actuated_joints(model)
    q_nom = np.array(model.q0)[joints]
    u_max = np.where(np.isfinite(model.u_max), model.u_max, 100.0)
    kp, kd = PD_GAINS
    if case.command == "limp":  # legged robots: a passive PD at q0 (no feed-forward, fixed set point)
        return [JointCommand(np.zeros(nu), q_nom, np.zeros(nu), np.full(nu, kp), np.full(nu, kd))] * case.ticks
    if case.robot == "point_mass":  # a thrust: no joint angle to hold, noise around the weight
        weight = model.params["m"] * model.params["g"]
        return [JointCommand.torque(np.array([weight * (1.0 + case.noise * rng.uniform(-1.0, 1.0))]))
                for _ in range(case.ticks)]
    out = []
    for _ in range(case.ticks):
        q_des = q_nom + case.noise * 0.5 * rng.uniform(-1.0, 1.0, nu)
        tau = case.noise * 0.3 * u_max * rng.uniform(-1.0, 1.0, nu)
        out.append(JointCommand(tau, q_des, np.zeros(nu), np.full(nu, kp), np.full(nu, kd)))
    return out


def run_case(pool: PlantPool, plant_name: str, case: Case) -> dict:
    """Run `case` on plant `plant_name`; never raises. Keys: exception ("" or the repr of what
    escaped reset/step), violation (the plant's, "" if none), min_gap (m, deepest contact over the
    ticks), limit (m, the plant's penetration limit), fall_through (a gap below -limit, flagged or
    not), energy_growth (limp cases: max of E(t) - E(0) over the energy scale, else nan),
    rest_penetration (m, -min gap at the end if the robot rests there, else nan)."""
    out = dict(exception="", violation="", min_gap=math.nan, limit=math.nan, fall_through=False,
               energy_growth=math.nan, rest_penetration=math.nan)
    try:
        plant, model = pool.get(plant_name, case)
        fns = numeric(model, verbose=False)
        limit = plant.invariants.limit
        out["limit"] = limit
        q, v = initial_state(model, case)
        state = plant.reset(q, v)
        weight = float(np.max(np.diag(fns.mass_matrix(model.q0)))) * model.gravity
        cmds = commands(model, case)
        joints = actuated_joints(model)

        def energy(q, v):  # T + V of the robot plus the energy in the passive PD's springs, J
            T, V = fns.energy(q, v)
            c = cmds[0]
            return T + V + 0.5 * float(np.sum(c.kp * (c.q_des - q[joints]) ** 2))

        E0 = energy(q, v)
        e_scale = abs(fns.energy(q, v)[0]) + weight * (case.drop + 0.05) + 1e-3
        growth = -math.inf
        min_gap = float(fns.contact_gap(state.q).min())
        for cmd in cmds:
            state = plant.step(cmd, TICK)
            if state.violation:
                break
            min_gap = min(min_gap, float(fns.contact_gap(state.q).min()))
            if case.command == "limp":
                growth = max(growth, (energy(state.q, state.v) - E0) / e_scale)
        out["violation"] = state.violation
        out["min_gap"] = min_gap
        out["fall_through"] = bool(min_gap < -limit or "below" in state.violation)
        if case.command == "limp":
            out["energy_growth"] = growth
        if not state.violation and np.abs(state.v).max() < REST_SPEED:
            out["rest_penetration"] = max(0.0, -float(fns.contact_gap(state.q).min()))
    except Exception as exc:  # noqa: BLE001 - the point is to count what escapes
        out["exception"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return out
