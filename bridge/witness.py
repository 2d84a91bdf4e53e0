"""Host-stall witnesses: does this process get to run when it asks to?

    witness = StallWitness.start()                 # one native thread sleeping to a 1 ms grid
    ...
    witness.drain()            # stalls seen since the last drain: (from_ns, to_ns) rows
    witness.summary()          # {"count_ge_1ms", "max_ms", "wakeups", ...}
    witness.stop()

A witness is a C thread of bridge/witness.c (compiled once with the project's C helper,
robots.codegen.compile_shared): it wakes on a 1 ms grid of CLOCK_MONOTONIC, the clock of every
protocol time stamp (time.monotonic_ns in Python), and records each wake-up late by at least
STALL_THRESHOLD_NS as a stall spanning [the grid point, the wake-up]. A Python thread could not
do this: it would wait for the interpreter lock and report the process's own computing as
stalls. Under SCHED_FIFO a witness runs one priority above its process, so that the process's
own threads never delay it: only the machine does (another process of higher priority, the
kernel, the hypervisor pausing the machine) or its process being stopped (SIGSTOP). It is not
pinned: the kernel wakes it on an idle CPU, so it costs the run almost nothing (pinned one per
CPU, witnesses preempting the run's threads 1000 times a second raised go1's tick p99 from 3.5
to 5 ms), and it does not see the hypervisor take away only the CPU another thread runs on:
such a tick shows as CPU time far over its usual and stays `unattributed`. `bench
host-latency` and cyclictest measure the same for a whole machine; the witnesses measure it
inside a run, for its deadline attribution (bridge/attribution.py).
"""
from __future__ import annotations

import ctypes
import os
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
        i64, p64, c_int = ctypes.c_int64, ctypes.POINTER(ctypes.c_int64), ctypes.c_int
        lib.witness_start.argtypes, lib.witness_start.restype = [i64, i64, c_int], c_int
        lib.witness_stop.argtypes, lib.witness_stop.restype = [c_int], None
        lib.witness_drain.argtypes, lib.witness_drain.restype = [c_int, p64, p64, i64], i64
        lib.witness_overflows.argtypes, lib.witness_overflows.restype = [c_int], ctypes.c_uint64
        lib.witness_wakeups.argtypes, lib.witness_wakeups.restype = [c_int], i64
        lib.witness_placed.argtypes, lib.witness_placed.restype = [c_int], c_int
        lib.witness_now_ns.restype = i64
        _lib = lib
    return _lib


def _priority_above_process() -> int:
    """One SCHED_FIFO priority above this process's (0 if the process is not under FIFO)."""
    try:
        if os.sched_getscheduler(0) != os.SCHED_FIFO:
            return 0
        return min(99, os.sched_getparam(0).sched_priority + 1)
    except (AttributeError, OSError):
        return 0


class StallWitness:
    """One witness thread (module docstring)."""

    def __init__(self, handle: int):
        self.lib, self.handle = _load(), handle
        self.stalls = np.zeros((0, 2), np.int64)  # every stall drained so far: (from_ns, to_ns)
        self._from = np.zeros(_DRAIN, np.int64)
        self._to = np.zeros(_DRAIN, np.int64)
        self.running = True

    @staticmethod
    def prepare() -> None:
        """Load the witness library now (compiling it once per machine; ~50 ms even when cached),
        so that a later start() only starts a thread: call it before a deadline clock runs."""
        _load()

    @classmethod
    def start(cls) -> "StallWitness":
        """Start a witness thread (one FIFO priority above the process if it runs under FIFO, not
        pinned: module docstring); raises RuntimeError if the thread cannot be made."""
        lib = _load()
        handle = lib.witness_start(PERIOD_NS, STALL_THRESHOLD_NS, _priority_above_process())
        if handle < 0:
            raise RuntimeError("could not start a host-stall witness thread")
        return cls(handle)

    def drain(self) -> np.ndarray:
        """The stalls recorded since the last drain, (n, 2) int64 (from_ns, to_ns); kept in `stalls`."""
        parts = []
        p64 = ctypes.POINTER(ctypes.c_int64)
        while True:
            n = self.lib.witness_drain(self.handle, self._from.ctypes.data_as(p64), self._to.ctypes.data_as(p64),
                                       _DRAIN)
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
            self.lib.witness_stop(self.handle)
            self.running = False
            self.drain()

    def summary(self) -> dict:
        """count_ge_1ms (stalls of at least 1 ms), max_ms (the longest, 0 if none), count (stalls
        of at least STALL_THRESHOLD_NS), wakeups, ring_overflows, placed (the priority asked for
        was granted)."""
        self.drain()
        return {**stall_stats(self.stalls), "count": int(len(self.stalls)),
                "wakeups": int(self.lib.witness_wakeups(self.handle)),
                "ring_overflows": int(self.lib.witness_overflows(self.handle)),
                "placed": bool(self.lib.witness_placed(self.handle) == 1)}


def stall_stats(stalls: np.ndarray) -> dict:
    """count_ge_1ms (stalls of at least 1 ms) and max_ms (the longest, ms; 0 if none) of stalls
    ((n, 2) from_ns, to_ns)."""
    ms = (stalls[:, 1] - stalls[:, 0]) / 1e6 if len(stalls) else np.zeros(0)
    return {"count_ge_1ms": int((ms >= 1.0).sum()), "max_ms": round(float(ms.max()), 3) if len(ms) else 0.0}


def same_clock() -> bool:
    """True if the witnesses' clock is time.monotonic_ns's (both CLOCK_MONOTONIC)."""
    lib = _load()
    a = time.monotonic_ns()
    b = lib.witness_now_ns()
    return abs(b - a) < 50_000_000
