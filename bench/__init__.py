"""Benchmarks, run on demand with `python -m launch bench <name> [--json]` (never in the tests).

Each entry maps a name to (function(args) -> dict of figures, one-line description).
"""
from __future__ import annotations

from .bridge import bench_bridge
from .bridge_fuzz import bench_bridge_fuzz
from .codegen_cache import bench_codegen_cache
from .contact_methods import bench_contact_methods
from .estimation import bench_estimator
from .ess import bench_ess_hopper, bench_ess_order, bench_ess_plate, bench_sim_rtf
from .host_latency import bench_host_latency
from .incline import bench_incline
from .live import bench_live_overhead
from .mpc import bench_mpc_tick
from .nmdp import bench_nmdp_stability
from .plant3d import bench_plant3d
from .plant_fuzz import bench_plant_fuzz
from .sweep import bench_sweep_robustness, bench_sweep_throughput

BENCHMARKS = {
    "bridge": (bench_bridge, "STATE -> COMMAND round trip over loopback TCP, quadruped-sized (RTT, exchanges/s)"),
    "bridge-fuzz": (bench_bridge_fuzz, "100,000 hostile messages (--repeats N) against a serve-plant process: rejections by reason, plant exits, RSS growth, a clean session after"),
    "codegen-cache": (bench_codegen_cache, "cold vs warm start of the compiled robot functions (cache speed-up)"),
    "contact-methods": (bench_contact_methods, "point-mass drop and rocking block: event-driven reference vs hybrid reset, penalty, time-stepping (PNG under runs/bench/)"),
    "estimator": (bench_estimator, "the state estimator's cost per tick (go1 trot, hardware sensors, in-process) beside the MPC's tick, and its errors against the truth"),
    "ess-order": (bench_ess_order, "ESS order test (seed 000 Table 1): slope of RMS error vs 1/eps"),
    "ess-hopper": (bench_ess_hopper, "1-D hopper calibration: eps at MuJoCo's accuracy, time ours/MuJoCo"),
    "ess-plate": (bench_ess_plate, "plate on N springs: marginal cost per contact, ours vs MuJoCo (--full: paper's 120 starts, N=2..100)"),
    "host-latency": (bench_host_latency, "how late this machine wakes a 1 ms periodic sleeper on each CPU, nothing else running (--repeats N seconds, default 30; --full: under SCHED_FIFO 50): the floor under every realtime deadline"),
    "incline": (bench_incline, "box3d on a tilted ground (mu 0.5; 10-45 deg) on ESS, NMDP and MuJoCo at their defaults, and the planar block on ESS: creep (mm/s) inside the friction cone, slide error (%) outside"),
    "live-overhead": (bench_live_overhead, "realtime hopper-pd runs without and with --live (a Foxglove client subscribed): STATE -> COMMAND p99 and their ratio"),
    "mpc-tick": (bench_mpc_tick, "MPC controller tick in-process (decode, feedback, encode, prepare): acados vs the Python around it (--full: quadruped too)"),
    "nmdp-stability": (bench_nmdp_stability, "quadruped trot 5 s at dt 1-50 ms: NMDP (pgm, zopgm) vs linearised MDP stability, consistency, cost vs MuJoCo (PNG under runs/bench/)"),
    "plant-fuzz": (bench_plant_fuzz, "random drops, gains and commands on every plant (ESS, NMDP, hybrid, MuJoCo): fall-throughs, escaped exceptions, resting penetration (--repeats N examples per plant, default 300; --full 10,000)"),
    "plant3d": (bench_plant3d, "go1 at a 1 ms period: per-step cost, real-time factor and resting height of ESS, NMDP and our MuJoCo plant against bare MuJoCo in one run; accuracy against each plant's fine-step reference on an open-loop trot; NMDP at 10 ms steps"),
    "sweep-throughput": (bench_sweep_throughput, "one sweep of 5 s hopper episodes (--repeats N, default 40) on 1 then 2 local Ray workers: episodes/s, speed-up, Ray's overhead per episode"),
    "sweep-robustness": (bench_sweep_robustness, "success rate vs push x and z, mass error, latency, 20 seeds a point: the hopper (--full: the planar quadruped too; --repeats K seeds; for a quiet machine)"),
    "sim-rtf": (bench_sim_rtf, "real-time factor of the ESS plant (hopper, quadruped) at a 1 ms command period"),
}
