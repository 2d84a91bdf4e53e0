"""The robot model contract: one frozen, symbolic description per robot.

Every simulator, the MPC and the plots derive their numbers from a `RobotModel`.
Units are SI throughout: metres, kilograms, seconds, radians, newtons.

Conventions
- Planar robots: the world is the x-z plane, z up, gravity along -z; v = dq/dt (nq == nv).
- 3D robots with a floating base (`floating_base=True`): z up, gravity along -z; q = (base
  position in the world (m), base orientation quaternion (x, y, z, w), joint angles), v = (base
  linear and angular velocity in the base frame, joint velocities), pinocchio's convention
  (robots/spatial.py). nq = nv + 1, dq/dt = G(q) v (`velocity_map`), and q moves on its
  manifold with `integrate(q, v, dt)`, never by q + v dt.
- Equation of motion: M(q) dv/dt + h(q, v) = B u + sum_i (Jn_i^T fn_i + Jt_i^T ft_i),
  where h = Coriolis/centrifugal + gravity + passive (joint springs and dampers).
- Contact i has a point p_i(q) = (x, z) (planar) or (x, y, z) (3D) on the robot and a flat
  surface at height `ground_height` below it. Its signed gap phi_i(q) = p_i,z(q) - ground_height
  (> 0 apart, < 0 penetrating). Jacobians map v to velocities: normal Jn_i = d phi_i / dq G(q)
  (1 x nv); tangent Jt_i (n_tangent x nv), the rows of the world x (and, in 3D, y) velocity
  of the point.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Mapping

import casadi as ca
import numpy as np


@dataclass(frozen=True, eq=False)
class Contact:
    """One unilateral contact of a robot with a flat surface.

    Attributes:
        name: unique name within the robot (e.g. "foot").
        point: CasADi SX vector, the contact point in metres as a function of q: (x, z) for
            planar robots, (x, y, z) for 3D ones.
        ground_height: height of the surface below the point, metres.
        mu: Coulomb friction coefficient (dimensionless, >= 0).
        stiffness: normal stiffness for compliant plants, N/m (0 = rigid only).
        damping: normal damping for compliant plants, N s/m.
        radius: radius of the foot sphere drawn/exported to MJCF, metres (contact
            geometry itself is the point).
        velocity: CasADi SX in (q, v), the world velocity (m/s) of the body's material point
            at the contact (a sphere's lowest point moves at its centre's velocity plus
            omega x (0, 0, -radius)), or None when that is the rate of `point` itself. The
            slip velocity of friction (`RobotModel.slip_jacobian`).
    """

    name: str
    point: ca.SX
    ground_height: float = 0.0
    mu: float = 0.0
    stiffness: float = 0.0
    damping: float = 0.0
    radius: float = 0.0
    velocity: ca.SX | None = None

    def __post_init__(self) -> None:
        if self.point.shape not in ((2, 1), (3, 1)):
            raise ValueError(f"contact {self.name!r}: point must be a 2-vector (x, z) or a 3-vector (x, y, z), "
                             f"got shape {self.point.shape}")
        if self.velocity is not None and self.velocity.shape != self.point.shape:
            raise ValueError(f"contact {self.name!r}: velocity must have the point's shape {self.point.shape}, "
                             f"got {self.velocity.shape}")
        for fname in ("mu", "stiffness", "damping", "radius"):
            value = getattr(self, fname)
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"contact {self.name!r}: {fname} must be finite and >= 0, got {value}")

    @property
    def gap(self) -> ca.SX:
        """Signed gap phi(q) in metres (> 0 apart)."""
        return self.point[-1] - self.ground_height


@dataclass(frozen=True, eq=False)
class RobotModel:
    """A robot, defined once, symbolically (CasADi SX in q and v).

    Build one with `robots.get_robot(name)`; never mutate it. Numeric, compiled
    functions come from `robots.numeric(model)`.

    Attributes:
        name: registry name, e.g. "hopper".
        q, v: SX symbols of the generalized coordinates (nq) and velocities (nv).
        q_names, u_names: human-readable names of coordinates and actuators.
        mass_matrix: SX (nv x nv), kg / kg m^2.
        bias: SX (nv), h(q, v) = Coriolis + gravity + passive, N / N m.
        passive: SX (nv), the joint spring and damper part of `bias`, k (q - rest) + b v
            (left-hand side: minus the force the springs and dampers apply).
        kinetic_energy, potential_energy: SX scalars, J (potential includes springs).
        B: numeric actuation matrix (nv x nu).
        contacts: the robot's contacts, in a fixed order.
        body_poses: SX, for drawing: planar robots (nb x 3) each body's origin (x, z) and pitch
            angle; 3D robots (nb x 12) each body's joint frame in the world, its origin (x, y, z)
            then its rotation matrix row by row.
        body_names: names of the rows of body_poses.
        gravity: magnitude of gravity, m/s^2, acting along -z.
        q0: a nominal configuration (e.g. standing), used as a default initial state.
        u_max: symmetric actuator limits |u| <= u_max, N or N m.
        params: the published or chosen physical parameters, for documentation and hashing.
        mjcf: the MJCF (MuJoCo XML) of the same model, for side-by-side simulation.
        q_min, q_max: the range (nq each, m or rad) a controller keeps each coordinate in;
            -inf / +inf (the default, None) means unlimited. The MPC keeps the finite ones
            (soft bounds); the plants do not enforce them and the MJCF does not export them.
        floating_base: True for a 3D robot whose first 7 coordinates are the base position and
            quaternion (module docstring); then nq = nv + 1 and `velocity_map` is not identity.
        forward_dynamics: None, or a function (tau, forces) -> dv/dt (SX, nv) of the articulated-
            body algorithm: tau the generalized forces (nv) besides the bias h, forces one world
            force (dim, N) per contact acting at its touching point (`touching_velocity`'s
            material point). The same accelerations as M^-1 (tau - h + J^T f) in far fewer
            operations (robots/spatial.py); the ESS plant's vector field uses it when given.
        controller_defaults: per controller name (e.g. "mpc"), the option values that controller
            starts from on this robot (its measured tuning); a scenario's controller_options
            override them. "safe" is the plant server's fallback when no command comes ("kp":
            its joint spring, N m/rad; bridge/server.py). Data only: no dynamics, compiled
            function or cache key reads it.
    """

    name: str
    q: ca.SX
    v: ca.SX
    q_names: tuple[str, ...]
    u_names: tuple[str, ...]
    mass_matrix: ca.SX
    bias: ca.SX
    passive: ca.SX
    kinetic_energy: ca.SX
    potential_energy: ca.SX
    B: np.ndarray
    contacts: tuple[Contact, ...]
    body_poses: ca.SX
    body_names: tuple[str, ...]
    gravity: float
    q0: np.ndarray
    u_max: np.ndarray
    params: Mapping[str, Any] = field(default_factory=dict)
    mjcf: str = ""
    q_min: np.ndarray | None = None
    q_max: np.ndarray | None = None
    floating_base: bool = False
    controller_defaults: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    forward_dynamics: Callable[[ca.SX, list], ca.SX] | None = None

    def __post_init__(self) -> None:
        nq, nv = self.q.numel(), self.v.numel()
        if nq != nv + (1 if self.floating_base else 0):
            raise ValueError(f"{self.name}: nq={nq}, nv={nv}: expected nq == nv for a planar robot, "
                             "nq == nv + 1 for a floating base (position, quaternion, joints)")
        dims = {c.point.shape[0] for c in self.contacts}
        if len(dims) > 1 or (self.contacts and (3 in dims) != self.floating_base):
            raise ValueError(f"{self.name}: contact points must be (x, z) for a planar robot and (x, y, z) for a "
                             f"floating base; got sizes {sorted(dims)} with floating_base={self.floating_base}")
        object.__setattr__(self, "B", np.asarray(self.B, dtype=np.float64).reshape(nv, len(self.u_names)))
        if self.mass_matrix.shape != (nv, nv):
            raise ValueError(f"{self.name}: mass_matrix has shape {self.mass_matrix.shape}, expected ({nv}, {nv})")
        if self.bias.shape != (nv, 1):
            raise ValueError(f"{self.name}: bias has shape {self.bias.shape}, expected ({nv}, 1)")
        if self.B.shape != (nv, len(self.u_names)):
            raise ValueError(f"{self.name}: B has shape {self.B.shape}, expected ({nv}, {len(self.u_names)})")
        if len(self.q_names) != nq:
            raise ValueError(f"{self.name}: {len(self.q_names)} q_names for nq={nq}")
        if self.q0.shape != (nq,):
            raise ValueError(f"{self.name}: q0 has shape {self.q0.shape}, expected ({nq},)")
        names = [c.name for c in self.contacts]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: duplicate contact names {names}")
        for fname, fill in (("q_min", -np.inf), ("q_max", np.inf)):
            value = getattr(self, fname)
            arr = np.full(nq, fill) if value is None else np.asarray(value, dtype=np.float64)
            if arr.shape != (nq,) or np.isnan(arr).any():
                raise ValueError(f"{self.name}: {fname} must be {nq} numbers (-inf/inf for no limit), got {value!r}")
            object.__setattr__(self, fname, arr)
        if np.any(self.q_min > self.q_max):
            bad = [n for n, lo, hi in zip(self.q_names, self.q_min, self.q_max) if lo > hi]
            raise ValueError(f"{self.name}: q_min > q_max for {bad}")
        if not (isinstance(self.controller_defaults, Mapping)
                and all(isinstance(k, str) and isinstance(v, Mapping) for k, v in self.controller_defaults.items())):
            raise ValueError(f"{self.name}: controller_defaults must map controller names to option mappings, got "
                             f"{self.controller_defaults!r}")
        object.__setattr__(self, "controller_defaults", {k: dict(v) for k, v in self.controller_defaults.items()})
        for fname in ("B", "q0", "u_max", "q_min", "q_max"):  # private read-only copies: the model is frozen
            arr = np.array(getattr(self, fname), dtype=np.float64)
            arr.setflags(write=False)
            object.__setattr__(self, fname, arr)

    @cached_property  # numel() is a SWIG call (~1 us); hot loops read the sizes every tick
    def nq(self) -> int:
        """Number of generalized coordinates."""
        return self.q.numel()

    @cached_property
    def nv(self) -> int:
        """Number of generalized velocities."""
        return self.v.numel()

    @property
    def nu(self) -> int:
        """Number of actuators (columns of B)."""
        return len(self.u_names)

    @property
    def nc(self) -> int:
        """Number of contacts."""
        return len(self.contacts)

    @property
    def dim(self) -> int:
        """Dimension of the world the robot moves in: 2 (x-z plane) or 3."""
        return 3 if self.floating_base else 2

    @property
    def n_tangent(self) -> int:
        """Tangent directions per contact: 1 (x) for planar robots, 2 (x, y) in 3D."""
        return self.dim - 1

    @cached_property
    def velocity_map(self) -> ca.SX:
        """SX (nq x nv): G(q) with dq/dt = G(q) v. Identity for planar robots; for a floating
        base the base-frame linear velocity is rotated to the world and the quaternion moves as
        d quat/dt = quat * (omega / 2, 0)."""
        if not self.floating_base:
            return ca.SX.eye(self.nv)
        from .spatial import quaternion_rate_map, quat_to_rot

        quat = self.q[3:7]
        G = ca.SX(self.nq, self.nv)
        G[0:3, 0:3] = quat_to_rot(quat)
        G[3:7, 3:6] = quaternion_rate_map(quat)
        G[7:, 6:] = ca.SX.eye(self.nv - 6)
        return G

    def integrate(self, q, v, dt):
        """q (+) v dt: q + v dt for planar robots, the SE(3) exponential of the base twist for a
        floating base (unit quaternion kept). Symbolic or numeric in, CasADi out."""
        if not self.floating_base:
            return q + v * dt
        from .spatial import integrate

        return integrate(q, v, dt)

    def contact_gaps(self) -> ca.SX:
        """SX (nc): signed gaps phi_i(q), metres."""
        return ca.vertcat(*[c.gap for c in self.contacts]) if self.contacts else ca.SX(0, 1)

    def contact_points(self) -> ca.SX:
        """SX (nc x dim): contact points (x, z) or (x, y, z), metres."""
        return ca.horzcat(*[c.point for c in self.contacts]).T if self.contacts else ca.SX(0, self.dim)

    def _velocity_jacobian(self, positions: ca.SX) -> ca.SX:
        """d positions / dq G(q): the map from v to the positions' rates."""
        J = ca.jacobian(positions, self.q)
        return J @ self.velocity_map if self.floating_base else J

    def normal_jacobian(self) -> ca.SX:
        """SX (nc x nv): rows Jn_i, the normal velocity of contact i is Jn_i v (m/s)."""
        return self._velocity_jacobian(self.contact_gaps()) if self.contacts else ca.SX(0, self.nv)

    def tangent_jacobian(self) -> ca.SX:
        """SX (nc n_tangent x nv): per contact (in order) the rows of its world x (and y, 3D)
        velocity, m/s per unit v."""
        if not self.contacts:
            return ca.SX(0, self.nv)
        rows = [c.point[k] for c in self.contacts for k in range(self.n_tangent)]
        return self._velocity_jacobian(ca.vertcat(*rows))

    def touching_velocity(self, contact: Contact) -> ca.SX:
        """SX (dim) in (q, v): the world velocity (m/s) of the body's material point at `contact`,
        `Contact.velocity`, or the rate of its point when that is a material point."""
        if contact.velocity is not None:
            return contact.velocity
        return self._velocity_jacobian(contact.point) @ self.v

    def slip_jacobian(self) -> ca.SX:
        """SX (nc n_tangent x nv): per contact (in order) the rows of the world x (and y, 3D)
        velocity of the body's material point at the contact (`touching_velocity`), m/s per unit
        v: the slip velocity friction acts on. Equal to `tangent_jacobian` for contacts whose
        point is a material point (planar robots); for a sphere foot it leaves out rolling."""
        if not self.contacts:
            return ca.SX(0, self.nv)
        return ca.vertcat(*[ca.jacobian(self.touching_velocity(c)[:self.n_tangent], self.v) for c in self.contacts])

    def contact_bias_accelerations(self) -> tuple[ca.SX, ca.SX]:
        """SX (nc), (nc): the contact "bias accelerations" dJn/dt v and dJt/dt v, m/s^2.

        The normal (tangential) acceleration of contact i is Jn_i dv/dt + (dJn_i/dt) v; the
        second term is d(Jn v)/dq dq/dt, derived symbolically (never by finite differences).
        Sizes nc and nc n_tangent.
        """
        if not self.contacts:
            return ca.SX(0, 1), ca.SX(0, 1)
        v, qdot = self.v, self.velocity_map @ self.v
        an = ca.jacobian(self.normal_jacobian() @ v, self.q) @ qdot
        at = ca.jacobian(self.tangent_jacobian() @ v, self.q) @ qdot
        return an, at

    def symbolic_functions(self) -> dict[str, ca.Function]:
        """The model's named CasADi Functions (the symbolic side of every numeric function).

        mass_matrix(q) -> M; bias(q, v) -> h; passive(q, v) -> tau_passive;
        contact_gap(q) -> phi; contact_jacobians(q) -> (Jn, Jt); contact_points(q) -> P (nc x 2);
        energy(q, v) -> [T, V]; body_poses(q) -> (nb x 3); heights(q) -> the contact gaps (nc),
        then (floating base) each body origin's height (nb), m: what the plants' invariants check;
        contact_bias_acc(q, v) -> (dJn/dt v, dJt/dt v); velocity_map(q) -> G (dq/dt = G v);
        integrate(q, v, dt) -> q (+) v dt.
        """
        q, v = self.q, self.v
        dt = ca.SX.sym("dt")
        return {
            "mass_matrix": ca.Function("mass_matrix", [q], [self.mass_matrix], ["q"], ["M"]),
            "bias": ca.Function("bias", [q, v], [self.bias], ["q", "v"], ["h"]),
            "passive": ca.Function("passive", [q, v], [self.passive], ["q", "v"], ["tau"]),
            "contact_gap": ca.Function("contact_gap", [q], [self.contact_gaps()], ["q"], ["phi"]),
            "contact_jacobians": ca.Function(
                "contact_jacobians", [q], [self.normal_jacobian(), self.tangent_jacobian()], ["q"], ["Jn", "Jt"]
            ),
            "contact_points": ca.Function("contact_points", [q], [self.contact_points()], ["q"], ["P"]),
            "energy": ca.Function(
                "energy", [q, v], [ca.vertcat(self.kinetic_energy, self.potential_energy)], ["q", "v"], ["TV"]
            ),
            "body_poses": ca.Function("body_poses", [q], [self.body_poses], ["q"], ["poses"]),
            "heights": ca.Function("heights", [q], [ca.vertcat(
                self.contact_gaps(), self.body_poses[:, 2] if self.floating_base else ca.SX(0, 1))], ["q"], ["h"]),
            "contact_bias_acc": ca.Function(
                "contact_bias_acc", [q, v], list(self.contact_bias_accelerations()), ["q", "v"], ["an", "at"]
            ),
            "velocity_map": ca.Function("velocity_map", [q], [self.velocity_map], ["q"], ["G"]),
            "integrate": ca.Function("integrate", [q, v, dt], [self.integrate(q, v, dt)], ["q", "v", "dt"], ["q_next"]),
        }


def check_vector(model: RobotModel, field_name: str, value: Any, size: int) -> np.ndarray:
    """Return `value` as a float64 vector of length `size`, or raise ValueError naming the problem.

    Used once at set-up by plants, the MPC and the bridge so that the real-time path can
    skip checks. `field_name` is the user-facing name ("q", "v", "u"...).
    """
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{model.name}: {field_name} must be numeric, got {value!r}") from exc
    if arr.ndim != 1 or arr.shape[0] != size:
        raise ValueError(
            f"{model.name}: {field_name} has shape {arr.shape}, expected ({size},) "
            f"[{field_name} order: {_names_for(model, field_name)}]"
        )
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        names = _names_for(model, field_name)
        which = ", ".join(f"{names[i] if i < len(names) else i}={arr[i]}" for i in bad)
        raise ValueError(f"{model.name}: {field_name} contains non-finite values ({which}); pass finite numbers")
    return arr


def _names_for(model: RobotModel, field_name: str) -> tuple[str, ...]:
    if field_name in ("u", "tau", "tau_ff"):
        return model.u_names
    return model.q_names
