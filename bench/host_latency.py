"""Host scheduling latency: how late does this machine wake a periodic thread?

A realtime run can only be as punctual as the machine under it. This benchmark runs one
process per CPU, pinned to it and (with --full) under SCHED_FIFO 50 as the realtime scenarios
ask, that sleeps to a 1 ms grid and records how late each wake-up is, with nothing else of
ours running. Wake-ups late by several milliseconds mean the machine itself stops running
processes at times (a virtual machine's host, a busy neighbour): against a 10 ms control
period such a stall costs a deadline whatever the controller does. A stall counts once: the
grid points it swallowed are skipped and counted apart (`skipped_periods`). `cyclictest`
(Debian package rt-tests) makes a similar measurement in C:
`cyclictest -m -p 50 -t 2 -a -i 1000 -D 60 -q`.

Measured on this project's 2-core VM (60 s, SCHED_FIFO 50, idle): cyclictest's largest delays
8.9 and 9.6 ms in one minute (7-9 wake-ups per CPU at least 3 ms late), 6.1 and 7.2 ms in
another; this benchmark side by side with cyclictest in a third: 3.7 and 2.9 ms against 3.8
and 3.7. docs/MPC.md, "Deadline misses and the machine", relates them to the MPC runs' misses.
"""
from __future__ import annotations

import multiprocessing
import os
import sys
import time

import numpy as np

from launch.child import request_fifo

PERIOD_S = 0.001
THRESHOLDS_MS = (1, 3, 5)


def _sleeper(job: tuple[int, float, int]) -> dict:
    """On CPU `cpu`, for `seconds`, sleep to a 1 ms grid (SCHED_FIFO `priority` if > 0 and
    granted); the lateness of every wake-up in microseconds, summarised, and the grid points
    skipped because a stall outlasted them."""
    cpu, seconds, priority = job
    os.sched_setaffinity(0, {cpu})
    fifo = bool(priority) and not request_fifo(priority)
    n = int(round(seconds / PERIOD_S))
    late = np.empty(n)
    woken = skipped = 0
    target = time.perf_counter()
    while woken + skipped < n:
        target += PERIOD_S
        delay = target - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        now = time.perf_counter()
        late[woken] = now - target
        woken += 1
        behind = int((now - target) / PERIOD_S)  # grid points that passed during a stall are
        skipped += behind                         # skipped (and counted): one stall, one sample
        target += behind * PERIOD_S
    late = late[:woken]
    us = late * 1e6
    per_minute = 60.0 / seconds
    return {"cpu": cpu, "sched_fifo": fifo, "wakeups": woken, "skipped_periods": skipped,
            "late_us": {"p50": float(np.percentile(us, 50)), "p99": float(np.percentile(us, 99)),
                        "p99_99": float(np.percentile(us, 99.99)), "max": float(us.max())},
            **{f"late_ge_{ms}ms_per_min": float((us >= ms * 1e3).sum() * per_minute) for ms in THRESHOLDS_MS}}


def bench_host_latency(args) -> dict:
    """Per CPU: wake-up lateness (us) of a 1 ms periodic sleeper, and how many wake-ups a
    minute were at least 1, 3 and 5 ms late. --repeats N: seconds (default 30); --full:
    under SCHED_FIFO 50 (needs the privilege; the result says whether it was granted)."""
    seconds = 30.0 if args.repeats is None else float(args.repeats)
    if seconds <= 0:
        raise ValueError(f"host-latency needs --repeats > 0 seconds, got {args.repeats}")
    cpus = sorted(os.sched_getaffinity(0))
    priority = 50 if getattr(args, "full", False) else 0
    print(f"[host-latency] {len(cpus)} CPUs x {seconds:g} s, 1 ms period"
          f"{', SCHED_FIFO 50' if priority else ''}", file=sys.stderr, flush=True)
    with multiprocessing.get_context("spawn").Pool(len(cpus)) as pool:
        per_cpu = pool.map(_sleeper, [(cpu, seconds, priority) for cpu in cpus])
    return {"seconds": seconds, "period_ms": PERIOD_S * 1e3, "cpus": per_cpu,
            "max_late_ms": max(r["late_us"]["max"] for r in per_cpu) / 1e3}
