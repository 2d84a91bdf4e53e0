"""Contact methods side by side: the event-driven reference against the tutorial's three baselines.

Scenarios (each plant stepped at 1 ms with zero command, state sampled after every step):
- point_mass dropped from rest at 1 m, 1.5 s;
- rocking block (robots/library/block.py, 0.2 m x 0.6 m, 10 kg) released from rest on its left
  corner tilted by half its slenderness angle, 2.5 s.
Methods: "hybrid-reference" (sim.hybrid, plastic impacts, default pseudo-impulse), and the
baselines of seed 003: "hybrid-reset" (guard + jump map, e = 0 to match the plastic reference,
explicit Euler, 1 ms), "penalty" (point mass: the tutorial's tanh law, explicit Euler, 1 ms;
block: the model's linear spring-damper k = 1e5 N/m, b = 300 N s/m per corner with regularized
friction, semi-implicit Euler, 0.1 ms, since the tutorial's constants are tuned to one 10 kg
point), "time-stepping" (the tutorial's relaxed complementarity, min s^2, IPOPT, 1 ms).

Figures per method:
- max_penetration_m: largest -gap over the run (internal steps for the baselines), m;
- rest_height_error_m: final height minus the rigid rest height (point mass: z - 0; block:
  CoM z - half height), m; final_speed: |v| at the end (m/s, rad/s) tells whether it is at rest;
- energy_error_first_impact_J: E - E_ref 50 ms after the reference's first impact (both on the
  same 1 ms grid; E = T + V of the robot, contact springs excluded); relative: divided by the
  energy the reference's first impact removed;
- transitions: discrete contact changes (reference: mode changes; baselines: changes of the
  per-contact in-contact flag between internal steps);
- runtime_s: wall time of the run after a warm-up (compilation excluded), s.
One PNG (heights, impact zoom, block angle, block energy) is written under runs/bench/.
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

from robots import get_robot, numeric
from sim.baselines import HybridResetPlant, PenaltyPlant, TimeSteppingPlant
from sim.hybrid import HybridPlant
from sim.protocol import JointCommand

DT = 1e-3  # plant step and sampling period, s
WINDOW = 0.05  # energy comparison this long after the reference's first impact, s
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "runs" / "bench"


def _methods(robot: str):
    """(name, factory(model)) of the four methods for a scenario."""
    if robot == "point_mass":
        penalty = lambda m: PenaltyPlant(m, law="tanh", integrator="euler", dt_sim=1e-3)  # noqa: E731
    else:
        penalty = lambda m: PenaltyPlant(m, law="linear", integrator="semi_implicit", dt_sim=1e-4)  # noqa: E731
    return [
        ("hybrid-reference", lambda m: HybridPlant(m)),
        ("hybrid-reset", lambda m: HybridResetPlant(m, restitution=0.0, dt_sim=1e-3, integrator="euler")),
        ("penalty", penalty),
        ("time-stepping", lambda m: TimeSteppingPlant(m, dt_sim=1e-3)),
    ]


def _scenario(robot: str):
    """(model, q0, duration s, rest height of coordinate `height_index` in m, height_index)."""
    if robot == "point_mass":
        model = get_robot("point_mass")
        return model, np.array([1.0]), 1.5, 0.0, 0
    model = get_robot("block")
    hw, hh = 0.5 * model.params["width"], 0.5 * model.params["height"]
    tilt = 0.5 * model.params["alpha"]
    q0 = np.array([-hw + hw * math.cos(tilt) - hh * math.sin(tilt), hw * math.sin(tilt) + hh * math.cos(tilt), tilt])
    return model, q0, 2.5, hh, 1


def _simulate(plant, q0: np.ndarray, duration: float) -> dict:
    """Run a plant at DT; returns sampled t, q, v, energy, gaps and the wall time."""
    model = plant.model
    fns = numeric(model, verbose=False)
    cmd = JointCommand.zero(model.nu)
    plant.reset(q0)
    plant.step(cmd, DT)  # warm-up: compile kernels / build solvers outside the timing
    n = int(round(duration / DT))
    ts, qs, vs = [0.0], [np.array(q0, dtype=float)], [np.zeros(model.nv)]
    state = plant.reset(q0)
    t0 = time.perf_counter()
    for _ in range(n):
        state = plant.step(cmd, DT)
        ts.append(state.t)
        qs.append(state.q)
        vs.append(state.v)
    runtime = time.perf_counter() - t0
    q, v = np.array(qs), np.array(vs)
    energy = np.array([sum(fns.energy(a, b)) for a, b in zip(q, v)])
    gaps = np.array([fns.contact_gap(a) for a in q])
    return {"t": np.array(ts), "q": q, "v": v, "E": energy, "gaps": gaps, "runtime_s": runtime}


def _figures(name: str, plant, run: dict, ref: dict, rest: float, hi: int, t_imp: float, dE_ref: float) -> dict:
    k = int(round((t_imp + WINDOW) / DT))
    pen = float(max(0.0, -run["gaps"].min()))
    if "max_penetration" in getattr(plant, "stats", {}):
        pen = max(pen, plant.stats["max_penetration"])
    if isinstance(plant, HybridPlant):
        transitions = sum(1 for e in plant.events if e.kind != "reset" and e.changed_mode)
    else:
        transitions = int(plant.stats["transitions"])
    err = float(run["E"][k] - ref["E"][k])
    out = {
        "max_penetration_m": pen,
        "rest_height_error_m": float(run["q"][-1, hi] - rest),
        "final_speed": float(np.abs(run["v"][-1]).max()),
        "energy_error_first_impact_J": err,
        "energy_error_first_impact_rel": err / dE_ref if dE_ref > 0 else None,
        "transitions": transitions,
        "runtime_s": run["runtime_s"],
    }
    if isinstance(plant, HybridPlant):
        out.update(impacts=plant.stats["touchdowns"], zeno_completions=plant.stats["zeno"])
    if isinstance(plant, TimeSteppingPlant):
        out["ipopt_failures"] = plant.stats["ipopt_failures"]
    return out


def run_scenario(robot: str) -> tuple[dict, dict]:
    """Figures (JSON-ready) and raw runs of every method for one scenario."""
    model, q0, duration, rest, hi = _scenario(robot)
    runs, plants = {}, {}
    for name, make in _methods(robot):
        plant = make(model)
        runs[name] = _simulate(plant, q0, duration)
        plants[name] = plant
    ref_plant, ref = plants["hybrid-reference"], runs["hybrid-reference"]
    impacts = [e for e in ref_plant.events if e.kind in ("touchdown", "zeno") and np.any(e.impulse != 0)]
    first = impacts[0]
    fns = numeric(model, verbose=False)
    dE_ref = float(sum(fns.energy(first.q, first.v_minus)) - sum(fns.energy(first.q, first.v_plus)))
    figures = {
        "scenario": {"robot": robot, "q0": q0.tolist(), "duration_s": duration, "step_s": DT,
                     "rest_height_m": rest, "first_impact_t_s": first.t, "energy_lost_first_impact_J": dE_ref,
                     "energy_window_s": WINDOW},
        "methods": {name: _figures(name, plants[name], runs[name], ref, rest, hi, first.t, dE_ref) for name in runs},
    }
    return figures, runs


def _plot(pm_runs: dict, pm_fig: dict, bl_runs: dict, bl_fig: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {"hybrid-reference": ("k", "-", 2.2), "hybrid-reset": ("tab:blue", "--", 1.3),
              "penalty": ("tab:orange", "-", 1.3), "time-stepping": ("tab:green", ":", 1.8)}
    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5))
    t1 = pm_fig["scenario"]["first_impact_t_s"]
    for name, run in pm_runs.items():
        c, ls, lw = styles[name]
        m = pm_fig["methods"][name]
        label = (f"{name}: pen {1e3 * m['max_penetration_m']:.2f} mm, rest {1e3 * m['rest_height_error_m']:+.2f} mm, "
                 f"{m['runtime_s']:.2f} s")
        axes[0, 0].plot(run["t"], run["q"][:, 0], color=c, ls=ls, lw=lw, label=label)
        sel = (run["t"] > t1 - 0.01) & (run["t"] < t1 + 0.12)
        axes[0, 1].plot(run["t"][sel], 1e3 * run["q"][sel, 0], color=c, ls=ls, lw=lw, label=name)
    axes[0, 0].set(title="point mass dropped from 1 m: height", xlabel="t (s)", ylabel="z (m)")
    axes[0, 1].axhline(0.0, color="0.6", lw=0.8)
    axes[0, 1].set(title="point mass: first impact (zoom)", xlabel="t (s)", ylabel="z (mm)")
    for name, run in bl_runs.items():
        c, ls, lw = styles[name]
        m = bl_fig["methods"][name]
        axes[1, 0].plot(run["t"], run["q"][:, 2], color=c, ls=ls, lw=lw,
                        label=f"{name}: {m['transitions']} transitions, {m['runtime_s']:.2f} s")
        axes[1, 1].plot(run["t"], run["E"] - bl_runs["hybrid-reference"]["E"][-1], color=c, ls=ls, lw=lw,
                        label=f"{name}: dE(first impact) {m['energy_error_first_impact_J']:+.3f} J")
    axes[1, 0].set(title="rocking block (0.2 x 0.6 m, 10 kg): tilt", xlabel="t (s)", ylabel="theta (rad)")
    axes[1, 1].set(title="rocking block: energy above the rest energy", xlabel="t (s)", ylabel="E - E_rest (J)")
    for ax in axes.ravel():
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7.5, loc="best")
    fig.suptitle("contact methods: event-driven reference vs hybrid reset, penalty, time-stepping (seed 003)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def bench_contact_methods(args) -> dict:
    """Figures of the four contact methods on the point-mass drop and the rocking block, and the
    path of the comparison PNG (see the module docstring for definitions and units)."""
    pm_fig, pm_runs = run_scenario("point_mass")
    bl_fig, bl_runs = run_scenario("block")
    out_dir = Path(getattr(args, "out", None) or DEFAULT_OUT)
    path = out_dir / f"contact-methods-{time.strftime('%Y%m%d-%H%M%S')}.png"
    _plot(pm_runs, pm_fig, bl_runs, bl_fig, path)
    print(f"[bench contact-methods] wrote {path}", file=sys.stderr)
    return {"point_mass": pm_fig, "block": bl_fig, "plot": str(path)}
