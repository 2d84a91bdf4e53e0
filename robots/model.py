"""The robot model contract: one frozen, symbolic description per robot.

Every simulator, the MPC and the plots derive their numbers from a `RobotModel`.
Units are SI throughout: metres, kilograms, seconds, radians, newtons.

Conventions (planar robots)
- The world is the x-z plane, z up, gravity along -z.
- q has nq entries, v has nv entries; for every robot here v = dq/dt (nq == nv).
- Equation of motion: M(q) dv/dt + h(q, v) = B u + sum_i (Jn_i^T fn_i + Jt_i^T ft_i),
  where h = Coriolis/centrifugal + gravity + passive (joint springs and dampers).
- Contact i has a point p_i(q) = (x, z) on the robot and a flat surface at height
  `ground_height` below it. Its signed gap phi_i(q) = p_i,z(q) - ground_height
  (> 0 apart, < 0 penetrating), normal Jacobian Jn_i = d phi_i / dq (1 x nv) and
  tangent Jacobian Jt_i = d p_i,x / dq (1 x nv).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping

import casadi as ca
import numpy as np


@dataclass(frozen=True, eq=False)
class Contact:
    """One unilateral contact of a robot with a flat surface.

    Attributes:
        name: unique name within the robot (e.g. "foot").
        point: CasADi SX 2-vector, the contact point (x, z) in metres as a function of q.
        ground_height: height of the surface below the point, metres.
        mu: Coulomb friction coefficient (dimensionless, >= 0).
        stiffness: normal stiffness for compliant plants, N/m (0 = rigid only).
        damping: normal damping for compliant plants, N s/m.
        radius: radius of the foot sphere drawn/exported to MJCF, metres (contact
            geometry itself is the point).
    """

    name: str
    point: ca.SX
    ground_height: float = 0.0
    mu: float = 0.0
    stiffness: float = 0.0
    damping: float = 0.0
    radius: float = 0.0

    def __post_init__(self) -> None:
        if self.point.shape != (2, 1):
            raise ValueError(f"contact {self.name!r}: point must be a 2-vector (x, z), got shape {self.point.shape}")
        for fname in ("mu", "stiffness", "damping", "radius"):
            value = getattr(self, fname)
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"contact {self.name!r}: {fname} must be finite and >= 0, got {value}")

    @property
    def gap(self) -> ca.SX:
        """Signed gap phi(q) in metres (> 0 apart)."""
        return self.point[1] - self.ground_height


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
        body_poses: SX (nb x 3), each body's origin (x, z) and pitch angle, for drawing.
        body_names: names of the rows of body_poses.
        gravity: magnitude of gravity, m/s^2, acting along -z.
        q0: a nominal configuration (e.g. standing), used as a default initial state.
        u_max: symmetric actuator limits |u| <= u_max, N or N m.
        params: the published or chosen physical parameters, for documentation and hashing.
        mjcf: the MJCF (MuJoCo XML) of the same model, for side-by-side simulation.
        q_min, q_max: the range (nq each, m or rad) a controller keeps each coordinate in;
            -inf / +inf (the default, None) means unlimited. The MPC keeps the finite ones
            (soft bounds); the plants do not enforce them and the MJCF does not export them.
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

    def __post_init__(self) -> None:
        nq, nv = self.q.numel(), self.v.numel()
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

    def contact_gaps(self) -> ca.SX:
        """SX (nc): signed gaps phi_i(q), metres."""
        return ca.vertcat(*[c.gap for c in self.contacts]) if self.contacts else ca.SX(0, 1)

    def contact_points(self) -> ca.SX:
        """SX (nc x 2): contact points (x, z), metres."""
        return ca.horzcat(*[c.point for c in self.contacts]).T if self.contacts else ca.SX(0, 2)

    def normal_jacobian(self) -> ca.SX:
        """SX (nc x nv): rows d phi_i / dq (dimensionless for slides, m/rad for hinges)."""
        return ca.jacobian(self.contact_gaps(), self.q) if self.contacts else ca.SX(0, self.nv)

    def tangent_jacobian(self) -> ca.SX:
        """SX (nc x nv): rows d p_i,x / dq, the tangential velocity map."""
        if not self.contacts:
            return ca.SX(0, self.nv)
        return ca.jacobian(ca.vertcat(*[c.point[0] for c in self.contacts]), self.q)

    def contact_bias_accelerations(self) -> tuple[ca.SX, ca.SX]:
        """SX (nc), (nc): the contact "bias accelerations" dJn/dt v and dJt/dt v, m/s^2.

        The normal (tangential) acceleration of contact i is Jn_i dv/dt + (dJn_i/dt) v; the
        second term is d(Jn v)/dq v, derived symbolically (never by finite differences).
        """
        if not self.contacts:
            return ca.SX(0, 1), ca.SX(0, 1)
        v = self.v
        an = ca.jacobian(self.normal_jacobian() @ v, self.q) @ v
        at = ca.jacobian(self.tangent_jacobian() @ v, self.q) @ v
        return an, at

    def symbolic_functions(self) -> dict[str, ca.Function]:
        """The model's named CasADi Functions (the symbolic side of every numeric function).

        mass_matrix(q) -> M; bias(q, v) -> h; passive(q, v) -> tau_passive;
        contact_gap(q) -> phi; contact_jacobians(q) -> (Jn, Jt); contact_points(q) -> P (nc x 2);
        energy(q, v) -> [T, V]; body_poses(q) -> (nb x 3);
        contact_bias_acc(q, v) -> (dJn/dt v, dJt/dt v), each (nc).
        """
        q, v = self.q, self.v
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
            "contact_bias_acc": ca.Function(
                "contact_bias_acc", [q, v], list(self.contact_bias_accelerations()), ["q", "v"], ["an", "at"]
            ),
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
