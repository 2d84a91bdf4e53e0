"""Floating-base `RobotModel`s from URDF trees: the 3D robots (go1, a1, solo12, or your own URDF).

    tree = load_urdf_tree("go1")                        # robots/urdf.py: pinocchio's parser
    model = build_floating_robot(tree, FootContacts(radius=0.02, mu=0.8), stance=...)

The model is the same `RobotModel` as the planar robots' (robots/model.py), with
`floating_base=True`: q = (base position, quaternion (x, y, z, w), joints), nq = nv + 1;
v = (base linear and angular velocity in the base frame, joint velocities). M(q) and h(q, v)
come from the symbolic recursive Newton-Euler algorithm of robots/spatial.py. Each foot is a
sphere of `radius` centred on the URDF's foot frame; its contact point is the sphere's lowest
point (the foot frame's position minus `radius` along world z), so the gap is the sphere's
height above the ground; friction acts on the sphere's material point there (`Contact.velocity`:
the centre's velocity plus omega x (0, 0, -radius)), so a foot rolling over the ground does not
slip. The MJCF (`to_mjcf`) carries the same spheres.
"""
from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np

from .model import Contact, RobotModel
from .spatial import forward_dynamics, frame_motion, gravity_vector, inverse_dynamics, placements
from .urdf import UrdfTree, to_mjcf


@dataclass(frozen=True)
class FootContacts:
    """The feet's contact settings: sphere radius (m), Coulomb friction mu, and the normal
    stiffness (N/m) and damping (N s/m) the compliant plants use."""

    radius: float = 0.02
    mu: float = 0.8
    stiffness: float = 2.0e4
    damping: float = 300.0


def _level_on_ground(gaps, joints: np.ndarray) -> np.ndarray:
    """q with joint angles `joints`, the base level at x = y = 0 and at the height where the
    lowest contact touches z = 0; `gaps` maps q to the contacts' gaps (m)."""
    q = np.concatenate([np.zeros(3), [0.0, 0.0, 0.0, 1.0], joints])
    q[2] = -float(np.min(np.asarray(gaps(q))))
    return q


def resting_configuration(model: RobotModel, joints) -> np.ndarray:
    """q (nq) of a floating-base `model` with joint angles `joints` (rad, nu), the base level at
    the origin's x, y and at the height where its lowest contact touches z = 0."""
    from .numeric import numeric

    joints = np.asarray(joints, dtype=float)
    if joints.shape != (model.nu,):
        raise ValueError(f"{model.name}: a pose needs {model.nu} joint angles, got shape {joints.shape}")
    return _level_on_ground(numeric(model, verbose=False).contact_gap, joints)


def build_floating_robot(tree: UrdfTree, feet: FootContacts, *, stance: np.ndarray, gravity=9.81,
                         params: dict | None = None, controller_defaults: dict | None = None) -> RobotModel:
    """The `RobotModel` of a floating-base tree (module docstring).

    stance: joint angles (rad, nu) of the standing pose; q0 is that pose with the base level at
    the height where the lowest foot touches the ground. params: documented numbers, hashed
    with the model; params["poses"] (name -> nu joint angles) are the named start poses a
    scenario can ask for (`launch.scenario.Scenario.start_pose`). gravity: g along -z (m/s^2),
    or a gravity vector (a tilted one stands for an inclined ground; the model's `gravity` is
    then its magnitude). controller_defaults: the RobotModel's (per controller name, options).
    """
    bodies = list(tree.bodies)
    nq, nv = tree.nq, tree.nv
    nu = nv - 6
    stance = np.asarray(stance, dtype=float)
    if stance.shape != (nu,):
        raise ValueError(f"{tree.name}: stance must be {nu} joint angles, got shape {stance.shape}")
    q, v, a = ca.SX.sym("q", nq), ca.SX.sym("v", nv), ca.SX.sym("a", nv)
    tau = inverse_dynamics(bodies, q, v, a, gravity)
    M = ca.substitute(ca.jacobian(tau, a), v, ca.SX.zeros(nv))
    h = ca.substitute(tau, a, ca.SX.zeros(nv))
    world = placements(bodies, q)
    g_vec = gravity_vector(gravity)
    potential = sum(-b.mass * ca.dot(ca.DM(g_vec), R @ ca.DM(b.com) + p) for b, (R, p) in zip(bodies, world))
    contacts = []
    for fr in tree.feet:
        pos, lin, ang = frame_motion(bodies, fr, q, v)
        # the sphere's material point touching the ground, r below its centre: it moves at the
        # centre's velocity plus omega x (0, 0, -r) (a rolling foot does not slip there)
        touching = lin + ca.cross(ang, ca.DM([0.0, 0.0, -feet.radius]))
        contacts.append(Contact(name=fr.name, point=pos - ca.DM([0.0, 0.0, feet.radius]), mu=feet.mu,
                                stiffness=feet.stiffness, damping=feet.damping, radius=feet.radius,
                                velocity=touching))
    B = np.vstack([np.zeros((6, nu)), np.eye(nu)])

    def articulated(tau_gen, forces):
        """dv/dt by the articulated-body algorithm (RobotModel.forward_dynamics): each foot's
        world force acts at its sphere's lowest point, radius below the foot frame's origin."""
        external = [None] * len(bodies)
        for fr, force in zip(tree.feet, forces):
            R = world[fr.body][0]
            f = R.T @ force
            r = ca.DM(np.array(fr.placement[1])) + R.T @ ca.DM([0.0, 0.0, -feet.radius])  # in the body's frame
            n = ca.cross(r, f)
            if external[fr.body] is not None:
                f, n = f + external[fr.body][0], n + external[fr.body][1]
            external[fr.body] = (f, n)
        return forward_dynamics(bodies, q, v, tau_gen, external, gravity)

    base = ("base_x", "base_y", "base_z", "base_qx", "base_qy", "base_qz", "base_qw")
    # the model's own gap expressions, evaluated by CasADi (the model is not built yet)
    q0 = _level_on_ground(ca.Function("gaps", [q], [ca.vertcat(*[c.gap for c in contacts])]), stance)
    return RobotModel(
        name=tree.name,
        q=q,
        v=v,
        q_names=base + tree.joint_names,
        u_names=tree.joint_names,
        mass_matrix=M,
        bias=h,
        passive=ca.SX.zeros(nv),
        kinetic_energy=0.5 * ca.dot(v, M @ v),
        potential_energy=potential,
        B=B,
        contacts=tuple(contacts),
        body_poses=ca.vertcat(*[ca.horzcat(p.T, ca.reshape(R.T, 1, 9)) for R, p in world]),
        body_names=tuple(b.name for b in bodies),
        gravity=float(np.linalg.norm(g_vec)),
        q0=q0,
        u_max=tree.u_max,
        params={"source": tree.path.name, "mass_kg": tree.mass, "foot_radius": feet.radius, "mu": feet.mu,
                "k_contact": feet.stiffness, "b_contact": feet.damping, "stance": stance.tolist(),
                **({"imu": {"rotation": tree.imu[0].tolist(), "position": tree.imu[1].tolist()}} if tree.imu else {}),
                **(params or {})},
        mjcf=to_mjcf(tree, foot_radius=feet.radius, mu=feet.mu, gravity=g_vec, stiffness=feet.stiffness),
        q_min=np.concatenate([np.full(7, -np.inf), tree.q_min]),
        q_max=np.concatenate([np.full(7, np.inf), tree.q_max]),
        floating_base=True,
        controller_defaults=controller_defaults or {},
        forward_dynamics=articulated,
    )
