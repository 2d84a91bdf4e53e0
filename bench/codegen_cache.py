"""Cold vs warm start of a robot's compiled numeric functions.

Each start is a fresh Python process that builds the symbolic model and obtains its compiled
functions (`numeric(get_robot(name))`); the process times that step itself, so interpreter
start-up and imports are reported separately. Cold = empty cache folder (generate + gcc),
warm = the same folder again (generate, hash, load). Figures: medians over repeats.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from robots import get_robot, numeric
t1 = time.perf_counter()
fns = numeric(get_robot(sys.argv[1]), verbose=False)
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "start_s": t2 - t1, "built": fns.library.built_now}))
"""


def _start(robot: str, cache: str) -> dict:
    env = {**os.environ, "LEGMPC_CACHE_DIR": cache}
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _CHILD, robot], env=env, capture_output=True, text=True, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["process_s"] = time.perf_counter() - t0
    return res


def bench_codegen_cache(args) -> dict:
    """Median cold and warm start times (s) per robot and their ratio (cold / warm)."""
    repeats = args.repeats or 5
    result = {}
    for robot in ("hopper", "quadruped"):
        cold, warm = [], []
        for _ in range(max(3, repeats // 2)):
            with tempfile.TemporaryDirectory() as cache:
                c = _start(robot, cache)
                assert c["built"], "cold start did not compile"
                cold.append(c)
                for _ in range(repeats):
                    w = _start(robot, cache)
                    assert not w["built"], "warm start recompiled"
                    warm.append(w)
        med = lambda rows, k: statistics.median(r[k] for r in rows)  # noqa: E731
        result[robot] = {
            "cold_s": med(cold, "start_s"),
            "warm_s": med(warm, "start_s"),
            "speedup": med(cold, "start_s") / med(warm, "start_s"),
            "warm_min_s": min(r["start_s"] for r in warm),
            "warm_max_s": max(r["start_s"] for r in warm),
            "import_s": med(warm, "import_s"),
            "cold_process_s": med(cold, "process_s"),
            "warm_process_s": med(warm, "process_s"),
        }
    return result
