"""`make demo` / `python -m launch demo`: the main job, a closed-loop hopper over the bridge.

It runs the `hopper` scenario (launch/scenarios/hopper.toml): the ESS plant and the joint-PD
stand controller as two processes joined by ZeroMQ, in lockstep, and ends with the per-tick
latency table. The contact-implicit MPC controller is not built yet (see `issues`); when it
lands, the scenario's controller changes and this demo with it.
"""
from __future__ import annotations

from pathlib import Path


def run_demo() -> int:
    """Run the hopper scenario, print the latency table and what ran. Returns 0 on success."""
    from rich.console import Console

    from .profile import profile
    from .run import run
    from .scenario import load_scenario

    con = Console()
    scenario = load_scenario("hopper")
    con.rule(f"legmpc demo: closed-loop {scenario.robot}")
    con.print(f"plant [bold]{scenario.plant}[/] + controller [bold]{scenario.controller}[/] as two processes over "
              f"ZeroMQ, {scenario.mode}, {scenario.control_rate_hz:g} Hz control, {scenario.plant_rate_hz:g} Hz plant, "
              f"{scenario.duration_s:g} s. (The first run compiles the plant's kernels: ~30 s.)")
    summary = run(scenario)
    folder = Path(summary["run_dir"])
    profile([folder], plots=False)
    con.print(f"fell: {summary['fell']}   misses: {summary['misses']}   rejected messages: {summary['rejected'] or 0}")
    con.print(f"run folder: {folder}  (summary.json, plant_ticks.csv, controller_ticks.csv, trajectory.npz, "
              "trajectory.png, latency.png, phases.png)")
    con.print("[bold]Ran:[/] ESS plant + joint-PD stand controller over the bridge. "
              "[bold]Not yet:[/] the contact-implicit MPC controller (issue: MPC).")
    return 0 if not summary["fell"] and summary["misses"] == 0 else 1
