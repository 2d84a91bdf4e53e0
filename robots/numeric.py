"""Numeric (compiled) functions of a robot, generated from its symbolic model.

    fns = numeric(get_robot("hopper"))
    M = fns.mass_matrix(q)              # validated Python call, ~microseconds
    fns.raw["mass_matrix"].cfunc         # ctypes (in*, out*) for numba @njit loops

The Python-level methods check their inputs (length, finiteness) and name the bad field;
hot loops call `raw[...]` directly after validating once at set-up.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .codegen import CompiledFunction, CompiledLibrary, compile_functions, default_cache_dir
from .model import RobotModel, check_vector

_MEMO: dict[tuple[int, str], "NumericRobot"] = {}


class NumericRobot:
    """Compiled numeric functions of one `RobotModel` (see `RobotModel.symbolic_functions`).

    Attributes:
        model: the symbolic model it was generated from.
        library: the loaded shared library (path, whether it was built now, build time).
        raw: name -> CompiledFunction, flat and unchecked, for compiled loops.
    """

    def __init__(self, model: RobotModel, library: CompiledLibrary) -> None:
        self.model = model
        self.library = library
        self.raw: dict[str, CompiledFunction] = library.functions

    def _q(self, q) -> np.ndarray:
        return check_vector(self.model, "q", q, self.model.nq)

    def _v(self, v) -> np.ndarray:
        return check_vector(self.model, "v", v, self.model.nv)

    def mass_matrix(self, q) -> np.ndarray:
        """M(q), (nv x nv), kg or kg m^2."""
        nv = self.model.nv
        return self.raw["mass_matrix"](self._q(q)).reshape(nv, nv)

    def bias(self, q, v) -> np.ndarray:
        """h(q, v) = Coriolis + gravity + passive, (nv), N or N m."""
        return self.raw["bias"](self._q(q), self._v(v))

    def passive(self, q, v) -> np.ndarray:
        """The joint spring/damper part of h, (nv), N or N m: k (q - rest) + b v (minus the force they apply)."""
        return self.raw["passive"](self._q(q), self._v(v))

    def contact_gap(self, q) -> np.ndarray:
        """Signed contact gaps phi(q), (nc), m (> 0 apart)."""
        return self.raw["contact_gap"](self._q(q))

    def contact_jacobians(self, q) -> tuple[np.ndarray, np.ndarray]:
        """(Jn, Jt): normal (nc x nv) and tangential (nc n_tangent x nv) contact Jacobians."""
        m = self.model
        Jn, Jt = self.raw["contact_jacobians"](self._q(q))
        return Jn.reshape(m.nc, m.nv), Jt.reshape(m.nc * m.n_tangent, m.nv)

    def contact_points(self, q) -> np.ndarray:
        """Contact points (nc x dim), (x, z) or (x, y, z) in m."""
        return self.raw["contact_points"](self._q(q)).reshape(self.model.nc, self.model.dim)

    def configuration_rate(self, q, v) -> np.ndarray:
        """dq/dt = G(q) v, (nq): v itself for planar robots; for a floating base the world-frame
        base velocity and the quaternion's rate."""
        m = self.model
        return self.raw["velocity_map"](self._q(q)).reshape(m.nq, m.nv) @ self._v(v)

    def integrate(self, q, v, dt: float) -> np.ndarray:
        """q (+) v dt (`RobotModel.integrate`), (nq): on the manifold for a floating base."""
        return self.raw["integrate"](self._q(q), self._v(v), np.array([float(dt)]))

    def energy(self, q, v) -> tuple[float, float]:
        """(kinetic, potential) energy in J; potential includes gravity and joint springs."""
        tv = self.raw["energy"](self._q(q), self._v(v))
        return float(tv[0]), float(tv[1])

    def body_poses(self, q) -> np.ndarray:
        """Body poses for drawing: planar (nb x 3) x (m), z (m), angle about +y (rad); 3D
        (nb x 12) the joint frames' origins (x, y, z) in m, then their rotation matrices row by row."""
        return self.raw["body_poses"](self._q(q)).reshape(len(self.model.body_names), -1)

    def contact_bias_accelerations(self, q, v) -> tuple[np.ndarray, np.ndarray]:
        """(dJn/dt v, dJt/dt v), (nc) and (nc n_tangent), m/s^2: the velocity-product part of
        the contact points' normal and tangential accelerations."""
        an, at = self.raw["contact_bias_acc"](self._q(q), self._v(v))
        return np.atleast_1d(an), np.atleast_1d(at)

    def forward_dynamics(self, q, v, u=None) -> np.ndarray:
        """Contact-free acceleration dv/dt = M^-1 (B u - h), (nv), for torques u (nu, N m)."""
        q, v = self._q(q), self._v(v)
        u = np.zeros(self.model.nu) if u is None else check_vector(self.model, "u", u, self.model.nu)
        return np.linalg.solve(self.mass_matrix(q), self.model.B @ u - self.raw["bias"](q, v))


def numeric(model: RobotModel, *, cache_dir: Path | str | None = None, verbose: bool = True) -> NumericRobot:
    """Compiled numeric functions for `model` (compiled once per content hash, then loaded).

    Args:
        model: a RobotModel from `robots.get_robot`.
        cache_dir: code-generation cache (default `$LEGMPC_CACHE_DIR` or ~/.cache/legmpc).
        verbose: say so on stderr when compiling.
    """
    folder = str(Path(cache_dir) if cache_dir is not None else default_cache_dir())
    key = (id(model), folder)
    if key not in _MEMO or _MEMO[key].model is not model:  # ids can be reused after GC
        lib = compile_functions(
            list(model.symbolic_functions().values()), lib_name=model.name, cache_dir=folder, verbose=verbose
        )
        _MEMO[key] = NumericRobot(model, lib)
    return _MEMO[key]
