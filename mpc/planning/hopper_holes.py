"""The hopper crossing three holes (seed 004, Section 6).

The planar one-legged hopper of `robots` (q = (x, z, phi_hip, phi_knee), torques at hip and
knee) starts at rest at q0 = (0, 0.4, 0, 0) (leg straight, foot on the ground) and must be at
q_target = (3, 0.4, 0, 0) at T = 2.5 s, N = 20 control intervals, minimising the integral of
u^T u, |u| <= 60 N m, with the state/kinematic bounds of the paper:

    -0.05 <= x, p_foot,x, p_knee,x          0.2 <= z <= 0.55
    |phi_hip| <= 3 pi / 8, |phi_knee| <= pi / 2
    p_knee,z >= 0.05                        -0.005 <= p_foot,z <= 0.2

and the foot outside three ellipses centred on the ground at x = 0.5, 1.5, 2.5 m with
semi-axes a (horizontal) and 0.1 m (vertical): ((p_foot,x - x_c) / a)^2 + (p_foot,z / 0.1)^2 >= 1.
a = 0.25 m by default: holes 0.5 m wide (the paper's "width of the hole", 0.5 m), as the
authors' script for this example (semi-axis = width / 2) have them, with 0.5 m of ground
between them. The paper's text also uses its a_k = 0.5 ("width of the hole") as the semi-axis;
with a = 0.5 (`HoleTerrain(semi_x=0.5)`, `plan hopper-holes --hole-semi-axis 0.5`) the holes
fill [0, 3] and touch at x = 1 and 2, so the foot can stand only at x = 0, 1, 2, 3
(docs/PLANNING.md, "The hole geometry").
Contact: time-freezing with a_n = 200, mu = 0.8 (the robot's own value).
"""
from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np

from robots import get_robot
from robots.model import RobotModel

from ..wholebody.terrain import HoleTerrain, terrain_arrays, terrain_from_plan  # noqa: F401 - this scenario's terrain, re-exported
from .ocp import PlannerOptions, TimeFreezingOcp
from .time_freezing import TANGENTS, ContactLagrangian, time_freezing_system

A_N = 200.0  # auxiliary dynamics constant (Sec. 6)


@dataclass(frozen=True)
class HopperTask:
    """The Section 6 task: start, target, horizon (s), grid, limits and terrain.

    a_n, gap_scale and tangent go to `time_freezing_system` (gap_scale 1: the paper's c1 = gap;
    tangent "geometric": friction along the ground; "kinetic": orthogonal to the normal in the
    kinetic metric, as the paper assumes; see `time_freezing_system`).
    coordinates: "foot" (default) writes the planner's system in q_f = (foot x, foot z, phi_hip,
    phi_knee), where the gap is the coordinate q_f[1] itself; "robot" uses the robot's
    q = (x, z, phi_hip, phi_knee), where it is a nonlinear function of q (see `foot_coordinates`).
    """

    q0: tuple[float, ...] = (0.0, 0.4, 0.0, 0.0)
    q_target: tuple[float, ...] = (3.0, 0.4, 0.0, 0.0)
    horizon: float = 2.5
    n_intervals: int = 20
    u_max: float = 60.0
    x_min: float = -0.05
    z_range: tuple[float, float] = (0.2, 0.55)
    hip_max: float = 3 * np.pi / 8
    knee_max: float = np.pi / 2
    knee_z_min: float = 0.05
    foot_z_range: tuple[float, float] = (-0.005, 0.2)
    terrain: HoleTerrain = HoleTerrain()
    a_n: float = A_N
    gap_scale: float = 1.0
    coordinates: str = "foot"
    tangent: str = "geometric"

    def __post_init__(self) -> None:
        if self.coordinates not in ("foot", "robot"):
            raise ValueError(f"HopperTask.coordinates must be 'foot' or 'robot', got {self.coordinates!r}")
        if self.tangent not in TANGENTS:
            raise ValueError(f"HopperTask.tangent must be one of {TANGENTS}, got {self.tangent!r}")


def knee_point(model: RobotModel) -> ca.SX:
    """SX 2-vector: the knee (origin of body "shank"), m."""
    if "shank" not in model.body_names:
        raise ValueError(f"{model.name}: no body named 'shank' (bodies: {model.body_names}); the knee is its origin")
    row = model.body_names.index("shank")
    return model.body_poses[row, :2].T


def hopper_holes_ocp(task: HopperTask = HopperTask(), model: RobotModel | None = None) -> TimeFreezingOcp:
    """The time-freezing OCP of Section 6 for the `hopper` robot."""
    model = model or get_robot("hopper")
    if model.nq != 4 or model.nu != 2 or model.nc < 1:
        raise ValueError(f"{model.name}: expected the planar hopper (nq=4, nu=2, one foot contact)")
    cls = ContactLagrangian.from_robot(model, "foot")
    u = cls.u
    foot = model.contacts[0].point
    knee = knee_point(model)
    inf = np.inf
    q_lb = np.array([task.x_min, task.z_range[0], -task.hip_max, -task.knee_max])
    q_ub = np.array([inf, task.z_range[1], task.hip_max, task.knee_max])
    target = np.asarray(task.q_target, dtype=float)
    q0 = np.asarray(task.q0, dtype=float)
    to_robot = None
    if task.coordinates == "foot":
        # the planner's state is q_f; every expression of the robot's q is rewritten through q(q_f)
        q_f, q_of_f, to_robot, from_robot = foot_coordinates(model)
        cls = cls.in_coordinates(q_f, q_of_f, name=f"{cls.name} (foot coordinates)")
        q0, q_end = (np.asarray(from_robot(q, np.zeros(4))[0]).ravel() for q in (q0, target))
        rewrite = ca.Function("rewrite", [model.q], [ca.vertcat(foot, knee, model.q)])
        foot, knee, q_rob = ca.vertsplit(rewrite(q_of_f), [0, 2, 4, 8])
        # the body's x and z bounds become path constraints; the joint angles are coordinates
        body = [(q_rob[0], task.x_min, inf, "body_x"), (q_rob[1], *task.z_range, "body_z")]
        q_lb[:2], q_ub[:2] = -inf, inf
        terminal = q_rob - ca.DM(target)
    else:
        q_end, body, terminal = target, [], cls.q - ca.DM(target)
    system = time_freezing_system(cls, a_n=task.a_n, stage_cost=ca.dot(u, u), gap_scale=task.gap_scale,
                                  tangent=task.tangent)
    holes = task.terrain.levels(foot[0], foot[1])
    path = ca.vertcat(foot[0], knee[0], knee[1], foot[1], *holes, *[b[0] for b in body])
    path_lb = np.array([task.x_min, task.x_min, task.knee_z_min, task.foot_z_range[0]] + [1.0] * len(holes)
                       + [b[1] for b in body])
    path_ub = np.array([inf, inf, inf, task.foot_z_range[1]] + [inf] * len(holes) + [b[2] for b in body])
    names = (("foot_x", "knee_x", "knee_z", "foot_z") + tuple(f"hole@{xc:g}" for xc in task.terrain.centers)
             + tuple(b[3] for b in body))
    return TimeFreezingOcp(
        system=system, q0=q0, v0=np.zeros(4), horizon=task.horizon,
        n_intervals=task.n_intervals, u_lb=-task.u_max * np.ones(2), u_ub=task.u_max * np.ones(2),
        q_lb=q_lb, q_ub=q_ub, path=path, path_lb=path_lb, path_ub=path_ub, path_names=names,
        terminal=terminal, q_end_guess=q_end, name="hopper_holes", to_robot=to_robot,
    )


def foot_coordinates(model: RobotModel) -> tuple[ca.SX, ca.SX, ca.Function, ca.Function]:
    """Coordinates q_f = (foot x, foot z, phi_hip, phi_knee) of the planar hopper, m and rad.

    Why: in the robot's q the gap (foot z) is nonlinear in q. On the contact manifold FESD
    then imposes both c1 = gap(q) = 0 and c2 = n^T v = 0 at every Radau stage point, and since
    collocation does not preserve a nonlinear invariant, the two cannot hold together exactly
    while the robot moves. In q_f the gap is linear (q_f[1]) and the normal/tangent directions
    are constant, so c2 = 0 at the stage points implies c1 = 0 there, as for the particle of
    Example 5. (Measured, docs/history/PLANNING-sessions.md, session 11: this removes the
    horizon-wide inconsistency, but the homotopy still stalls near 1e-4 for other, local
    reasons.)
    The foot is the base position plus a function of the joint angles only, so q(q_f) is
    explicit. Returns (q_f symbol, q(q_f), Function (q_f, v_f) -> (q, v), Function (q, v) -> (q_f, v_f)).
    """
    foot = model.contacts[0].point
    base_jac = ca.jacobian(foot, model.q[:2])
    if ca.depends_on(base_jac, model.q) or not np.array_equal(np.asarray(ca.evalf(base_jac)), np.eye(2)):
        raise ValueError(f"{model.name}: the foot must be the base (x, z) plus a function of the joint angles")
    offset = ca.substitute(foot, model.q[:2], ca.DM.zeros(2))  # foot relative to the base, f(phi)
    q_f = ca.SX.sym("q_f", 4)
    v_f = ca.SX.sym("v_f", 4)
    phi = q_f[2:]
    off = ca.substitute(offset, model.q[2:], phi)
    q_of_f = ca.vertcat(q_f[:2] - off, phi)
    v_of_f = ca.jacobian(q_of_f, q_f) @ v_f
    to_robot = ca.Function("to_robot", [q_f, v_f], [q_of_f, v_of_f], ["q_f", "v_f"], ["q", "v"])
    f_of_q = ca.vertcat(foot, model.q[2:])
    from_robot = ca.Function("from_robot", [model.q, model.v], [f_of_q, ca.jacobian(f_of_q, model.q) @ model.v],
                             ["q", "v"], ["q_f", "v_f"])
    return q_f, q_of_f, to_robot, from_robot


def hopper_options(**overrides) -> PlannerOptions:
    """Section 6's discretization: FESD Radau IIA order 5 (n_s = 3), 3 finite elements per interval.

    IPOPT tolerance 1e-6 (as nosnoc's hopper examples); the first NLP (sigma = 1) is cut at 150
    iterations (see PlannerOptions.first_nlp_max_iter).
    """
    base = dict(n_s=3, n_fe=3, sigma_0=1.0, homotopy_slope=0.1, comp_tol=1e-7, max_homotopy=8,
                s_max=10.0, ipopt_max_iter=1000, ipopt_tol=1e-6, first_nlp_max_iter=150)
    base.update(overrides)
    return PlannerOptions(**base)
