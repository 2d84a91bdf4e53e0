"""Sweep benchmarks: Ray's scaling and overhead on sweeps of closed-loop episodes (launch/sweep.py).

sweep-throughput  the same sweep (the hopper MPC, 5 s episodes, --repeats N episodes, default
                  40) with a local Ray of 1 worker, then of 2: episodes/s of each and their
                  ratio. The loop's wall time starts when the first task is submitted (Ray's
                  start-up, `ray_init_s`, is reported apart) and includes each worker's
                  first-episode warm-up (imports, loading compiled code, building the MPC).
                  Ray's overhead per episode is the mean idle time of a worker between two
                  consecutive episodes (`worker_gaps`: returning a result and receiving the next
                  task), against an episode's mean wall time; `loop_overhead_per_episode_s`
                  (1 worker: the loop's wall time less the time inside episodes and warm-ups,
                  per episode) adds the one-time start of the worker process. The load average
                  and the machine's own 2-process speed-up on a pure-Python loop
                  (`machine_parallel_speedup`, before and after: the ceiling of any 2-worker
                  figure at that moment) say how much of the machine the sweep had.
                  Measured on the development VM under load (docs/SWEEPS.md): overhead
                  3.5-4.5 ms = 1.0-1.4 % of a 0.29-0.39 s episode; speed-up 0.95-1.53 while
                  the machine's own 2-process speed-up was 0.83-1.09.
sweep-robustness  the robustness tables (docs/SWEEPS.md): the hopper's success rate against a
                  push, mass error, friction, command latency and sensor noise, 20 seeds a point
                  (--repeats K seeds), 5 s episodes with a little sensor noise so that seeds
                  differ. Long (780 episodes); for a quiet machine, never in the tests.
"""
from __future__ import annotations

import os
import sys
import time

# (varied field spec) per robustness table; the base adds sensor noise so seeds differ
# (table name, scenario, varied field, fixed fields): issue 28's tables, the hopper's and the
# planar quadruped's push along x and z, +-20 % mass error and 0-3 ticks of command latency
ROBUSTNESS_TABLES = tuple(
    (f"{robot}: {name}", robot, vary, sets)
    for robot in ("hopper", "quadruped")
    for name, vary, sets in (
        ("push x (N s)", "push=0:16:5", ("push_axis=x",)),
        ("push z (N s)", "push=0:16:5", ("push_axis=z",)),
        ("mass error", "mass_scale=0.8:1.2:5", ()),
        ("latency (ticks)", "latency=0:3:4", ()),
    )
)
ROBUSTNESS_BASE = ("sensor_noise_q=0.0005", "sensor_noise_v=0.005")  # seeds differ by their noise
ROBUSTNESS_DURATION_S = {"hopper": 5.0, "quadruped": 3.0}


def _run(spec, workers: int) -> dict:
    from launch.sweep import run_sweep

    summary = run_sweep(spec, workers=workers, runs_dir="runs/bench", progress=True)
    return summary


def _episode_seconds(folder) -> tuple[float, float, list[float]]:
    """(sum of the episodes' wall time, sum of their warm-ups, the workers' gaps between
    episodes), s, from a sweep folder's rows."""
    from launch.sweep_report import read_rows, worker_gaps

    rows = read_rows(folder)
    return sum(r["wall_s"] for r in rows), sum(r["warmup_s"] or 0.0 for r in rows), worker_gaps(rows)


def _spin(n: int) -> None:
    x = 0
    for i in range(n):
        x += i * i


def machine_parallel_speedup(n: int = 10_000_000) -> float:
    """How much faster this machine runs 2 copies of a pure-Python loop in 2 processes than one
    after the other, now (the ceiling of any 2-worker speed-up while other work shares the
    cores; 2.0 on an idle 2-core machine)."""
    from multiprocessing import Process

    def timed(k: int) -> float:
        procs = [Process(target=_spin, args=(n,)) for _ in range(k)]
        t0 = time.perf_counter()
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        return time.perf_counter() - t0

    one, two = timed(1), timed(2)
    return 2.0 * one / two


def bench_sweep_throughput(args) -> dict:
    """Episodes/s of one sweep on 1 and on 2 local workers, and Ray's overhead per episode."""
    from launch.sweep_spec import SweepSpec

    n = args.repeats or 40
    if n < 4:
        raise ValueError(f"sweep-throughput needs --repeats >= 4 episodes, got {n}")
    spec = SweepSpec.from_args("hopper", [f"push=0:4:{n}"], seeds=1, duration_s=5.0)
    out: dict = {"episodes": n, "episode_sim_s": 5.0, "cores": os.cpu_count(), "loadavg_1min_before": os.getloadavg()[0],
                 "machine_2_process_speedup_before": machine_parallel_speedup()}
    for workers in (1, 2):
        print(f"[sweep-throughput] {n} episodes on {workers} worker(s)", file=sys.stderr, flush=True)
        s = _run(spec, workers)
        inv = s["this_invocation"]
        if s["episodes_completed"] != n or s["errors"]:
            raise RuntimeError(f"the sweep on {workers} worker(s) did not complete cleanly: {s}")
        walls, warmups, gaps = _episode_seconds(s["sweep_dir"])
        gap = sum(gaps) / len(gaps) if gaps else None
        out[f"w{workers}"] = {"episodes_per_s": inv["episodes_per_s"], "loop_wall_s": inv["loop_wall_s"],
                              "ray_init_s": inv["ray_init_s"], "episode_wall_mean_s": walls / n,
                              "warmup_s": warmups, "worker_gap_mean_s": gap, "worker_gap_max_s": max(gaps, default=None),
                              "success_rate": s["success_rate"], "sweep_dir": s["sweep_dir"]}
        if workers == 1:
            out["ray_overhead_per_episode_s"] = gap
            out["ray_overhead_fraction_of_episode"] = gap / (walls / n) if gap is not None else None
            out["loop_overhead_per_episode_s"] = (inv["loop_wall_s"] - walls - warmups) / n
    out["speedup_2_vs_1"] = out["w2"]["episodes_per_s"] / out["w1"]["episodes_per_s"]
    # what the speed-up would have been had the episodes run as fast on 2 workers as on 1: on a machine
    # with other work, 2 workers share the cores with it and each episode slows down (an estimate that
    # separates Ray's scaling from the CPU the machine had to give; the figure is speedup_2_vs_1)
    out["speedup_if_episodes_kept_their_1_worker_time"] = (out["speedup_2_vs_1"] * out["w2"]["episode_wall_mean_s"]
                                                           / out["w1"]["episode_wall_mean_s"])
    out["loadavg_1min_after"] = os.getloadavg()[0]
    out["machine_2_process_speedup_after"] = machine_parallel_speedup()
    return out


def bench_sweep_robustness(args) -> dict:
    """Success rate (with Wilson 95 % intervals) per value of each robustness table's field."""
    from launch.sweep_spec import SweepSpec

    seeds = args.repeats or 20
    robots = ("hopper", "quadruped") if args.full else ("hopper",)
    out = {}
    for name, robot, vary, sets in ROBUSTNESS_TABLES:
        if robot not in robots:
            continue
        spec = SweepSpec.from_args(robot, [vary], seeds=seeds, duration_s=ROBUSTNESS_DURATION_S[robot],
                                   sets=list(ROBUSTNESS_BASE) + list(sets))
        print(f"[sweep-robustness] {name}: {spec.episodes} episodes", file=sys.stderr, flush=True)
        s = _run(spec, None)
        field = next(iter(s["by_field"]))
        out[name] = {"sweep_dir": s["sweep_dir"],
                     "table": [{"value": r["value"], "success_rate": r["success_rate"], "ci95": r["ci95"],
                                "episodes": r["episodes"]} for r in s["by_field"][field]]}
    return out
