"""Floating-base kinematic trees from URDF files, read with pinocchio's parser.

    tree = load_urdf_tree("go1")              # a robot of the example-robot-data package, or a path
    dyn = spatial.build_dynamics(tree.bodies, tree.feet, tree.nq, tree.nv)

pinocchio parses the file (and merges the links on fixed joints into their parents); this
module copies its numbers (joint placements, axes, masses, centres of mass, inertias, the
feet's frames, limits) into robots/spatial.py's plain description, from which CasADi builds
the symbolic dynamics. Issue 27 turns these trees into `RobotModel`s for the plants and the
MPC; today they serve the symbolic dynamics and their cross-check against pinocchio.
"""
from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .spatial import REVOLUTE_AXES, Body, Frame

# The quadrupeds of the example-robot-data package: URDF file and the names of the foot frames.
EXAMPLE_ROBOTS = {
    "go1": ("go1_description/urdf/go1.urdf", ("FL_foot", "FR_foot", "RL_foot", "RR_foot")),
    "a1": ("a1_description/urdf/a1.urdf", ("FL_foot", "FR_foot", "RL_foot", "RR_foot")),
    "solo12": ("solo_description/robots/solo12.urdf", ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")),
}


@dataclass(frozen=True)
class UrdfTree:
    """A floating-base tree read from a URDF: bodies and foot frames (robots/spatial.py), sizes,
    joint names, position limits (rad) and torque limits (N m) of the actuated joints, total
    mass (kg), the file it came from."""

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
    import pinocchio as pin

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
    return UrdfTree(robot if robot in EXAMPLE_ROBOTS else path.stem, tuple(bodies), tuple(frames), model.nq, model.nv,
                    tuple(model.names[2:]), np.array(model.lowerPositionLimit[7:]),
                    np.array(model.upperPositionLimit[7:]), np.array(model.effortLimit[6:]),
                    float(sum(model.inertias[i].mass for i in range(model.njoints))), path)
