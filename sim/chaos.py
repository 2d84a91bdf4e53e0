"""Chaos on demand: seeded controller stalls and late COMMANDs (scenario fields `stall_ms`,
`stall_prob`, `transport_delay_ms`; docs/MPC.md, "Deadline misses and the machine").

    stalls = StallSchedule(stall_ms=150, stall_prob=0.01, period_s=0.01, deadline_s=0.009, seed=0)
    stalls.starts(tick)     # does a stall start at this tick? (a realtime controller then sleeps stall_ms)
    stalls.stalled(tick)    # is this tick's COMMAND lost to a stall? (lockstep simulation)

In realtime the controller process really sleeps `stall_ms` before answering a STATE on a
seeded fraction `stall_prob` of ticks, and holds each COMMAND `transport_delay_ms` after
stamping it before sending it. In lockstep both are simulated so that sweeps stay
deterministic: a stall of S ms starting at tick k loses the COMMANDs of ticks k .. k + n - 1,
n = ceil(S / period) when S exceeds the deadline (0 otherwise: it would have been on time), and
the controller next answers tick k + n; a transport delay at least the deadline makes every
tick's COMMAND late. The plant steps on what it holds (sim/command_plan.py) on those ticks.
"""
from __future__ import annotations

import math

import numpy as np


def transport_always_late(transport_delay_ms: float, deadline_s: float) -> bool:
    """Lockstep: does a transport delay of transport_delay_ms lose every tick's COMMAND (it is at
    least the deadline, deadline_s)?"""
    return transport_delay_ms * 1e-3 >= deadline_s


class StallSchedule:
    """Which ticks a seeded controller stall starts at and covers (module docstring)."""

    def __init__(self, *, stall_ms: float, stall_prob: float, period_s: float, deadline_s: float, seed: int = 0):
        if not (math.isfinite(stall_ms) and stall_ms >= 0 and 0 <= stall_prob <= 1):
            raise ValueError(f"stall_ms must be >= 0 and stall_prob in [0, 1], got {stall_ms}, {stall_prob}")
        self.stall_s, self.prob = stall_ms / 1e3, stall_prob
        self.lost = math.ceil(self.stall_s / period_s - 1e-9) if self.stall_s > deadline_s else 0
        self.rng = np.random.default_rng(seed) if self.active else None  # numpy.random's first use costs ~10 ms
        self.until = -1  # the last tick the current stall covers

    @property
    def active(self) -> bool:
        """True if any stall can happen."""
        return self.stall_s > 0 and self.prob > 0

    def starts(self, tick: int) -> bool:
        """Draw whether a stall starts at `tick` (one draw per tick not inside a stall)."""
        if not self.active or tick <= self.until:
            return False
        if self.rng.random() < self.prob:
            self.until = tick + max(self.lost, 1) - 1
            return True
        return False

    def stalled(self, tick: int) -> bool:
        """Lockstep: True if `tick`'s COMMAND is lost to a stall starting at or before it (call
        once per tick, in order)."""
        if tick <= self.until and self.lost:
            return True
        return self.starts(tick) and self.lost > 0
