"""plant-fuzz: randomised drops and commands on every plant, counting lost robots (issue 25).

The generators and the run of one case are sim/fuzz.py's, the same as the property-based tests
(tests/test_plant_invariants.py), at a larger budget: `--repeats N` examples per plant (default
300), `--full` 10,000. The three plants run in parallel worker processes (one each), each
reusing its compiled plants across examples; progress goes to stderr, and each plant's figures
so far are written to runs/bench/plant_fuzz_<plant>.json every 100 examples (so a long run can
be read before it ends). The environment variable LEGMPC_FUZZ_PLANTS (comma-separated, default
every plant of sim/registry.py) picks the plants, e.g. to give the slowest, the event-driven
hybrid plant, its own budget.

Figures per plant:
- examples: cases run; exceptions: cases where an exception escaped reset/step;
- fall_throughs: cases with a contact deeper than the plant's penetration limit (flagged or not);
- violations: cases the plant flagged (any reason: a fall-through, a failed step, Zeno);
- max_energy_growth: largest growth of the mechanical energy without input ("limp" cases), as a
  fraction of the case's energy scale (sim/fuzz.py);
- rest_penetration_mm: the deepest resting penetration over the cases that end at rest;
- rest_penetration_mm_per_robot: every library robot set down on the ground (lowest contact at
  gap 0), joints held by a PD at q0 (kp 100, kd 5; the point mass without thrust), 2 s of 1 ms
  steps, deepest contact at the end (plant defaults);
- first_failures: up to 5 failing cases with what failed.

Measured (`python -m launch bench plant-fuzz --full --json`, this machine, 2 cores, the three
plants in parallel): 10,000 examples each, 0 fall-throughs, 0 escaped exceptions, 0 violations
on ESS (155 s), NMDP (589 s) and the hybrid plant (1,502 s; ~0.15 s a case alone, the
quadruped's stick/slip cases ~1 s); MuJoCo, run alone: the same, 110 s, with an energy growth of
up to 4.5 % in limp cases (sim/mujoco_plant.py). The hybrid plant's earlier failures are regression tests in
tests/test_hybrid.py: its Painleve-like biped tick (issue 25), a subnormal drop that broke
DOP853's error norm, and three hopper cases near the Painleve point of kinetic friction.
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

from sim.registry import PLANTS as PLANT_NAMES

DEFAULT_EXAMPLES = 300
FULL_EXAMPLES = 10_000
REST_ROBOTS = ("point_mass", "hopper1d", "plate_springs", "hopper", "quadruped", "block")


def rest_penetration_per_robot(plant_name: str) -> dict:
    """Resting penetration (mm) of every library robot on `plant_name` at default settings."""
    import numpy as np

    from robots import get_robot, numeric
    from sim.protocol import JointCommand, actuated_joints
    from sim.registry import make_plant

    out = {}
    for name in REST_ROBOTS:
        model = get_robot(name)
        gap = numeric(model, verbose=False).contact_gap
        try:
            plant = make_plant(plant_name, model)
        except ValueError as exc:  # e.g. a plant that does not take this robot
            out[name] = f"n/a: {exc}"
            continue
        q = np.array(model.q0, dtype=float)
        q[model.q_names.index("z")] -= float(gap(q).min())
        nu, joints = model.nu, actuated_joints(model)
        if name == "point_mass" or nu == 0:
            cmd = JointCommand.zero(nu)
        else:
            cmd = JointCommand(np.zeros(nu), q[joints], np.zeros(nu), np.full(nu, 100.0), np.full(nu, 5.0))
        plant.reset(q)
        for _ in range(200):
            state = plant.step(cmd, 0.01)
        out[name] = round(1e3 * max(0.0, -float(gap(state.q).min())), 3)
        if state.violation:
            out[name] = f"{out[name]} (violation: {state.violation})"
    return out


def _summary(results: list, t0: float) -> dict:
    n = len(results)
    falls = [r for r in results if r["fall_through"]]
    excs = [r for r in results if r["exception"]]
    viols = [r for r in results if r["violation"]]
    growth = [r["energy_growth"] for r in results if not math.isnan(r["energy_growth"])]
    rest = [r["rest_penetration"] for r in results if not math.isnan(r["rest_penetration"])]
    bad = [r for r in results if r["fall_through"] or r["exception"] or r["violation"]]
    return {
        "examples": n,
        "fall_throughs": len(falls),
        "exceptions": len(excs),
        "violations": len(viols),
        "max_energy_growth": max(growth) if growth else None,
        "rest_penetration_mm": round(1e3 * max(rest), 3) if rest else None,
        "resting_cases": len(rest),
        "deepest_gap_mm": round(1e3 * min(r["min_gap"] for r in results if not math.isnan(r["min_gap"])), 3)
        if n else None,
        "wall_s": round(time.time() - t0, 1),
        "first_failures": [{k: (str(v) if k == "case" else v) for k, v in r.items()} for r in bad[:5]],
    }


def fuzz_plant(plant_name: str, examples: int, out_dir: str | None = None) -> dict:
    """Run `examples` fuzz cases on one plant (hypothesis, derandomized); returns its figures."""
    from hypothesis import HealthCheck, given, settings

    from sim import fuzz

    pool = fuzz.PlantPool()
    results: list = []
    t0 = time.time()
    path = Path(out_dir) / f"plant_fuzz_{plant_name}.json" if out_dir else None

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(fuzz.strategy())
    def run(case):
        r = fuzz.run_case(pool, plant_name, case)
        r["case"] = case
        results.append(r)
        n = len(results)
        if n % 100 == 0 or n == examples:
            s = _summary(results, t0)
            rate = n / max(time.time() - t0, 1e-9)
            print(f"plant-fuzz {plant_name}: {n}/{examples} ({rate:.1f}/s, eta {(examples - n) / rate:.0f} s) "
                  f"fall-throughs {s['fall_throughs']} exceptions {s['exceptions']} violations {s['violations']}",
                  file=sys.stderr, flush=True)
            if path is not None:
                path.write_text(json.dumps(s, indent=1))

    run()
    summary = _summary(results, t0)
    summary["rest_penetration_mm_per_robot"] = rest_penetration_per_robot(plant_name)
    if path is not None:
        path.write_text(json.dumps(summary, indent=1))
    return summary


def _worker(job):
    plant_name, examples, out_dir = job
    return plant_name, fuzz_plant(plant_name, examples, out_dir)


def bench_plant_fuzz(args) -> dict:
    """Fuzz every plant (in parallel processes); {"plants": {name: figures}}."""
    import multiprocessing as mp

    from .timing import png_path

    examples = FULL_EXAMPLES if getattr(args, "full", False) else (getattr(args, "repeats", None) or DEFAULT_EXAMPLES)
    out_dir = str(Path(png_path("plant_fuzz")).parent)
    names = [n.strip() for n in os.environ.get("LEGMPC_FUZZ_PLANTS", ",".join(PLANT_NAMES)).split(",") if n.strip()]
    unknown = sorted(set(names) - set(PLANT_NAMES))
    if unknown or not names:
        raise ValueError(f"LEGMPC_FUZZ_PLANTS: unknown plant(s) {unknown}; choose from {', '.join(PLANT_NAMES)}")
    print(f"plant-fuzz: {examples} examples per plant on {', '.join(names)} (progress below; partial "
          f"figures in {out_dir}/plant_fuzz_<plant>.json)", file=sys.stderr, flush=True)
    jobs = [(name, examples, out_dir) for name in names]
    with mp.get_context("spawn").Pool(len(jobs)) as workers:
        done = dict(workers.map(_worker, jobs))
    return {"plants": {name: done[name] for name in names}, "examples_per_plant": examples}
