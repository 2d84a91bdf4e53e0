"""Planar kinematic trees: the short way to define a robot.

A robot is a list of `Body`s, each attached to its parent (or the world) by slide and
hinge `Joint`s, plus its contacts. `build_planar_robot` turns that description into a
`RobotModel` (Lagrangian M and h, contact kinematics) and into MJCF, so MuJoCo runs the
very same model. A new planar robot is ~50 lines: see `robots/library/hopper.py`.

Frames follow MuJoCo: a hinge rotates about +y (axis_sign=+1) or -y (axis_sign=-1);
rotating about +y by a maps body-local (lx, lz) to (lx cos a + lz sin a, -lx sin a + lz cos a).
Slides are allowed only on bodies attached to the world, before any hinge of that body.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal, Sequence
from xml.sax.saxutils import quoteattr

import casadi as ca
import numpy as np

from .lagrangian import BodyTerm, lagrangian_dynamics
from .model import Contact, RobotModel


@dataclass(frozen=True)
class Joint:
    """A one-degree-of-freedom joint.

    kind: "slide_x" / "slide_z" (metres, along the world axis) or "hinge" (radians).
    axis_sign: hinges only, +1 rotates about +y, -1 about -y (counter-clockwise in the x-z plane).
    actuated: whether a motor drives it (adds a column of B with unit gear).
    u_max: motor limit, N or N m.
    stiffness, rest: passive spring tau = -stiffness (q - rest), N/m or N m/rad.
    damping: passive damper tau = -damping v, N s/m or N m s/rad.
    range: (lower, upper), m or rad: the range a controller keeps the joint in (the model's
        q_min/q_max; the MPC keeps it, plants and MJCF do not); None = unlimited.
    """

    name: str
    kind: Literal["slide_x", "slide_z", "hinge"]
    axis_sign: int = 1
    actuated: bool = False
    u_max: float = np.inf
    stiffness: float = 0.0
    rest: float = 0.0
    damping: float = 0.0
    range: tuple[float, float] | None = None


@dataclass(frozen=True)
class Body:
    """A rigid body of the tree.

    parent: parent body's name, or None for the world.
    pos: origin in the parent frame (x, z), m.
    com: centre of mass in the body frame (x, z), m.
    mass: kg; inertia: about the CoM, around the plane normal, kg m^2.
    segment: for drawing and MJCF: a capsule from `segment[0]` to `segment[1]` (body frame), or None.
    geoms: extra MJCF <geom .../> elements placed in this body (visual or collision).
    """

    name: str
    parent: str | None
    pos: tuple[float, float]
    joints: tuple[Joint, ...]
    mass: float
    com: tuple[float, float] = (0.0, 0.0)
    inertia: float = 0.0
    segment: tuple[tuple[float, float], tuple[float, float]] | None = None
    geoms: tuple[str, ...] = ()


@dataclass(frozen=True)
class PointContact:
    """A contact point fixed on a body, touching flat ground at `ground_height` (m).

    point: (x, z) in the body frame, m. See `robots.model.Contact` for the other fields.
    """

    name: str
    body: str
    point: tuple[float, float]
    mu: float = 0.0
    stiffness: float = 0.0
    damping: float = 0.0
    radius: float = 0.0
    ground_height: float = 0.0


@dataclass(frozen=True, eq=False)
class Frame:
    """Symbolic pose of a body: origin (SX 2-vector, m) and angle about +y (SX, rad)."""

    origin: ca.SX
    angle: ca.SX

    def to_world(self, local: Sequence[float] | ca.SX) -> ca.SX:
        """World (x, z) of a body-local point."""
        c, s = ca.cos(self.angle), ca.sin(self.angle)
        lx, lz = local[0], local[1]
        return self.origin + ca.vertcat(lx * c + lz * s, -lx * s + lz * c)


@dataclass(frozen=True)
class PlanarTree:
    """The full description of a planar robot (what `build_planar_robot` consumes)."""

    name: str
    bodies: tuple[Body, ...]
    point_contacts: tuple[PointContact, ...] = ()
    gravity: float = 9.81  # along -z, m/s^2
    gravity_x: float = 0.0  # along x, m/s^2 (a tilted gravity stands for an inclined ground)
    world_geoms: tuple[str, ...] = ()
    params: dict = field(default_factory=dict)
    controller_defaults: dict = field(default_factory=dict)  # RobotModel.controller_defaults


def build_planar_robot(
    tree: PlanarTree,
    *,
    q0: Sequence[float] | None = None,
    extra_contacts: Callable[[dict[str, Frame], ca.SX], list[Contact]] | None = None,
) -> RobotModel:
    """Build the `RobotModel` of a planar tree: M, h, contacts and MJCF from one description.

    Args:
        tree: bodies, joints, point contacts, gravity (m/s^2) and parameters.
        q0: nominal configuration (default zeros).
        extra_contacts: callable(frames, q) -> contacts that are not fixed body points
            (e.g. a plate sliding over spring tips).
    """
    _validate_tree(tree)
    joints = [j for b in tree.bodies for j in b.joints]
    n = len(joints)
    q = ca.SX.sym("q", n)
    v = ca.SX.sym("v", n)
    frames: dict[str, Frame] = {}
    terms: list[BodyTerm] = []
    spring_energy = ca.SX(0)
    damping = ca.SX.zeros(n)
    i = 0
    for body in tree.bodies:
        parent = frames[body.parent] if body.parent else Frame(ca.SX.zeros(2), ca.SX(0))
        origin = parent.to_world(body.pos)
        angle = parent.angle
        for joint in body.joints:
            if joint.kind == "slide_x":
                origin = origin + ca.vertcat(q[i], 0)
            elif joint.kind == "slide_z":
                origin = origin + ca.vertcat(0, q[i])
            else:
                angle = angle + joint.axis_sign * q[i]
            spring_energy += 0.5 * joint.stiffness * (q[i] - joint.rest) ** 2
            damping[i] = joint.damping * v[i]
            i += 1
        frame = Frame(origin, angle)
        frames[body.name] = frame
        terms.append(BodyTerm(com=frame.to_world(body.com), angle=angle, mass=body.mass, inertia=body.inertia))

    dyn = lagrangian_dynamics(q, v, terms, gravity=tree.gravity, gravity_x=tree.gravity_x, spring_potential=spring_energy, damping=damping)
    contacts = [
        Contact(
            name=pc.name,
            point=frames[pc.body].to_world(pc.point),
            ground_height=pc.ground_height,
            mu=pc.mu,
            stiffness=pc.stiffness,
            damping=pc.damping,
            radius=pc.radius,
        )
        for pc in tree.point_contacts
    ]
    if extra_contacts is not None:
        contacts += list(extra_contacts(frames, q))

    actuated = [k for k, j in enumerate(joints) if j.actuated]
    B = np.zeros((n, len(actuated)))
    for col, k in enumerate(actuated):
        B[k, col] = 1.0
    poses = ca.vertcat(*[ca.horzcat(f.origin.T, f.angle) for f in frames.values()])
    return RobotModel(
        name=tree.name,
        q=q,
        v=v,
        q_names=tuple(j.name for j in joints),
        u_names=tuple(joints[k].name for k in actuated),
        mass_matrix=dyn.mass_matrix,
        bias=dyn.bias,
        passive=dyn.passive,
        kinetic_energy=dyn.kinetic_energy,
        potential_energy=dyn.potential_energy,
        B=B,
        contacts=tuple(contacts),
        body_poses=poses,
        body_names=tuple(frames),
        gravity=tree.gravity,
        q0=np.zeros(n) if q0 is None else np.asarray(q0, dtype=float),
        u_max=np.array([joints[k].u_max for k in actuated]),
        params=dict(tree.params),
        mjcf=to_mjcf(tree),
        q_min=[-np.inf if j.range is None else j.range[0] for j in joints],
        q_max=[np.inf if j.range is None else j.range[1] for j in joints],
        controller_defaults=tree.controller_defaults,
    )


def _validate_tree(tree: PlanarTree) -> None:
    seen: set[str] = set()
    for body in tree.bodies:
        if body.parent is not None and body.parent not in seen:
            raise ValueError(f"{tree.name}: body {body.name!r} names parent {body.parent!r} before it is defined")
        if body.name in seen:
            raise ValueError(f"{tree.name}: duplicate body name {body.name!r}")
        seen.add(body.name)
        hinge_seen = False
        for joint in body.joints:
            if joint.kind not in ("slide_x", "slide_z", "hinge"):
                raise ValueError(f"{tree.name}: joint {joint.name!r} has unknown kind {joint.kind!r}")
            if joint.kind == "hinge":
                if joint.axis_sign not in (1, -1):
                    raise ValueError(f"{tree.name}: joint {joint.name!r} axis_sign must be +1 or -1")
                hinge_seen = True
            elif body.parent is not None or hinge_seen:
                raise ValueError(f"{tree.name}: slide joint {joint.name!r} must be on a root body, before its hinges")
        for joint in body.joints:
            if joint.range is not None and (len(joint.range) != 2 or not joint.range[0] <= joint.range[1]):
                raise ValueError(f"{tree.name}: joint {joint.name!r} range must be (lower, upper) with lower <= upper, "
                                 f"got {joint.range!r}")
        if body.mass < 0 or body.inertia < 0:
            raise ValueError(f"{tree.name}: body {body.name!r} has negative mass or inertia")
    for pc in tree.point_contacts:
        if pc.body not in seen:
            raise ValueError(f"{tree.name}: contact {pc.name!r} is on unknown body {pc.body!r}")


# ---------------------------------------------------------------------------------------
# MJCF export


def _f(x: float) -> str:
    return repr(float(x))


def to_mjcf(tree: PlanarTree, *, timestep: float = 0.001) -> str:
    """MJCF text of the same planar model, for MuJoCo (`mujoco.MjModel.from_xml_string`).

    Joint order, masses, inertias and gravity match the `RobotModel` exactly (tests compare
    mass matrices and bias forces). Each point contact becomes a sphere of its radius whose
    lowest point is the contact point when the body is upright; the ground is a plane at the
    first contact's `ground_height`. MuJoCo's contact model is its own (soft, default solref).
    """
    children: dict[str | None, list[Body]] = {}
    for body in tree.bodies:
        children.setdefault(body.parent, []).append(body)
    rotating: set[str] = set()
    contacts_by_body: dict[str, list[PointContact]] = {}
    for pc in tree.point_contacts:
        contacts_by_body.setdefault(pc.body, []).append(pc)
    ground = tree.point_contacts[0].ground_height if tree.point_contacts else 0.0

    lines = [
        f'<mujoco model={quoteattr(tree.name)}>',
        '  <compiler angle="radian" inertiafromgeom="false" autolimits="true"/>',
        f'  <option gravity="{_f(tree.gravity_x)} 0 {_f(-tree.gravity)}" timestep="{_f(timestep)}" integrator="implicitfast"/>',
        '  <worldbody>',
        f'    <geom name="floor" type="plane" size="0 0 1" pos="0 0 {_f(ground)}" contype="0" conaffinity="1"'
        ' friction="0 0.005 0.0001"/>',
    ]
    lines += [f"    {g}" for g in tree.world_geoms]
    actuators: list[str] = []

    def emit(body: Body, depth: int, parent_rotates: bool) -> None:
        pad = "  " * depth
        rotates = parent_rotates or any(j.kind == "hinge" for j in body.joints)
        if rotates:
            rotating.add(body.name)
        lines.append(f'{pad}<body name={quoteattr(body.name)} pos="{_f(body.pos[0])} 0 {_f(body.pos[1])}">')
        for j in body.joints:
            axis = {"slide_x": "1 0 0", "slide_z": "0 0 1", "hinge": f"0 {j.axis_sign} 0"}[j.kind]
            jtype = "hinge" if j.kind == "hinge" else "slide"
            extra = ""
            if j.stiffness:
                extra += f' stiffness="{_f(j.stiffness)}" springref="{_f(j.rest)}"'
            if j.damping:
                extra += f' damping="{_f(j.damping)}"'
            lines.append(f'{pad}  <joint name={quoteattr(j.name)} type="{jtype}" axis="{axis}"{extra}/>')
            if j.actuated:
                limit = "" if not np.isfinite(j.u_max) else f' ctrlrange="{_f(-j.u_max)} {_f(j.u_max)}"'
                actuators.append(f'    <motor name={quoteattr(j.name)} joint={quoteattr(j.name)} gear="1"{limit}/>')
        inertia = body.inertia
        if inertia <= 0:
            if rotates:
                raise ValueError(f"{tree.name}: rotating body {body.name!r} needs a positive inertia for MJCF")
            inertia = 1e-9  # never enters M: the body does not rotate
        lines.append(
            f'{pad}  <inertial pos="{_f(body.com[0])} 0 {_f(body.com[1])}" mass="{_f(body.mass)}"'
            f' diaginertia="{_f(inertia)} {_f(inertia)} {_f(inertia)}"/>'
        )
        if body.segment is not None:
            (x0, z0), (x1, z1) = body.segment
            lines.append(
                f'{pad}  <geom type="capsule" fromto="{_f(x0)} 0 {_f(z0)} {_f(x1)} 0 {_f(z1)}" size="0.01"'
                ' contype="0" conaffinity="0" mass="0"/>'
            )
        lines.extend(f"{pad}  {g}" for g in body.geoms)
        for pc in contacts_by_body.get(body.name, []):
            r = pc.radius if pc.radius > 0 else 1e-3
            lines.append(
                f'{pad}  <geom name={quoteattr(pc.name)} type="sphere" size="{_f(r)}"'
                f' pos="{_f(pc.point[0])} 0 {_f(pc.point[1] + r)}" contype="1" conaffinity="0"'
                f' friction="{_f(pc.mu)} 0.005 0.0001" mass="0"/>'
            )
        for child in children.get(body.name, []):
            emit(child, depth + 1, rotates)
        lines.append(f"{pad}</body>")

    for root in children.get(None, []):
        emit(root, 2, False)
    lines.append("  </worldbody>")
    if actuators:
        lines += ["  <actuator>", *actuators, "  </actuator>"]
    lines.append("</mujoco>")
    return "\n".join(lines) + "\n"
