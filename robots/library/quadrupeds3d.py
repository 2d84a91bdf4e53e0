"""The 3D quadrupeds of the example-robot-data package: go1, a1, solo12, go2, anymal_c (data,
one builder).

Each row of QUADRUPEDS is the settings the URDF does not carry: the foot spheres' radius and
friction, the compliant plants' contact stiffness and damping, the standing and lying joint
poses (rad, three per leg, legs and joints in the URDF tree's order: hip abduction, hip
flexion, knee), torque limits where the URDF's are placeholders (solo12's 1000 N m; its motors
give about 2.7 N m), and the stiffness of the plant server's safe command
(`controller_defaults["safe"]["kp"]`, bridge/server.py: 40 N m/rad keeps go1, a1 and solo12
standing, on ESS and MuJoCo, when its MPC dies mid-trot; with damping alone the body sinks
below the ground: go1 and a1 past the plants' limit within 0.6 s, solo12 2.5 cm on ESS and
past the limit on MuJoCo after 2.9 s). Everything else (masses, inertias, joint placements and
axes, joint and torque limits) is read from the URDF.

go2 and anymal_c take go1 as the reference and scale it (m: the URDF's total mass; go1 13.10
kg, go2 16.09 kg, anymal_c 52.13 kg):

- contact stiffness k proportional to m, so that the static sink on four feet, m g / (4 k), is
  go1's 1.61 mm (2.0e4 N/m): go2 2.5e4 N/m (1.58 mm), anymal_c 8.0e4 N/m (1.60 mm); damping b
  proportional to m too (go1's b / m = 23 /s): go2 370, anymal_c 1200 N s/m. Same k / m and
  b / m: the same contact frequency and damping ratio (0.59) as go1's.
- safe_kp proportional to the largest joint torque of the stance (the stance feed-forward at
  q0: go1 5.23, go2 6.43, anymal_c 27.2 N m), so that the spring sags by go1's 0.13 rad under
  it: go2 50 (49), anymal_c 200 (208) N m/rad. Held by the spring alone from q0 (zero
  feed-forward, 1 N m s/rad damping), 3 s: go2 0.287 -> 0.258 m on ESS, 0.251 m on MuJoCo (go1
  0.285 -> 0.256 and 0.250 m), anymal_c 0.570 -> 0.556 m on ESS (its feet stick; 0.555 m after
  10 s) and 0.538 m on MuJoCo (whose feet creep outward: 0.506 m after 10 s).
- go2: foot radius 0.022 m, the sphere of MuJoCo Menagerie's go2.xml (the URDF's foot is a
  convex mesh reaching 23 mm below the foot frame). Poses go1's: standing (0, 0.9, -1.8) per
  leg (also Menagerie's "home" keyframe), base 0.287 m; lying (0, 1.15, -2.7) (knee limit
  -2.72), base 0.113 m, every collision body but the feet >= 4 mm above the ground. Torque
  limits the URDF's (23.7, 23.7, 45.4 N m: the motors').
- anymal_c: legs LF, LH, RF, RH (the URDF tree's order), foot frames LF_FOOT...; foot radius
  0.03 m, the URDF's foot sphere, whose centre is 22.5 mm up the shank from LF_FOOT (ours is
  centred on the frame, so the robot stands 22.5 mm taller than on the URDF's sphere). Its
  knees are X-shaped: the front knees bend backwards, the hind ones forwards, so hip flexion
  and knee have opposite signs front and hind. Standing: front (0, 0.4, -0.8), hind (0, -0.4,
  0.8), the default joint angles of legged_gym's and IsaacGymEnvs' ANYmal C; base 0.570 m,
  knees 0.11 m inside the hips. Lying: front (0, 1.45, -2.65), hind (0, -1.45, 2.65), base
  0.105 m, the body's box 15 mm above the ground, every collision body but the foot spheres
  >= 8 mm above it. Torque limits the URDF's 80 N m (the drives'); its hip-flexion and knee
  position limits are +-3 pi placeholders, kept (nothing here relies on them).
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
    "go2": QuadrupedSpec(FootContacts(radius=0.022, mu=0.8, stiffness=2.5e4, damping=370.0),
                         stance=_GO1_LEG_STAND * 4, lying=_GO1_LEG_LIE * 4, safe_kp=50.0),
    "anymal_c": QuadrupedSpec(FootContacts(radius=0.03, mu=0.8, stiffness=8.0e4, damping=1200.0),
                              stance=((0.0, 0.4, -0.8) + (0.0, -0.4, 0.8)) * 2,
                              lying=((0.0, 1.45, -2.65) + (0.0, -1.45, 2.65)) * 2, safe_kp=200.0),
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


def go2(**overrides):
    """Unitree Go2 (12 joints, 16.1 kg) from example-robot-data's go2_description."""
    return build_quadruped("go2", **overrides)


def anymal_c(**overrides):
    """ANYbotics ANYmal C (12 joints, 52.1 kg) from example-robot-data's anymal_c_simple_description."""
    return build_quadruped("anymal_c", **overrides)
