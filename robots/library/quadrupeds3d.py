"""The 3D quadrupeds of the example-robot-data package: go1, a1, solo12 (data, one builder).

Each row of QUADRUPEDS is the settings the URDF does not carry: the foot spheres' radius and
friction, the compliant plants' contact stiffness and damping, the standing and lying joint
poses (rad, per leg hip/abduction, thigh/hip flexion, calf/knee), torque limits where the
URDF's are placeholders (solo12's 1000 N m; its motors give about 2.7 N m), and the stiffness
of the plant server's safe command (`controller_defaults["safe"]["kp"]`, bridge/server.py: 40
N m/rad keeps each of them standing, on ESS and MuJoCo, when its MPC dies mid-trot; with
damping alone the body sinks below the ground: go1 and a1 past the plants' limit within 0.6 s,
solo12 2.5 cm on ESS and past the limit on MuJoCo after 2.9 s). Everything else
(masses, inertias, joint placements and axes, joint and torque limits) is read from the URDF.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..floating import FootContacts, build_floating_robot
from ..urdf import load_urdf_tree


@dataclass(frozen=True)
class QuadrupedSpec:
    """The settings of one URDF quadruped (module docstring). Poses are 12 joint angles, rad."""

    feet: FootContacts
    stance: tuple
    lying: tuple
    u_max: float | None = None  # N m, replaces the URDF's torque limits when they are placeholders
    safe_kp: float = 40.0  # N m/rad, the plant server's safe command (module docstring)


_GO1_LEG_STAND, _GO1_LEG_LIE = (0.0, 0.9, -1.8), (0.0, 1.15, -2.7)
QUADRUPEDS = {
    "go1": QuadrupedSpec(FootContacts(radius=0.02, mu=0.8, stiffness=2.0e4, damping=300.0),
                         stance=_GO1_LEG_STAND * 4, lying=_GO1_LEG_LIE * 4),
    "a1": QuadrupedSpec(FootContacts(radius=0.02, mu=0.8, stiffness=2.0e4, damping=300.0),
                        stance=_GO1_LEG_STAND * 4, lying=(0.0, 1.1, -2.6) * 4),
    "solo12": QuadrupedSpec(FootContacts(radius=0.016, mu=0.8, stiffness=4.0e3, damping=60.0),
                            stance=(0.0, 0.8, -1.6) * 2 + (0.0, -0.8, 1.6) * 2,
                            lying=(0.0, 1.5, -3.0) * 2 + (0.0, -1.5, 3.0) * 2, u_max=2.7),
}


def build_quadruped(name: str, **overrides):
    """The `RobotModel` of QUADRUPEDS[name]; overrides replace fields of its FootContacts
    (radius, mu, stiffness, damping)."""
    if name not in QUADRUPEDS:
        raise ValueError(f"unknown URDF quadruped {name!r}; available: {', '.join(QUADRUPEDS)}")
    spec = QUADRUPEDS[name]
    unknown = set(overrides) - set(FootContacts.__dataclass_fields__)
    if unknown:
        raise ValueError(f"{name}: unknown parameters {sorted(unknown)}; valid: {list(FootContacts.__dataclass_fields__)}")
    feet = FootContacts(**{**spec.feet.__dict__, **overrides})
    tree = load_urdf_tree(name)
    if spec.u_max is not None:
        from dataclasses import replace

        tree = replace(tree, u_max=np.full(tree.nv - 6, spec.u_max))
    return build_floating_robot(tree, feet, stance=np.array(spec.stance),
                                params={"poses": {"lying": list(spec.lying)}, "u_max_override": spec.u_max},
                                controller_defaults={"safe": {"kp": spec.safe_kp}})


def go1(**overrides):
    """Unitree Go1 (12 joints, 13.1 kg) from example-robot-data's go1.urdf."""
    return build_quadruped("go1", **overrides)


def a1(**overrides):
    """Unitree A1 (12 joints, 13.7 kg) from example-robot-data's a1.urdf."""
    return build_quadruped("a1", **overrides)


def solo12(**overrides):
    """ODRI Solo12 (12 joints, 2.5 kg) from example-robot-data's solo12.urdf."""
    return build_quadruped("solo12", **overrides)
