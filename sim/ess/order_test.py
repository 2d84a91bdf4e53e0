"""The ESS paper's order test (seed 000, Table 1): a 3-D piecewise-affine system whose guards
are the coordinate planes, with an exact solution by matrix exponentials and exact crossing
times. Event functions h = (x, y, -z): x and y cross upward, z crosses downward.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import njit
from scipy.linalg import expm
from scipy.optimize import brentq

from .integrator import EssSystem, integrate

X0 = np.array([-0.4, -0.15, 0.3])
T_END = 0.5


@njit(cache=True)
def order_f(t, x, sigma, p, ctx, out):
    """Table 1 vector field; sigma > 0 means x >= 0, y >= 0, z <= 0 respectively."""
    px, py, pz = sigma[0] > 0, sigma[1] > 0, sigma[2] > 0
    if not px and not py:
        out[0] = -x[1] + 1.0
        out[1] = x[0] + 1.0
    elif px and not py:
        out[0] = -2.0 * x[1] + 1.0
        out[1] = 0.5 * x[0] + 2.0
    elif not px and py:
        out[0] = x[1] + 1.0
        out[1] = -x[0] + 1.0
    else:
        out[0] = 10.0 * x[0] + 1.0
        out[1] = x[1] + 1.0
    out[2] = 3.0 * x[2] - 1.0 if pz else -x[2] - 1.0


@njit(cache=True)
def order_h(x, p, ctx, out):
    """Event functions (x, y, -z)."""
    out[0] = x[0]
    out[1] = x[1]
    out[2] = -x[2]


@njit(cache=True)
def order_Dh(x, p, ctx, out):
    """Jacobian of (x, y, -z)."""
    out[:, :] = 0.0
    out[0, 0] = 1.0
    out[1, 1] = 1.0
    out[2, 2] = -1.0


def order_system() -> EssSystem:
    """The Table 1 system (no re-arming needed: every guard is crossed once)."""
    return EssSystem(order_f, order_h, order_Dh, n=3, m=3, name="order-test")


def _affine(sx: bool, sy: bool, sz: bool) -> np.ndarray:
    """4 x 4 augmented matrix [[A, b], [0, 0]] of the region with the given crossings."""
    A = np.zeros((4, 4))
    table = {
        (False, False): ([0, -1, 1], [1, 0, 1]),
        (True, False): ([0, -2, 1], [0.5, 0, 2]),
        (False, True): ([0, 1, 1], [-1, 0, 1]),
        (True, True): ([10, 0, 1], [0, 1, 1]),
    }
    (ax, ay, bx), (cx, cy, by) = table[(sx, sy)]
    A[0, :2], A[0, 3] = (ax, ay), bx
    A[1, :2], A[1, 3] = (cx, cy), by
    A[2, 2], A[2, 3] = (3.0, -1.0) if sz else (-1.0, -1.0)
    return A


@lru_cache(maxsize=1)
def exact_segments() -> tuple:
    """Exact (t_start, state_start, region) segments of the solution on [0, T_END]."""
    t, x = 0.0, np.append(X0, 1.0)
    region = [False, False, False]
    segs = []
    while True:
        A = _affine(*region)
        flow = lambda s, A=A, x=x: (expm(A * s) @ x)[:3]  # noqa: E731
        h = lambda s: flow(s) * np.array([1.0, 1.0, -1.0])  # noqa: E731
        # earliest crossing of a not-yet-crossed guard: exact states on a grid (one matrix
        # exponential, propagated), then brentq on the exact flow inside the bracket
        n_grid = 2000
        ds = (T_END - t) / n_grid
        step = expm(A * ds)
        states = np.empty((n_grid + 1, 4))
        states[0] = x
        for i in range(n_grid):
            states[i + 1] = step @ states[i]
        values = np.stack([states[:, 0], states[:, 1], -states[:, 2]], axis=1)
        hits = []
        for k in range(3):
            idx = np.flatnonzero(values[1:, k] >= 0)
            if region[k] or not idx.size:
                continue
            i = idx[0]
            hits.append((brentq(lambda s: h(s)[k], i * ds, (i + 1) * ds, xtol=1e-15, rtol=1e-15), k))
        segs.append((t, x.copy(), tuple(region)))
        if not hits:
            return tuple(segs)
        s, k = min(hits)
        x = np.append(flow(s), 1.0)
        t += s
        region[k] = True


def exact_solution(times: np.ndarray) -> np.ndarray:
    """Exact states (len(times) x 3) of the order-test system at `times` in [0, T_END]."""
    segs = exact_segments()
    out = np.empty((len(times), 3))
    for i, tt in enumerate(times):
        t0, x0, region = [s for s in segs if s[0] <= tt][-1]
        out[i] = (expm(_affine(*region) * (tt - t0)) @ x0)[:3]
    return out


def crossing_times() -> list[float]:
    """Exact times at which the three guards are crossed."""
    return [s[0] for s in exact_segments()[1:]]


def rms_error(eps: float, n_eval: int = 501, **options) -> float:
    """RMS error of the ESS solution against the exact one at n_eval equally spaced times."""
    times = np.linspace(0.0, T_END, n_eval)
    res = integrate(order_system(), X0, 0.0, T_END, eps=eps, t_eval=times, **options)
    return float(np.sqrt(np.mean((res.x_eval - exact_solution(times)) ** 2)))
