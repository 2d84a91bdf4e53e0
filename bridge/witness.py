"""Host-stall witness: does this process get to run when it asks to?

    witness = StallWitness.start()        # a native thread sleeping to a 1 ms grid
    ...
    new = witness.drain()                  # stalls seen since the last drain: (from_ns, to_ns) rows
    witness.summary()                      # {"count_ge_1ms", "max_ms", "wakeups", ...}
    witness.stop()

The witness is the C thread of bridge/witness.c (compiled once with the project's C helper,
robots.codegen.compile_shared): it wakes on a 1 ms grid of CLOCK_MONOTONIC, the clock of every
protocol time stamp (time.monotonic_ns in Python), and records each wake-up late by at least
STALL_THRESHOLD_NS as a stall spanning [the grid point, the wake-up]. It runs at the scheduling
policy and priority of the thread that starts it, so start it after the process has asked for
SCHED_FIFO. A Python thread could not do this: it would wait for the interpreter lock and report
the process's own computing as stalls. `bench host-latency` and cyclictest measure the same for
a whole machine; the witness measures it inside a run, for its deadline attribution
(bridge/attribution.py).
"""
from __future__ import annotations

import ctypes
import time
from pathlib import Path

import numpy as np

PERIOD_NS = 1_000_000
STALL_THRESHOLD_NS = 500_000  # a wake-up this late (0.5 ms) is a stall
_DRAIN = 4096
_lib = None


def _load():
    global _lib
    if _lib is None:
        from robots.codegen import compile_shared

        source = (Path(__file__).with_name("witness.c")).read_text()
        path, _, _ = compile_shared(source, lib_name="stall_witness", verbose=False, extra_args=["-pthread"],
                                    what="host-stall witness")
        lib = ctypes.CDLL(str(path))
        i64, p64 = ctypes.c_int64, ctypes.POINTER(ctypes.c_int64)
        lib.witness_start.argtypes, lib.witness_start.restype = [i64, i64], ctypes.c_int
        lib.witness_stop.argtypes, lib.witness_stop.restype = [], None
        lib.witness_drain.argtypes, lib.witness_drain.restype = [p64, p64, i64], i64
        lib.witness_overflows.restype = ctypes.c_uint64
        lib.witness_wakeups.restype = i64
        lib.witness_now_ns.restype = i64
        _lib = lib
    return _lib


class StallWitness:
    """The process's host-stall witness (module docstring); one per process."""

    def __init__(self):
        self.lib = _load()
        self.stalls = np.zeros((0, 2), np.int64)  # every stall drained so far: (from_ns, to_ns)
        self._from = np.zeros(_DRAIN, np.int64)
        self._to = np.zeros(_DRAIN, np.int64)
        self.running = False

    @classmethod
    def start(cls) -> "StallWitness":
        """Start the witness thread at the calling thread's scheduling policy; raises RuntimeError
        if the thread cannot be made."""
        w = cls()
        if w.lib.witness_start(PERIOD_NS, STALL_THRESHOLD_NS) != 0:
            raise RuntimeError("could not start the host-stall witness thread")
        w.running = True
        return w

    def drain(self) -> np.ndarray:
        """The stalls recorded since the last drain, (n, 2) int64 (from_ns, to_ns); kept in `stalls`."""
        parts = []
        p64 = ctypes.POINTER(ctypes.c_int64)
        while True:
            n = self.lib.witness_drain(self._from.ctypes.data_as(p64), self._to.ctypes.data_as(p64), _DRAIN)
            if n:
                parts.append(np.column_stack((self._from[:n], self._to[:n])))
            if n < _DRAIN:
                break
        new = np.vstack(parts) if parts else np.zeros((0, 2), np.int64)
        if len(new):
            self.stalls = np.vstack((self.stalls, new))
        return new

    def stop(self) -> None:
        """Stop the thread (the stalls recorded stay readable)."""
        if self.running:
            self.lib.witness_stop()
            self.running = False
            self.drain()

    def summary(self) -> dict:
        """count_ge_1ms (stalls of at least 1 ms), max_ms (the longest, 0 if none), count (stalls
        of at least STALL_THRESHOLD_NS), wakeups (grid wake-ups so far), ring_overflows."""
        self.drain()
        ms = (self.stalls[:, 1] - self.stalls[:, 0]) / 1e6
        return {"count_ge_1ms": int((ms >= 1.0).sum()), "max_ms": round(float(ms.max()), 3) if len(ms) else 0.0,
                "count": int(len(ms)), "wakeups": int(self.lib.witness_wakeups()),
                "ring_overflows": int(self.lib.witness_overflows())}


def same_clock() -> bool:
    """True if the witness's clock is time.monotonic_ns's (both CLOCK_MONOTONIC)."""
    lib = _load()
    a = time.monotonic_ns()
    b = lib.witness_now_ns()
    return abs(b - a) < 50_000_000
