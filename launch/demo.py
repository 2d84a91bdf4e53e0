"""`make demo` / `python -m launch demo`: the main job, a closed-loop hopper over the bridge.

It runs the `hopper` scenario (launch/scenarios/hopper.toml): the ESS plant at 1 kHz and the
contact-implicit MPC (acados SQP-RTI at 100 Hz, hopping forward) as two processes joined by
ZeroMQ, in lockstep, and ends with the per-tick latency table and the task figures.
"""
from __future__ import annotations

from pathlib import Path


def run_demo() -> int:
    """Run the hopper scenario, print the latency table and what ran. Returns 0 on success."""
    from rich.console import Console

    from .profile import profile
    from .run import run
    from .runfolder import outcome_line, run_failure
    from .scenario import load_scenario

    con = Console()
    scenario = load_scenario("hopper")
    con.rule(f"legmpc demo: closed-loop {scenario.robot}")
    con.print(f"plant [bold]{scenario.plant}[/] + controller [bold]{scenario.controller}[/] as two processes over "
              f"ZeroMQ, {scenario.mode}, {scenario.control_rate_hz:g} Hz control, {scenario.plant_rate_hz:g} Hz plant, "
              f"{scenario.duration_s:g} s. (The first run compiles the plant's kernels and the acados solver "
              "and solves the reference gait: ~1 min.)")
    summary = run(scenario)
    folder = Path(summary["run_dir"])
    profile([folder], plots=False)
    con.print(outcome_line(summary))
    p99 = summary["solve_ms"]["p99"]
    con.print(f"apex height {_fmt(summary['apex_height_m'])} m, forward speed {_fmt(summary['vx_mps'])} m/s, "
              f"solve p99 " + ("n/a" if p99 is None else f"{p99:.2f} ms"))
    from .cli import after_run

    extras = after_run(folder, quiet=True)
    con.print(f"run folder: {folder}  (summary.json, plant_ticks.csv, misses.csv, controller_ticks.csv, "
              "trajectory.npz, trajectory.png, latency.png, phases.png" + "".join(f", {x}" for x in extras) + ")")
    failure = run_failure(summary)
    if failure:
        con.print(f"[bold red]error:[/] {failure}")
        return 1
    con.print(f"[bold]Ran:[/] {scenario.plant.upper()} plant + contact-implicit MPC ({scenario.controller}) over the bridge.")
    return 0 if not summary["fell"] and summary["misses"] == 0 else 1


def _fmt(pair: dict) -> str:
    mean = "n/a" if pair["mean"] is None else f"{pair['mean']:.3f}"
    return mean if pair["target"] is None else f"{mean} (target {pair['target']:g})"
