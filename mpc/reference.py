"""A periodic gait turned into a smooth symbolic reference r(tau) of the gait clock tau (s).

The MPC carries tau as an extra state (tau+ = tau + dt), so its cost y = (x - xref(tau),
u - uref(tau)) is a closed-form CasADi expression: nothing but the initial state has to be
sent to the solver each tick. The periodic part is a truncated Fourier series fitted by least
squares to the gait's stage values; the forward coordinate x also advances by vx per second.
A `Gait` holds those stage values (one period, made by each MPC's offline gait solver).

    ref = FourierReference.fit(gait, harmonics=12)
    ref.x(tau_sx), ref.u(tau_sx)      # SX expressions
    ref.x_at(t_array)                 # numbers (same formula), (len(t), nx)
"""
from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np


@dataclass(frozen=True)
class Gait:
    """One period of a reference gait: x (N+1, nx) and u (N, nu) at stage times k * dt."""

    dt: float
    x: np.ndarray
    u: np.ndarray
    shift_x: float  # forward displacement over one period, m

    @property
    def period(self) -> float:
        """Gait period, s."""
        return self.dt * self.u.shape[0]

    def sample(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Reference (x, u) at times t (s, any value: the gait repeats, x advancing by shift_x)."""
        t = np.atleast_1d(np.asarray(t, float))
        n = self.u.shape[0]
        k_float = t / self.dt
        k = np.floor(k_float + 1e-9).astype(int)
        cycles, kk = np.divmod(k, n)
        xs = self.x[kk].copy()
        xs[:, 0] += cycles * self.shift_x
        return xs, self.u[kk]


@dataclass(frozen=True)
class FourierReference:
    """x_ref(tau) = drift * tau + a0 + sum_k (a_k cos(k w tau) + b_k sin(k w tau)), w = 2 pi / T.

    coef_x: (2K+1, nx), coef_u: (2K+1, nu) rows [a0, a1, b1, ..., aK, bK]; drift_x (nx,).
    """

    period: float
    coef_x: np.ndarray
    coef_u: np.ndarray
    drift_x: np.ndarray

    @staticmethod
    def _basis(tau, period: float, harmonics: int, lib=np):
        w = 2 * np.pi / period
        cols = [lib.cos(0 * tau) if lib is np else 1 + 0 * tau]
        for k in range(1, harmonics + 1):
            cols += [lib.cos(k * w * tau), lib.sin(k * w * tau)]
        return cols

    @classmethod
    def fit(cls, gait: Gait, harmonics: int = 12) -> "FourierReference":
        """Least-squares fit to the gait's N stage values (harmonics capped at N/2 - 1)."""
        n = gait.u.shape[0]
        harmonics = max(1, min(harmonics, n // 2 - 1))
        t = gait.dt * np.arange(n)
        drift = np.zeros(gait.x.shape[1])
        drift[0] = gait.shift_x / gait.period
        A = np.column_stack(cls._basis(t, gait.period, harmonics))
        cx = np.linalg.lstsq(A, gait.x[:n] - np.outer(t, drift), rcond=None)[0]
        cu = np.linalg.lstsq(A, gait.u, rcond=None)[0]
        return cls(gait.period, cx, cu, drift)

    @property
    def harmonics(self) -> int:
        """Number of harmonics K."""
        return (self.coef_x.shape[0] - 1) // 2

    def x(self, tau: ca.SX) -> ca.SX:
        """Reference state at gait time tau (SX scalar) -> SX (nx)."""
        basis = ca.horzcat(*self._basis(tau, self.period, self.harmonics, ca))
        return (basis @ ca.DM(self.coef_x)).T + ca.DM(self.drift_x) * tau

    def u(self, tau: ca.SX) -> ca.SX:
        """Reference control at gait time tau (SX scalar) -> SX (nu)."""
        basis = ca.horzcat(*self._basis(tau, self.period, self.harmonics, ca))
        return (basis @ ca.DM(self.coef_u)).T

    def x_at(self, t) -> np.ndarray:
        """Reference states at times t (s) -> (len(t), nx)."""
        t = np.atleast_1d(np.asarray(t, float))
        return np.column_stack(self._basis(t, self.period, self.harmonics)) @ self.coef_x + np.outer(t, self.drift_x)

    def u_at(self, t) -> np.ndarray:
        """Reference controls at times t (s) -> (len(t), nu)."""
        t = np.atleast_1d(np.asarray(t, float))
        return np.column_stack(self._basis(t, self.period, self.harmonics)) @ self.coef_u


@dataclass(frozen=True)
class TrajectoryReference:
    """A finite reference trajectory (e.g. an offline plan) as a function of tau = plant time.

    States are linear between the samples (t, x); controls are constant on [t_u[k], t_u[k+1]);
    before the start and after the end the first/last values are held. Same interface as
    FourierReference. x: (n, nx) at strictly increasing t; u: (m, nu) on the grid t_u (m + 1).
    """

    t: np.ndarray
    xs: np.ndarray
    t_u: np.ndarray
    us: np.ndarray

    @classmethod
    def from_samples(cls, t, xs, t_u, us) -> "TrajectoryReference":
        """Validated reference; repeated times (e.g. frozen physical time at an impact) keep the
        last sample, which is the post-impact state."""
        t, xs, t_u, us = (np.asarray(a, float) for a in (t, xs, t_u, us))
        if xs.ndim != 2 or xs.shape[0] != t.size or us.ndim != 2 or us.shape[0] + 1 != t_u.size:
            raise ValueError(f"TrajectoryReference: need x of shape (len(t), nx) and u of shape (len(t_u) - 1, nu), "
                             f"got t {t.shape}, x {xs.shape}, t_u {t_u.shape}, u {us.shape}")
        keep = np.append(np.diff(t) > 1e-9, True)
        t, xs = t[keep], xs[keep]
        if t.size < 2 or np.any(np.diff(t_u) <= 0):
            raise ValueError("TrajectoryReference: need at least two distinct times and an increasing control grid")
        return cls(t, xs, t_u, us)

    def _clamp(self, tau):
        return ca.fmin(ca.fmax(tau, float(self.t[0])), float(self.t[-1]))

    def x(self, tau: ca.SX) -> ca.SX:
        """Reference state at tau (SX scalar) -> SX (nx)."""
        tc = self._clamp(tau)
        return ca.vertcat(*[ca.pw_lin(tc, ca.DM(self.t), ca.DM(self.xs[:, i])) for i in range(self.xs.shape[1])])

    def u(self, tau: ca.SX) -> ca.SX:
        """Reference control at tau (SX scalar) -> SX (nu)."""
        inner = ca.DM(self.t_u[1:-1])
        return ca.vertcat(*[ca.pw_const(tau, inner, ca.DM(self.us[:, i])) for i in range(self.us.shape[1])])

    def x_at(self, t) -> np.ndarray:
        """Reference states at times t (s) -> (len(t), nx)."""
        t = np.clip(np.atleast_1d(np.asarray(t, float)), self.t[0], self.t[-1])
        return np.column_stack([np.interp(t, self.t, self.xs[:, i]) for i in range(self.xs.shape[1])])

    def u_at(self, t) -> np.ndarray:
        """Reference controls at times t (s) -> (len(t), nu)."""
        t = np.atleast_1d(np.asarray(t, float))
        k = np.clip(np.searchsorted(self.t_u, t, side="right") - 1, 0, self.us.shape[0] - 1)
        return self.us[k]
