"""Timing helpers shared by the benchmarks: warm-up, repeats, medians, min and max."""
from __future__ import annotations

import statistics
import time
from typing import Callable


def timed(fn: Callable[[], object], repeats: int, warmup: int = 2) -> dict:
    """Run fn `warmup` times, then `repeats` times; wall-clock seconds as median/min/max."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "n": repeats}


def first_call(fn: Callable[[], object]) -> float:
    """Seconds taken by the first call (JIT compilation included)."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def png_path(name: str) -> str:
    """Where a benchmark writes its figure: runs/bench/<name>.png (folder created)."""
    from pathlib import Path

    folder = Path("runs") / "bench"
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / f"{name}.png")
