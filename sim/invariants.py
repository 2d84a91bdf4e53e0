"""Invariants every plant checks after each step (and at reset), so that a run whose physics
went wrong ends cleanly instead of silently simulating nonsense or crashing mid-run.

Checked (`Invariants.check`):
- q and v are finite;
- every contact's gap phi >= -penetration_limit (m): a foot deeper than that has fallen
  through the ground (compliant plants rest at a few mm; the rigid plant at ~0);
- a floating base's quaternion has norm 1 within QUATERNION_TOL, and none of its bodies (their
  joint origins: the base, hips, knees) is deeper than BODY_BELOW_GROUND_M below the ground (3D
  robots: only the feet are contacts, so a collapsed robot's body would otherwise sink through
  the floor unnoticed). That limit is a fixed few centimetres, not the feet's penetration limit,
  which the compliant plants scale with the robot's weight (anymal_c's is 15 cm).

The result is one line, empty when all hold, carried by `PlantState.violation`. A plant never
raises out of `step` for a physics failure (non-finite state, Zeno accumulation, a solver that
fails): it keeps the last good state, sets `violation`, prints the violation once to stderr
(`Invariants.report`) and from then on returns that state with the same violation until
`reset` (the physics is no longer trusted; the bridge server ends the run on it). Bad commands
(wrong length, negative gains) still raise ValueError. `LatchedViolation` is that behaviour
as a mixin (the ESS, hybrid and MuJoCo plants use it).
"""
from __future__ import annotations

import math
import sys

import numpy as np
from numba import njit

from robots import ccall
from robots.ccall import call_flat
from robots.model import RobotModel

DEFAULT_PENETRATION_LIMIT_M = 0.02  # m: the option `penetration_limit_m` of every plant
QUATERNION_TOL = 1e-9  # largest | |quat| - 1 | a plant may return
BODY_BELOW_GROUND_M = 0.05  # m: a floating base's body origin (a joint centre, inside its link) this deep is through the floor, any mass


def check_penetration_limit(owner: str, value) -> float:
    """Validate the plant option `penetration_limit_m` (finite, > 0, m); returns it as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not math.isfinite(value) \
            or value <= 0:
        raise ValueError(f"{owner}: penetration_limit_m must be a finite number > 0 (m), got {value!r}")
    return float(value)


OK, NON_FINITE, TOO_DEEP, QUATERNION, BODY_DEEP = 0, 1, 2, 3, 4  # `_first_failure`'s answers


@njit(cache=True)
def _first_failure(q, v, heights_address, heights, nc, lowest, floating):
    """Which invariant fails first at (q, v) (OK, NON_FINITE, TOO_DEEP, QUATERNION or BODY_DEEP),
    with the generated `heights` function (contact gaps, then the bodies' heights) called by
    address into `heights`, or the gaps already in heights[:nc] when heights_address is 0."""
    for x in q:
        if not np.isfinite(x):
            return NON_FINITE
    for x in v:
        if not np.isfinite(x):
            return NON_FINITE
    if heights_address != 0:
        call_flat(heights_address, q.ctypes.data, heights.ctypes.data)
    for i in range(nc):
        if not heights[i] >= lowest:
            return TOO_DEEP
    if floating:
        norm = math.sqrt(q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6])
        if abs(norm - 1.0) > QUATERNION_TOL:
            return QUATERNION
        for i in range(nc, heights.shape[0]):
            if heights[i] < -BODY_BELOW_GROUND_M:
                return BODY_DEEP
    return OK


class Invariants:
    """The invariant check of one plant for `model` (see the module docstring).

    penetration_limit_m: deepest gap allowed, m (default DEFAULT_PENETRATION_LIMIT_M).
    """

    def __init__(self, model: RobotModel, penetration_limit_m: float = DEFAULT_PENETRATION_LIMIT_M):
        from robots import numeric

        self.model = model
        self.limit = check_penetration_limit(f"{model.name} plant", penetration_limit_m)
        self._names = [c.name for c in model.contacts]
        self._nc = model.nc
        self._quaternions = model.floating_base
        self._bodies = list(model.body_names)
        fn = numeric(model, verbose=False).raw["heights"]
        self._heights_address = fn.address
        self._heights = np.zeros(fn.n_out)  # gaps, then (floating base) the bodies' heights
        self._keep = fn  # owns the loaded library the address points into
        self.reported = ""  # the violation already printed (printed once per reset)

    def check(self, t: float, q: np.ndarray, v: np.ndarray, gaps: np.ndarray | None = None) -> str:
        """"" if every invariant holds at (t, q, v), else one line saying which failed first.
        gaps: the contacts' gaps at q if the plant has them at hand (else computed)."""
        q = np.ascontiguousarray(q, dtype=np.float64)
        address = self._heights_address
        if gaps is not None and not self._quaternions:  # the plant's own gaps are all the heights needed
            self._heights[:self._nc] = gaps
            address = 0
        # one compiled pass (a few us per step matter to every plant); the message only on failure
        failure = _first_failure(q, np.ascontiguousarray(v, dtype=np.float64), address, self._heights, self._nc,
                                 -self.limit, self._quaternions)
        return self.explain(failure, t, q, v)

    @property
    def compiled_args(self) -> tuple:
        """The arguments after (q, v) of `_first_failure` for this model, for a plant whose own
        compiled code runs the check (then `explain` its answer)."""
        return self._heights_address, self._heights, self._nc, -self.limit, self._quaternions

    def explain(self, failure: int, t: float, q: np.ndarray, v: np.ndarray) -> str:
        """The violation line for `_first_failure`'s answer at (t, q, v) ("" for OK)."""
        if failure == OK:
            return ""
        if failure == NON_FINITE:
            bad = [n for n, x in zip(self.model.q_names, q) if not math.isfinite(x)]
            bad += [f"v[{n}]" for n, x in zip(self.model.q_names, v) if not math.isfinite(x)]
            return f"non-finite state ({', '.join(bad)}) at t={t:.6g} s"
        if failure == TOO_DEEP:
            phi = self._heights[:self._nc]
            i = int(np.argmin(phi))
            return f"contact {self._names[i]} gap {phi[i]:.3f} m below -{self.limit:.3f} m limit at t={t:.6g} s"
        if failure == QUATERNION:
            norm = math.sqrt(float(q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6]))
            return f"base quaternion norm {norm:.12g} is not 1 (tolerance {QUATERNION_TOL:g}) at t={t:.6g} s"
        z = self._heights[self._nc:]  # BODY_DEEP: the bodies' heights, as _first_failure left them
        i = int(np.argmin(z))
        return (f"body {self._bodies[i]} {z[i]:.3f} m below the ground (limit -{BODY_BELOW_GROUND_M:.3f} m) "
                f"at t={t:.6g} s")

    def report(self, violation: str) -> None:
        """Print `violation` to stderr once (until `reset_report`)."""
        if violation and not self.reported:
            print(f"{self.model.name} plant: invariant violated: {violation}", file=sys.stderr, flush=True)
            self.reported = violation

    def reset_report(self) -> None:
        self.reported = ""


class LatchedViolation:
    """What the module docstring asks of a plant that returns its own PlantStates: keep the last
    good state, latch the first violation (printed once) and hold that state until reset.

    A mixin: the plant sets `self.invariants` (an Invariants) and calls `_clear_violation()` in
    reset, `_checked(state)` on every state it returns (with `failure` if its compiled code ran
    `_first_failure` with `Invariants.compiled_args`), `_violated(reason)` for a failure found
    elsewhere (a solver, an integrator) and `_held_state()` while a violation is latched.
    """

    violation: str = ""  # latched until reset
    _good = None  # the last state returned without a violation (a PlantState)

    def _clear_violation(self) -> None:
        self.violation, self._good = "", None
        self.invariants.reset_report()

    def _checked(self, state, failure: int | None = None):
        """`state` with its invariants checked; on a violation, latched and the held state.
        failure: `_first_failure`'s answer for the state when the plant's compiled code ran it."""
        if failure == OK:  # a plant's every step: no call beyond this one
            self._good = state
            return state
        if failure is None:
            violation = self.invariants.check(state.t, state.q, state.v)
        else:
            violation = self.invariants.explain(failure, state.t, state.q, state.v)
        if not violation:
            self._good = state
            return state
        if self._good is None or (np.isfinite(state.q).all() and np.isfinite(state.v).all()):
            self._good = state
        return self._violated(violation)

    def _violated(self, violation: str):
        """Latch `violation` (printed once) and return the last good state carrying it."""
        self.violation = violation
        self.invariants.report(violation)
        return self._held_state()

    def _held_state(self):
        """The last good state, carrying the latched violation."""
        out = self._good.copy()
        out.violation = self.violation
        return out


# numba tracks this file only; ccall's call_flat is inlined into _first_failure
ccall.drop_stale_cache(_first_failure, "invariants.", [ccall.__file__])
