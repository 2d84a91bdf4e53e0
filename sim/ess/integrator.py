"""Python entry point of the ESS integrator: validation, options, results, errors.

    system = EssSystem(f, h, Dh, n=3, m=3)                  # numba functions, see kernel.py
    res = integrate(system, x0, 0.0, 0.5, eps=1e-3, t_eval=np.linspace(0, 0.5, 101))
    res.x, res.x_eval, res.stats

All checks happen here, once; the compiled kernel runs without them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import kernel as K


class LivenessError(RuntimeError):
    """The vector field does not push through guard `guard` inside its eps-band.

    Attributes: guard (index), t (s), x (state at detection).
    """

    def __init__(self, guard: int, t: float, x: np.ndarray):
        self.guard, self.t, self.x = guard, t, x.copy()
        super().__init__(
            f"ESS liveness violated at guard {guard}, t={t:.9g}, x={np.array2string(x, precision=6)}: "
            "Dh_k . f <= 0 inside the band, so the trajectory never crosses it. Fix the event "
            "function's sign, shrink eps, or integrate with on_violation='locate' (exact event location)."
        )


class EssIntegrationError(RuntimeError):
    """The kernel stopped early (non-finite state, step underflow or too many events)."""


@dataclass(frozen=True, eq=False)
class EssSystem:
    """An event-selected system: numba-compiled f, h, Dh (signatures in kernel.py).

    n: state size; m: number of event functions; reset: m x m bool guard reset matrix
    (row j = guards re-armed when guard j is crossed); paper_rule: use the paper's re-arming
    rule instead (re-arm all negative guards once none is armed); ctx: tuple handed to
    f/h/Dh (C function pointers, scratch arrays); name: for messages. wprep, wsolve: the
    matrix W of the ROS23 method (signatures in kernel.py; default W = 0).
    """

    f: Any
    h: Any
    Dh: Any
    n: int
    m: int
    reset: np.ndarray | None = None
    paper_rule: bool = False
    ctx: tuple = ()
    name: str = "ess"
    wprep: Any = K.no_wprep
    wsolve: Any = K.no_wsolve

    def __post_init__(self) -> None:
        from numba.core.dispatcher import Dispatcher

        for arg in ("f", "h", "Dh", "wprep", "wsolve"):
            fn = getattr(self, arg)
            if not isinstance(fn, Dispatcher):
                what = (f"the plain Python function {getattr(fn, '__name__', '?')!r}" if callable(fn)
                        else f"a {type(fn).__name__}")
                raise TypeError(
                    f"EssSystem {self.name!r}: argument {arg} must be a numba-compiled function (decorate it "
                    f"with numba's @njit, e.g. `from numba import njit` and `@njit(cache=True)`; the kernel "
                    f"calls it from compiled code), got {what}. Signatures: sim/ess/kernel.py, docs/ESS.md.")
        for arg, low in (("n", 1), ("m", 0)):
            value = getattr(self, arg)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"EssSystem {self.name!r}: {arg} must be an integer >= {low}, got {value!r}")

    def reset_matrix(self) -> np.ndarray:
        """The reset matrix as an m x m bool array (zeros if none was given)."""
        if self.reset is None:
            return np.zeros((self.m, self.m), dtype=np.bool_)
        R = np.asarray(self.reset, dtype=np.bool_)
        if R.shape != (self.m, self.m):
            raise ValueError(f"{self.name}: reset matrix has shape {R.shape}, expected ({self.m}, {self.m})")
        return R


@dataclass
class GuardState:
    """Per-guard bookkeeping carried between calls: sign sigma (+1 crossed / -1 not),
    armed (candidate for projection), pending (re-armed, waiting to leave the band),
    parked (liveness failed: located exactly instead)."""

    sigma: np.ndarray
    armed: np.ndarray
    pending: np.ndarray
    parked: np.ndarray

    @classmethod
    def from_values(cls, hx: np.ndarray) -> "GuardState":
        """Guards with h >= 0 count as crossed; the others are armed."""
        crossed = hx >= 0
        m = hx.shape[0]
        return cls(np.where(crossed, 1.0, -1.0), ~crossed, np.zeros(m, np.bool_), np.zeros(m, np.bool_))


@dataclass
class EssResult:
    """Outcome of `integrate`: final time t (s) and state x, states at t_eval (x_eval), the
    guard state, and counters (kernel.STAT_NAMES)."""

    t: float
    x: np.ndarray
    x_eval: np.ndarray
    guards: GuardState
    stats: dict = field(default_factory=dict)


_VIOLATION = {"raise": 0, "locate": 1}


def _as_eps(eps, m: int, name: str) -> np.ndarray:
    arr = np.broadcast_to(np.asarray(eps, dtype=np.float64), (m,)).copy()
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name}: eps must be finite and > 0 for every guard, got {eps!r}")
    return arr


def integrate(
    system: EssSystem,
    x0,
    t0: float,
    tf: float,
    *,
    eps,
    p=None,
    t_eval=None,
    guards: GuardState | None = None,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    h0: float = 1e-3,
    h_max: float = np.inf,
    live_min: float = 1e-12,
    on_violation: str = "raise",
    max_events: int = 100_000,
    max_steps: int = 10_000_000,
    method: str = "dopri5",
) -> EssResult:
    """Integrate the ESS `system` from (t0, x0) to tf.

    eps: band width, scalar or one per guard (units of h). p: parameter vector for f/h/Dh.
    t_eval: ascending times in [t0, tf] at which to record the state. guards: bookkeeping
    from a previous call (default: from the signs of h(x0)). rtol/atol: Dormand-Prince error
    tolerances; h0: first step (s); h_max: largest step (s). on_violation: "raise" a
    LivenessError, or "locate" the guard's crossing exactly instead of projecting.
    max_events, max_steps: per-call budgets; exceeding one raises EssIntegrationError.
    method: "dopri5" (explicit, order 5) or "ros23" (linearly implicit with the system's W).
    """
    x = np.array(x0, dtype=np.float64).ravel()
    if x.shape != (system.n,):
        raise ValueError(f"{system.name}: x0 has shape {x.shape}, expected ({system.n},)")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{system.name}: x0 contains non-finite values {x}")
    if not (np.isfinite(t0) and np.isfinite(tf) and tf >= t0):
        raise ValueError(f"{system.name}: need finite t0 <= tf, got t0={t0}, tf={tf}")
    for name, value in (("rtol", rtol), ("atol", atol), ("h0", h0), ("h_max", h_max)):
        if not value > 0:
            raise ValueError(f"{system.name}: {name} must be > 0, got {value}")
    if on_violation not in _VIOLATION:
        raise ValueError(f"{system.name}: on_violation must be one of {list(_VIOLATION)}, got {on_violation!r}")
    if method not in K.METHODS:
        raise ValueError(f"{system.name}: method must be one of {list(K.METHODS)}, got {method!r}")
    eps_arr = _as_eps(eps, system.m, system.name)
    p_arr = np.zeros(0) if p is None else np.ascontiguousarray(p, dtype=np.float64)
    te = np.zeros(0) if t_eval is None else np.ascontiguousarray(t_eval, dtype=np.float64)
    if te.size and (np.any(np.diff(te) < 0) or te[0] < t0 or te[-1] > tf):
        raise ValueError(f"{system.name}: t_eval must be ascending within [t0, tf]")
    if guards is None:
        hx = np.empty(system.m)
        system.h(x, p_arr, system.ctx, hx)
        guards = GuardState.from_values(hx)
    x_eval = np.full((te.size, system.n), np.nan)
    stats = np.zeros(K.N_STATS, dtype=np.int64)
    t, status, guard = K.ess_integrate(
        system.f, system.h, system.Dh, system.wprep, system.wsolve, K.METHODS[method], system.ctx, x, float(t0), float(tf), p_arr,
        guards.sigma, guards.armed, guards.pending, guards.parked, system.reset_matrix(), eps_arr,
        system.paper_rule, rtol, atol, np.array([h0, 1e-4]), h_max, live_min, _VIOLATION[on_violation],
        max_events, max_steps, te, x_eval, stats, np.empty(K.work_size(system.n, system.m)),
    )
    if status == K.LIVENESS:
        raise LivenessError(guard, t, x)
    if status != K.OK:
        raise EssIntegrationError(f"{system.name}: {K.STATUS_TEXT[status]} at t={t:.9g}, x={x}")
    return EssResult(t, x, x_eval, guards, dict(zip(K.STAT_NAMES, stats.tolist())))
