"""Floating-base kinematic trees from URDF files, read with pinocchio's parser.

    tree = load_urdf_tree("go1")              # a robot of the example-robot-data package, or a path
    dyn = spatial.build_dynamics(tree.bodies, tree.feet, tree.nq, tree.nv)

pinocchio parses the file (and merges the links on fixed joints into their parents); this
module copies its numbers (joint placements, axes, masses, centres of mass, inertias, the
feet's frames, limits) into robots/spatial.py's plain description, from which CasADi builds
the symbolic dynamics, and writes the same tree as MJCF for MuJoCo (`to_mjcf`; MuJoCo 4.0
cannot import go1.urdf itself). Issue 27 turns these trees into `RobotModel`s for the plants
and the MPC; today they serve the symbolic dynamics and their cross-checks against pinocchio
and MuJoCo (tests/test_spatial.py).
"""
from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .planar import _f  # the MJCF number format, shared
from .rotations import rotation_matrix
from .spatial import REVOLUTE_AXES, Body, Frame, gravity_vector

# The quadrupeds of the example-robot-data package: URDF file and the names of the foot frames.
EXAMPLE_ROBOTS = {
    "go1": ("go1_description/urdf/go1.urdf", ("FL_foot", "FR_foot", "RL_foot", "RR_foot")),
    "a1": ("a1_description/urdf/a1.urdf", ("FL_foot", "FR_foot", "RL_foot", "RR_foot")),
    "solo12": ("solo_description/robots/solo12.urdf", ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")),
    "go2": ("go2_description/urdf/go2.urdf", ("FL_foot", "FR_foot", "RL_foot", "RR_foot")),
    "anymal_c": ("anymal_c_simple_description/urdf/anymal.urdf", ("LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT")),
}


@dataclass(frozen=True)
class UrdfTree:
    """A floating-base tree read from a URDF: bodies and foot frames (robots/spatial.py), sizes,
    joint names, position limits (rad) and torque limits (N m) of the actuated joints, total
    mass (kg), the file it came from, and the placement of its IMU frame on the base (a frame
    named like "imu" fixed to the base), if it has one."""

    name: str
    bodies: tuple[Body, ...]
    feet: tuple[Frame, ...]
    nq: int
    nv: int
    joint_names: tuple[str, ...]
    q_min: np.ndarray
    q_max: np.ndarray
    u_max: np.ndarray
    mass: float
    path: Path
    imu: tuple | None = None  # (rotation (3, 3), position (3,) m) of the URDF's IMU frame on the base, if it has one


def example_robot_path(relative: str) -> Path:
    """Absolute path of a file inside the installed example-robot-data package."""
    try:
        files = importlib.metadata.files("example-robot-data") or []
    except importlib.metadata.PackageNotFoundError:
        raise ValueError("the 3D robots need the example-robot-data package: pip install example-robot-data "
                         "(it is in this project's dev extra)") from None
    for f in files:
        if str(f).endswith(relative):
            return Path(f.locate())
    raise ValueError(f"example-robot-data has no {relative}")


def load_urdf_tree(robot: str, feet: tuple[str, ...] | None = None) -> UrdfTree:
    """The tree of `robot`: a name of EXAMPLE_ROBOTS or a path to a URDF file (then `feet`, the
    names of its foot frames, is required). The base becomes a free-flyer joint."""
    try:
        import pinocchio as pin
    except ImportError:
        raise ValueError("the 3D robots need pinocchio's URDF parser: pip install pin (it is in this project's "
                         "dev extra)") from None

    if robot in EXAMPLE_ROBOTS:
        relative, default_feet = EXAMPLE_ROBOTS[robot]
        path, feet = example_robot_path(relative), feet or default_feet
    else:
        path = Path(robot)
        if not path.is_file():
            raise ValueError(f"robot {robot!r}: not one of {sorted(EXAMPLE_ROBOTS)} and not a URDF file")
        if not feet:
            raise ValueError(f"robot {robot!r}: name its foot frames (feet=...)")
    model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    bodies = []
    for i in range(1, model.njoints):
        kind_name = model.joints[i].shortname()
        if kind_name == "JointModelFreeFlyer":
            kind, axis = "free", (0.0, 0.0, 0.0)
        elif kind_name in REVOLUTE_AXES:
            kind, axis = "revolute", REVOLUTE_AXES[kind_name]
        elif kind_name == "JointModelRevoluteUnaligned":
            kind, axis = "revolute", tuple(float(x) for x in model.joints[i].extract().axis)
        else:
            raise ValueError(f"{path.name}: joint {model.names[i]!r} is a {kind_name}; supported: free flyer, "
                             "revolute")
        X, inertia = model.jointPlacements[i], model.inertias[i]
        bodies.append(Body(model.names[i], int(model.parents[i]) - 1, kind, axis,
                           (X.rotation.copy(), X.translation.copy()), float(inertia.mass),
                           tuple(inertia.lever), tuple(map(tuple, inertia.inertia))))
    frames = []
    for name in feet:
        if not model.existFrame(name):
            raise ValueError(f"{path.name}: no frame {name!r}; frames: {[f.name for f in model.frames]}")
        fr = model.frames[model.getFrameId(name)]
        frames.append(Frame(name, int(fr.parentJoint) - 1, (fr.placement.rotation.copy(), fr.placement.translation.copy())))
    imu = next(((fr.placement.rotation.copy(), fr.placement.translation.copy()) for fr in model.frames
                if "imu" in fr.name.lower() and fr.parentJoint == 1), None)
    return UrdfTree(robot if robot in EXAMPLE_ROBOTS else path.stem, tuple(bodies), tuple(frames), model.nq, model.nv,
                    tuple(model.names[2:]), np.array(model.lowerPositionLimit[7:]),
                    np.array(model.upperPositionLimit[7:]), np.array(model.effortLimit[6:]),
                    float(sum(model.inertias[i].mass for i in range(model.njoints))), path, imu)


def _quat_wxyz(R: np.ndarray) -> str:
    """MJCF quaternion (w x y z) of a rotation matrix."""
    from scipy.spatial.transform import Rotation

    x, y, z, w = Rotation.from_matrix(R).as_quat()
    return " ".join(_f(c) for c in (w, x, y, z))


def to_mjcf(tree: UrdfTree, *, foot_radius: float = 0.02, mu: float = 0.8, timestep: float = 0.001,
            gravity=9.81, stiffness: float | None = None) -> str:
    """MJCF text of the tree for MuJoCo: the same bodies, joints (a free joint for the base,
    hinges), masses, centres of mass and full inertias as the symbolic model (tests compare
    MuJoCo's M and bias forces with ours), a motor per actuated joint (torque limits from the
    URDF), a sphere of `foot_radius` (m) centred on each foot frame, and a ground plane at z = 0.
    Friction cones are elliptic (isotropic, as the plants' Coulomb law; MuJoCo's default
    pyramid is not). gravity: a number (along -z) or a vector (`spatial.gravity_vector`), m/s^2.
    stiffness (N/m): each foot's contact is that spring in MuJoCo too (`with_contact_springs`; the
    damping is not matched there); None leaves MuJoCo's default contact.

    MuJoCo's free joint differs from ours in q and v: its quaternion is (w, x, y, z), and its
    linear velocity is in the world frame (ours: base frame); see `mujoco_state`.
    """
    from xml.sax.saxutils import quoteattr

    children: dict[int, list[int]] = {}
    for i, b in enumerate(tree.bodies):
        children.setdefault(b.parent, []).append(i)
    feet: dict[int, list] = {}
    for fr in tree.feet:
        feet.setdefault(fr.body, []).append(fr)
    lines = [
        f"<mujoco model={quoteattr(tree.name)}>",
        '  <compiler angle="radian" inertiafromgeom="false" autolimits="true"/>',
        f'  <option gravity="{" ".join(map(_f, gravity_vector(gravity)))}" timestep="{_f(timestep)}"'
        ' integrator="implicitfast" cone="elliptic"/>',
        "  <worldbody>",
        f'    <geom name="floor" type="plane" size="0 0 1" friction="{_f(mu)} 0.005 0.0001"/>',
    ]
    motors = []

    def emit(i: int, depth: int) -> None:
        b, pad = tree.bodies[i], "  " * depth
        R, p = b.placement
        lines.append(f'{pad}<body name={quoteattr(b.name)} pos="{" ".join(map(_f, p))}" quat="{_quat_wxyz(R)}">')
        if b.kind == "free":
            lines.append(f"{pad}  <freejoint name={quoteattr(b.name)}/>")
        else:
            lines.append(f'{pad}  <joint name={quoteattr(b.name)} type="hinge" axis="{" ".join(map(_f, b.axis))}"/>')
            k = tree.joint_names.index(b.name)
            motors.append(f'    <motor name={quoteattr(b.name)} joint={quoteattr(b.name)} gear="1"'
                          f' ctrlrange="{_f(-tree.u_max[k])} {_f(tree.u_max[k])}"/>')
        I = np.array(b.inertia)
        lines.append(f'{pad}  <inertial pos="{" ".join(map(_f, b.com))}" mass="{_f(b.mass)}" fullinertia="'
                     f'{_f(I[0, 0])} {_f(I[1, 1])} {_f(I[2, 2])} {_f(I[0, 1])} {_f(I[0, 2])} {_f(I[1, 2])}"/>')
        for fr in feet.get(i, []):
            lines.append(f'{pad}  <geom name={quoteattr(fr.name)} type="sphere" size="{_f(foot_radius)}"'
                         f' pos="{" ".join(map(_f, fr.placement[1]))}" friction="{_f(mu)} 0.005 0.0001" mass="0"/>')
        for child in children.get(i, []):
            emit(child, depth + 1)
        lines.append(f"{pad}</body>")

    for root in children.get(-1, []):
        emit(root, 2)
    lines += ["  </worldbody>", "  <actuator>", *motors, "  </actuator>", "</mujoco>"]
    text = "\n".join(lines) + "\n"
    return text if stiffness is None else with_contact_springs(text, [fr.name for fr in tree.feet], stiffness)


# MuJoCo's impedance of the feet's contacts (solimp d, constant): the matched spring below holds for any d
CONTACT_IMPEDANCE = 0.95
# solref's damping s_b (1/s): MuJoCo's default rate, 2 / timeconst (0.02 s); its friction rows share it
CONTACT_DAMPING_RATE = 100.0


def with_contact_springs(mjcf: str, feet: list[str], stiffness: float) -> str:
    """`mjcf` with each foot geom's contact a spring of `stiffness` (N/m) in MuJoCo, as the
    compliant plants' (ESS, NMDP) normal force -k phi: the same resting penetration.

    MuJoCo's soft contact (docs: Computation, "Soft constraints") gives at a penetration r and
    normal velocity v, with impedance d and its diagonal approximation D of the contact's inverse
    mass (body_invweight0: constant for the model), the force -(s r + s_b v) / ((1-d) D) when
    solref = (-s, -s_b) (MuJoCo's stiffness K = s / d^2 and damping B = s_b / d, regulariser
    R = (1 - d) / d D). So s = (1-d) D k and a constant d (solimp dmin = dmax) make the
    resting force exactly k r whatever the robot's mass.

    The damping is not matched: solref's damping is also the friction rows' only velocity term, and
    a foot slides at about F_t / (impratio (s_b / ((1-d) D))) under a tangential load F_t. With
    s_b = (1-d) D b (go1's b: 300 N s/m) a box on an incline crept 3-5 mm/s where MuJoCo's
    default crept 1.2. s_b stays MuJoCo's default rate, CONTACT_DAMPING_RATE. priority="1" makes the foot's parameters (not the floor's) the
    contact's. Without the mujoco package (only MuJoCo reads this text) `mjcf` is returned
    unchanged."""
    try:
        import mujoco
    except ImportError:
        return mjcf
    model = mujoco.MjModel.from_xml_string(mjcf)
    d = CONTACT_IMPEDANCE
    for name in feet:
        gid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name)
        if gid < 0:
            raise ValueError(f"the MJCF has no foot geom {name!r}")
        inv_mass = float(model.body_invweight0[model.geom_bodyid[gid], 0])
        attrs = (f' solref="{_f(-(1 - d) * inv_mass * stiffness)} {_f(-CONTACT_DAMPING_RATE)}"'
                 f' solimp="{_f(d)} {_f(d)} 0.001 0.5 2" priority="1"')
        head = f'<geom name="{name}" type="sphere"'
        if mjcf.count(head) != 1:
            raise ValueError(f"the MJCF's foot geom {name!r} is not written as this function expects")
        mjcf = mjcf.replace(head, head + attrs)
    return mjcf


def mujoco_state(q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(qpos, qvel) of MuJoCo for our (q, v): quaternion (x, y, z, w) -> (w, x, y, z), base
    linear velocity from the base frame to the world frame."""
    qpos, qvel = np.array(q, dtype=float), np.array(v, dtype=float)
    x, y, z, w = q[3:7]
    qpos[3:7] = (w, x, y, z)
    qvel[0:3] = rotation_matrix(q[3:7]) @ v[0:3]
    return qpos, qvel


@dataclass(frozen=True)
class VisualMesh:
    """One visual mesh of a URDF: the body it moves with (index into UrdfTree.bodies), its
    placement (R, p) in that body's joint frame, and its triangles: vertices (V x 3, m, scaled)
    and faces (F x 3 vertex indices)."""

    body: int
    placement: tuple
    vertices: np.ndarray
    faces: np.ndarray


def visual_meshes(robot: str) -> list[VisualMesh]:
    """The visual meshes of `robot` (a name of EXAMPLE_ROBOTS), as pinocchio's URDF parser loads
    them (its package path is the share folder of example-robot-data); geometries that are not
    meshes (boxes, cylinders...) are left out. For drawing only (launch/view.py)."""
    import pinocchio as pin

    if robot not in EXAMPLE_ROBOTS:
        raise ValueError(f"visual meshes come from example-robot-data's robots {sorted(EXAMPLE_ROBOTS)}, "
                         f"not {robot!r}")
    path = example_robot_path(EXAMPLE_ROBOTS[robot][0])
    share = next(p for p in path.parents if p.name == "share")  # package://example-robot-data/... resolves here
    model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    geometry = pin.buildGeomFromUrdf(model, str(path), pin.GeometryType.VISUAL, package_dirs=[str(share)])
    out = []
    for obj in geometry.geometryObjects:
        geo = obj.geometry
        if not hasattr(geo, "num_tris") or not geo.num_tris:
            continue
        vertices = np.array(geo.vertices(), dtype=float).reshape(-1, 3) * np.asarray(obj.meshScale)
        faces = np.array([[t[0], t[1], t[2]] for t in (geo.tri_indices(i) for i in range(geo.num_tris))],
                         dtype=np.int64)
        out.append(VisualMesh(int(obj.parentJoint) - 1, (obj.placement.rotation.copy(),
                                                          obj.placement.translation.copy()), vertices, faces))
    return out
