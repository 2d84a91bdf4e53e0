"""The host-latency benchmark's bookkeeping (never its figures: those depend on the machine)."""
import os
from argparse import Namespace

import pytest

from bench.host_latency import bench_host_latency


def test_every_cpu_reports_every_wakeup_and_ordered_percentiles():
    res = bench_host_latency(Namespace(repeats=0.2, full=False))
    assert [r["cpu"] for r in res["cpus"]] == sorted(os.sched_getaffinity(0))
    for r in res["cpus"]:
        late = r["late_us"]
        assert r["wakeups"] + r["skipped_periods"] >= 200 and r["wakeups"] >= 1 and r["sched_fifo"] is False
        assert 0 <= late["p50"] <= late["p99"] <= late["p99_99"] <= late["max"]
        assert r["late_ge_1ms_per_min"] >= r["late_ge_3ms_per_min"] >= r["late_ge_5ms_per_min"] >= 0
    assert res["max_late_ms"] == max(r["late_us"]["max"] for r in res["cpus"]) / 1e3


@pytest.mark.parametrize("seconds", [0, -1])
def test_a_duration_that_is_not_positive_is_refused(seconds):
    with pytest.raises(ValueError, match="repeats"):
        bench_host_latency(Namespace(repeats=seconds, full=False))
