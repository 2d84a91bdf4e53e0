"""Closed-form solution of the 1-D spring-leg hopper (ballistic flight, harmonic stance)."""
from __future__ import annotations

import numpy as np


def hopper1d_exact(times, *, z0: float, m: float, k: float, g: float, L0: float) -> tuple[np.ndarray, np.ndarray]:
    """Height z (m) and velocity (m/s) at `times` (s) for a drop from rest at z0 > L0.

    Flight: z = z0 - g t^2 / 2 until z = L0. Stance: z = z_eq + A cos(w s) + B sin(w s) with
    z_eq = L0 - m g / k, w = sqrt(k / m), A = m g / k, B = v_td / w. No damping, so each hop
    repeats the first: period = 2 t_fall + t_stance.
    """
    if not z0 > L0:
        raise ValueError(f"hopper1d_exact: z0 must be above L0 (z0={z0}, L0={L0})")
    t = np.asarray(times, dtype=float)
    t_fall = np.sqrt(2 * (z0 - L0) / g)
    v_td = -g * t_fall
    w = np.sqrt(k / m)
    A, B = m * g / k, v_td / w
    R = np.hypot(A, B)
    t_stance = (2 * np.pi - 2 * np.arccos(A / R)) / w
    period = 2 * t_fall + t_stance
    s = np.mod(t, period)
    z = np.empty_like(s)
    v = np.empty_like(s)
    fall = s < t_fall
    z[fall], v[fall] = z0 - 0.5 * g * s[fall] ** 2, -g * s[fall]
    st = (s >= t_fall) & (s < t_fall + t_stance)
    u = s[st] - t_fall
    z[st] = L0 - A + A * np.cos(w * u) + B * np.sin(w * u)
    v[st] = -A * w * np.sin(w * u) + B * w * np.cos(w * u)
    up = s >= t_fall + t_stance
    u = s[up] - t_fall - t_stance
    z[up], v[up] = L0 - v_td * u - 0.5 * g * u**2, -v_td - g * u
    return z, v
