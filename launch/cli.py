"""The command-line interface. Each sub-command is a small function taking parsed arguments.

    python -m launch robots [ROBOT ...] [--json]   table of robots (nq, nv, nu, contacts, source)
    python -m launch demo                   the main job (what exists so far, said plainly)
    python -m launch bench <name> [--json]  reproducible benchmarks (`bench --list`)
    python -m launch plan <scenario> [--json] offline time-freezing/FESD plan (hopper-holes, particle;
                                            hopper-holes --warm-start from the shipped plan, --ship)
    python -m launch sweep <scenario> --vary FIELD=START:STOP:N [--seeds K] [--json]  Monte Carlo sweep on Ray
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Sequence


def _port(text: str) -> int:
    """argparse type: a TCP port number 1..65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be in 1..65535, got {port}")
    return port


def robot_table(extra: Sequence[str] = ()) -> list[dict]:
    """One row per robot (registered and entry-point robots, then `extra` names or import
    paths): name, dim (2: planar, 3), nq, nv, nu, ncontacts (default parameters), source. A robot that cannot be
    built (a broken entry point, say) gets its row with nq..ncontacts None and "error" saying why."""
    from robots import get_robot, robot_names
    from robots.registry import robot_source

    rows = []
    for name in dict.fromkeys([*robot_names(), *extra]):
        row = {"name": name, "dim": None, "nq": None, "nv": None, "nu": None, "ncontacts": None, "source": "unknown"}
        try:
            row["source"] = robot_source(name)
            m = get_robot(name)
            row.update(dim=m.dim, nq=m.nq, nv=m.nv, nu=m.nu, ncontacts=m.nc)
        except ValueError as exc:
            row["error"] = str(exc)
        rows.append(row)
    return rows


def cmd_scenarios(args: argparse.Namespace) -> int:
    """Print every shipped scenario and every scenario field with its default and unit."""
    from . import scenario_table

    if args.markdown:
        sys.stdout.write(scenario_table.markdown())  # byte for byte docs/SCENARIOS.md
    else:
        print(scenario_table.as_json() if args.json else scenario_table.text())
    return 0


def cmd_robots(args: argparse.Namespace) -> int:
    """Print the robot table (or JSON); a robot that cannot be built is listed with its error
    (and the exit code is 1)."""
    rows = robot_table(args.robot)
    broken = [r for r in rows if "error" in r]
    if args.json:
        print(json.dumps(rows))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="robots (python -m launch robots --json for machine-readable output)")
        numbers = ("dim", "nq", "nv", "nu", "ncontacts")
        for col in ("name", *numbers, "source"):
            table.add_column(col, justify="right" if col in numbers else "left")
        for r in rows:
            table.add_row(r["name"], *("-" if r[k] is None else str(r[k]) for k in numbers),
                          r["source"])
        Console().print(table)
    for r in broken:
        print(f"error: {r['error']}", file=sys.stderr)
    return 1 if broken else 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the main job. Until the closed loop exists, it runs the foundation end to end."""
    from .demo import run_demo

    return run_demo()


def cmd_run(args: argparse.Namespace) -> int:
    """Run a scenario closed loop (plant and controller processes over the bridge)."""
    from .run import run
    from .runfolder import run_failure

    if not args.slowmo > 0:
        raise ValueError(f"--slowmo must be > 0, got {args.slowmo}")
    if args.from_sweep is not None or args.episode is not None:
        sc, base = _sweep_episode_scenario(args), None
    else:
        if args.scenario is None:
            raise ValueError("give a scenario (python -m launch run hopper) or --from-sweep DIR --episode K")
        sc, base = _overridden_scenario(args)
    from .run import folder_label

    summary = run(sc, progress=not args.json, live_port=args.live_port if args.live else None,
                  label=folder_label(sc, base))
    if args.json:
        print(json.dumps(summary))
    else:
        from .profile import profile
        from .runfolder import outcome_line

        print(f"run folder: {summary['run_dir']}")
        profile([__import__("pathlib").Path(summary["run_dir"])], plots=False)
        print(outcome_line(summary))
    after_run(summary["run_dir"], animation=not args.no_animation, slowmo=args.slowmo, quiet=args.json)
    if not args.json:
        from .runfolder import verdict_line

        print(verdict_line(summary))
    if summary.get("interrupted"):
        ran = summary["ticks"] / summary["rate_hz"] if summary.get("ticks") and summary.get("rate_hz") else 0.0
        print(f"interrupted at t = {ran:.2f} s of {sc.duration_s:g} s (the run folder holds what ran)",
              file=sys.stderr)
        return 130
    failure = run_failure(summary)
    if failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    return 1 if summary.get("fell") else 0


def _overridden_scenario(args: argparse.Namespace):
    """(the named scenario with `launch run`'s overrides (--duration, --robot, --push, ...),
    validated; the scenario as loaded)."""
    from .scenario import load_scenario

    base = sc = load_scenario(args.scenario)
    if args.robot is not None and args.robot != sc.robot:
        sc = sc.with_overrides(robot=args.robot)  # validated below, with the other overrides
    if args.controller is not None and args.controller != sc.controller:
        sc = sc.with_overrides(controller_options={})  # the scenario's options belong to its own controller
    from .sweep_spec import apply_changes, parse_set

    sc = apply_changes(sc, dict(parse_set(text) for text in args.set))  # None kept: friction_mu=none
    if args.push_at is not None and not (args.push or sc.push_ns):
        raise ValueError(f"--push-at {args.push_at:g} times a push, but the run has none: add --push N (N s)")
    return sc.with_overrides(duration_s=args.duration, mode=args.mode, plant=args.plant, controller=args.controller,
                             push_ns=args.push, push_axis=args.push_axis, push_at_s=args.push_at).validate(), base


def _sweep_episode_scenario(args: argparse.Namespace):
    """Episode K's exact scenario from the sweep folder DIR (--from-sweep DIR --episode K)."""
    from .sweep_spec import load_spec

    if args.from_sweep is None or args.episode is None:
        raise ValueError("--from-sweep DIR and --episode K go together (K: a row's `episode` in DIR/episodes.csv)")
    given = [flag for flag, value in (("SCENARIO", args.scenario), ("--set", args.set or None),
                                      ("--duration", args.duration),
                                      ("--mode", args.mode), ("--robot", args.robot), ("--plant", args.plant),
                                      ("--controller", args.controller), ("--push", args.push),
                                      ("--push-axis", args.push_axis), ("--push-at", args.push_at))
             if value is not None]
    if given:
        raise ValueError(f"--from-sweep replays episode {args.episode} exactly as the sweep ran it; drop "
                         f"{', '.join(given)}")
    return load_spec(args.from_sweep).scenario(args.episode).validate()


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run a Monte Carlo sweep of closed-loop episodes on Ray (docs/SWEEPS.md); print its summary."""
    from .sweep import run_sweep
    from .sweep_spec import SweepSpec

    spec = None
    if args.scenario is not None:
        spec = SweepSpec.from_args(args.scenario, args.vary, seeds=args.seeds, duration_s=args.duration,
                                   sets=args.set)
    elif args.resume is None:
        raise ValueError("give a scenario to sweep (python -m launch sweep hopper --vary push=0:4:3) or --resume DIR")
    elif args.vary or args.set or args.seeds != 1 or args.duration is not None:
        raise ValueError("--resume DIR finishes the sweep its sweep.json describes; give the scenario and --vary, "
                         "--seeds, --duration, --set exactly as before, or none of them")
    import contextlib

    with contextlib.redirect_stdout(sys.stderr):  # Ray's own messages (a worker died, ...) stay off stdout
        summary = run_sweep(spec, resume=args.resume, workers=args.workers, address=args.address, progress=True)
    if args.json:
        print(json.dumps(summary))
    else:
        from .sweep_report import format_summary

        print(format_summary(summary))
    if summary["interrupted"] or summary["episodes_missing"]:
        print(f"{summary['episodes_missing']} episodes not run; finish them with: python -m launch sweep --resume "
              f"{summary['sweep_dir']}", file=sys.stderr)
        return 130 if summary["interrupted"] else 1
    return 0


def after_run(run_dir, *, animation: bool = True, slowmo: float = 1.0, quiet: bool = False) -> list[str]:
    """Write RUN_DIR/run.mcap (launch/mcap_log.py) and, unless told not to, animation.mp4
    (launch/animate.py) after a run. A failure is reported on stderr and does not change the
    run's outcome. Returns the names of the files written."""
    from .animate import render
    from .mcap_log import write_mcap

    jobs = [("run.mcap", lambda: write_mcap(run_dir))]
    if animation:
        jobs.append(("animation.mp4", lambda: render(run_dir, slowmo=slowmo, progress=not quiet)))
    written = []
    for name, make in jobs:
        try:
            out = make()
        except Exception as exc:  # noqa: BLE001 - the run is done and logged; these are extras
            print(f"warning: no {name} for {run_dir}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        written.append(name)
        if not quiet and name == "animation.mp4":
            print(f"animation: {out['path']} ({out['frames']} frames, rendered in {out['render_s']:.1f} s: "
                  f"{out['renderer']})")
    return written


def cmd_mcap(args: argparse.Namespace) -> int:
    """Re-write a run folder's run.mcap."""
    from .mcap_log import write_mcap

    out = write_mcap(args.run)
    print(f"run.mcap: {out['path']} ({out['ticks']} ticks on {', '.join(out['channels'])})")
    return 0


def cmd_animate(args: argparse.Namespace) -> int:
    """Re-render a run folder's animation.mp4."""
    from .animate import render

    out = render(args.run, fps=args.fps, slowmo=args.slowmo)
    print(f"animation: {out['path']} ({out['frames']} frames, {out['seconds']:.1f} s of video, "
          f"rendered in {out['render_s']:.1f} s: {out['renderer']})")
    return 0


def cmd_view(args: argparse.Namespace) -> int:
    """Serve a run folder's interactive 3D replay in the browser until Ctrl-C."""
    from .view import serve

    serve(args.run, host=args.host, port=args.port, trace=args.trace_frames)
    return 0


def cmd_serve_plant(args: argparse.Namespace) -> int:
    """Run a plant alone for an outside controller (see docs/PROTOCOL.md)."""
    import time

    t_start = time.perf_counter()
    from bridge.server import PlantServer, ServerOptions
    from robots import get_robot
    from sim.registry import make_plant

    opts = ServerOptions(bind=args.bind, mode=args.mode, control_rate_hz=args.rate, plant_rate_hz=args.plant_rate,
                         duration_s=args.duration, log_dir=args.log_dir, curve_keys=args.curve_keys,
                         hold_ticks=args.hold_ticks, safe_kp=args.safe_kp, sensors=args.sensors,
                         sensor_noise_scale=args.sensor_noise_scale, sensor_seed=args.seed).validate()  # before the build
    model = get_robot(args.robot)
    if args.sensors == "hardware" and not model.floating_base:
        raise ValueError(f"--sensors hardware needs a floating-base robot (an IMU on its base); {args.robot!r} is "
                         "planar: use --sensors full")
    plant = make_plant(args.plant, model, plant_rate_hz=args.plant_rate)
    print(f"serving {args.robot} ({args.plant} plant, {args.mode}) on {args.bind}; compiling the plant, then "
          "'ready ENDPOINT' on stdout; Ctrl-C to stop", file=sys.stderr)
    server = PlantServer(plant, opts, announce=True, t_start=t_start)
    summary = server.run()
    print(json.dumps({k: v for k, v in summary.items() if k != "options"}))
    return 0


def cmd_profile(args: argparse.Namespace) -> int:
    """Latency table and plots of one run, or two side by side."""
    from pathlib import Path

    from .profile import profile

    folders = [Path(args.run)] + ([Path(args.compare)] if args.compare else [])
    profile(folders)
    return 0


def cmd_keys(args: argparse.Namespace) -> int:
    """Create CurveZMQ keys for a plant and one controller."""
    from bridge.security import make_keys

    print(f"keys written to {make_keys(args.folder)}")
    return 0


ROBOT_BENCHMARKS = ("plant3d",)  # the benchmarks `bench --robot NAME` applies to


def cmd_bench(args: argparse.Namespace) -> int:
    """Run one named benchmark and print its figures."""
    from bench import BENCHMARKS

    if args.list or not args.name:
        for name, (_, doc) in BENCHMARKS.items():
            print(f"{name:20s} {doc}")
        return 0 if args.list else 2
    if args.name not in BENCHMARKS:
        print(f"unknown benchmark {args.name!r}; available: {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    if args.robot is not None and args.name not in ROBOT_BENCHMARKS:
        print(f"bench {args.name} does not take --robot (benchmarks that do: {', '.join(ROBOT_BENCHMARKS)})",
              file=sys.stderr)
        return 2
    if args.robot is not None:  # checked before any work (the robot benchmarks run 3D plants)
        from bench.plant3d import bench_robot

        try:
            bench_robot(args.robot)
        except ValueError as exc:
            print(f"bench {args.name}: {exc}", file=sys.stderr)
            return 2
    fn, _ = BENCHMARKS[args.name]
    result = fn(args)
    _print_result(result, args.json)
    return 0


def _print_result(result: dict, as_json: bool) -> None:
    """A bench or plan result: one JSON line, or one aligned `key value` line per field."""
    if as_json:
        print(json.dumps(result))
    else:
        for line in result_lines(result):
            print(line)


def result_lines(result: dict) -> list[str]:
    """A result dict as aligned text: nested dicts as `key.sub value` lines, a list of dicts as a
    table (one row per item, a column per field), numbers to 4 significant digits."""
    def text(value) -> str:
        if isinstance(value, float):
            return f"{value:.4g}"
        if isinstance(value, (list, tuple)) and not any(isinstance(v, dict) for v in value):
            return ", ".join(text(v) for v in value)
        return str(value)

    def flat(prefix: str, value) -> list[tuple[str, object]]:
        if isinstance(value, dict) and value:
            return [pair for k, v in value.items() for pair in flat(f"{prefix}.{k}" if prefix else str(k), v)]
        return [(prefix, value)]

    lines: list[str] = []
    for key, value in result.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            rows = [dict(flat("", v)) for v in value]
            columns = list(dict.fromkeys(c for row in rows for c in row))
            cells = [[text(row.get(c, "")) for c in columns] for row in rows]
            widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
            lines.append(f"{key}:")
            lines.append("  " + "  ".join(c.rjust(w) for c, w in zip(columns, widths)))
            lines += ["  " + "  ".join(v.rjust(w) for v, w in zip(r, widths)) for r in cells]
        else:
            lines += [f"{k:24s} {text(v)}" for k, v in flat(key, value)]
    return lines


def cmd_plan(args: argparse.Namespace) -> int:
    """Solve an offline plan (mpc.planning), write PNGs + NPZ under --out, print the summary;
    with --ship, verify the plan already in --out and write it as the package's shipped plan."""
    from pathlib import Path

    if args.ship:
        if args.scenario != "hopper-holes" or args.warm_start is not None:
            raise ValueError("--ship writes the shipped hopper-holes plan from a plan already made (give it "
                             "without --warm-start, for hopper-holes only)")
        from mpc.planning.scenarios import stderr_progress
        from mpc.planning.shipped import make_shipped

        out = make_shipped(Path(args.out) / "hopper-holes", progress=stderr_progress)
        _print_result(out if args.json else {k: out[k] for k in ("path", "bytes", "model_hash")}, args.json)
        return 0
    from mpc.planning.scenarios import run_scenario

    warm = args.warm_start
    if warm == "shipped":
        from mpc.planning.shipped import SHIPPED_PLAN

        warm = SHIPPED_PLAN
    overrides = {} if args.max_homotopy is None else {"max_homotopy": args.max_homotopy}
    if args.linear_solver is not None:
        overrides["linear_solver"] = args.linear_solver
    result = run_scenario(args.scenario, out_dir=args.out, replay=not args.no_replay, strategy=args.strategy,
                          hole_semi_axis=args.hole_semi_axis, warm_start=warm, **overrides)
    _print_result(result, args.json)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser for all sub-commands."""
    parser = argparse.ArgumentParser(
        prog="legmpc" if os.path.basename(sys.argv[0]) == "legmpc" else "python -m launch",
        description="Real-time contact-implicit MPC runtime for legged robots.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("robots", help="list the robots with nq, nv, nu and number of contacts")
    p.add_argument("robot", nargs="*", help="also these robots: names or import paths package.module:build")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_robots)
    p = sub.add_parser("scenarios", help="list the shipped scenarios and every scenario field (default, unit)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--markdown", action="store_true", help="print docs/SCENARIOS.md")
    p.set_defaults(func=cmd_scenarios)
    p = sub.add_parser("demo", help="run the main job (what `make demo` runs)")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("run", help="run a scenario closed loop over the bridge (plant + controller processes)",
                       epilog="exit code: 0 the run ended and the robot did not fall, 1 the robot fell, a process "
                              "failed or the plant left physics, 130 interrupted (Ctrl-C). The last line is the "
                              "verdict: the task's targets against what was achieved, the push and its outcome, "
                              "the misses by cause")
    p.add_argument("scenario", nargs="?",
                   help="scenario name (python -m launch scenarios lists them) or path to a .toml file")
    p.add_argument("--from-sweep", metavar="DIR", help="replay an episode of the sweep folder DIR (with --episode)")
    p.add_argument("--episode", type=int, metavar="K", help="the episode of --from-sweep DIR to replay")
    p.add_argument("--duration", type=float, help="simulated seconds")
    p.add_argument("--mode", choices=("lockstep", "realtime"), help="override the scenario's mode")
    p.add_argument("--robot", help="override the robot: a name (python -m launch robots) or an import path "
                                   "package.module:build, importable from the current folder or PYTHONPATH")
    p.add_argument("--plant", help="override the plant (ess, nmdp, hybrid, mujoco)")
    p.add_argument("--controller", help="override the controller: pd, mpc, or your own as an import path "
                                        "package.module:make (examples/my_controller.py)")
    p.add_argument("--push", type=float, default=None, metavar="N",
                   help="push of N newton-seconds on the base (horizontal, at mid-run by default)")
    p.add_argument("--push-axis", choices=("x", "y", "z"), default=None,
                   help="direction of the push: x (default) or y horizontal (y: 3D robots), z vertical (up)")
    p.add_argument("--push-at", type=float, default=None, metavar="S", help="time of the push, s (default: mid-run)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="change a scenario field, e.g. a model error: mass_scale=1.2, command_latency_ticks=1 "
                        "(docs/SWEEPS.md)")
    p.add_argument("--json", action="store_true", help="print summary.json instead of the table")
    p.add_argument("--no-animation", action="store_true", help="skip RUN_DIR/animation.mp4 (rendered after the run)")
    p.add_argument("--live", action="store_true",
                   help="stream the run to Foxglove while it goes (WebSocket server, ws://127.0.0.1:PORT)")
    p.add_argument("--live-port", type=_port, default=8765, help="port of --live's server (default %(default)s)")
    p.add_argument("--slowmo", type=float, default=1.0, metavar="F",
                   help="animation F times slower than real time (default %(default)s)")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("sweep", help="Monte Carlo sweep of closed-loop episodes on Ray (docs/SWEEPS.md)",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Run every combination of the varied scenario fields times K seeds, each episode "
                                   "a lockstep closed loop in one Ray task (one CPU); write runs/<stamp>-sweep-"
                                   "<scenario>/ with episodes.csv (rows as they arrive), episodes.parquet, "
                                   "summary.json (success rates with Wilson 95 % intervals) and plots.",
                       epilog="FIELD: a scenario field (launch/scenario.py) or a short name: push=push_ns, "
                              "push_at=push_at_s,\ndrop=drop_m, duration=duration_s, latency=command_latency_ticks. "
                              "Example:\n  python -m launch sweep hopper --vary push=0:4:3 --seeds 2 --duration 3 --json")
    p.add_argument("scenario", nargs="?",
                   help="scenario name (python -m launch scenarios lists them) or path to a .toml file")
    p.add_argument("--vary", action="append", default=[], metavar="FIELD=START:STOP:N",
                   help="N evenly spaced values of FIELD from START to STOP (or FIELD=A,B,C); repeat for more fields")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="change FIELD for every episode (e.g. sensor_noise_q=0.001)")
    p.add_argument("--seeds", type=int, default=1, metavar="K", help="episodes per point, seeds seed..seed+K-1 "
                                                                       "(default %(default)s)")
    p.add_argument("--duration", type=float, metavar="S", help="simulated seconds per episode")
    p.add_argument("--workers", type=int, metavar="N", help="CPUs of the local Ray (default: this machine's cores)")
    p.add_argument("--address", metavar="ADDR", help="run on an existing Ray cluster: auto, HOST:PORT of its head, "
                                                     "or ray://HOST:PORT (Ray client)")
    p.add_argument("--resume", metavar="DIR", help="run only the episodes missing from the sweep folder DIR")
    p.add_argument("--json", action="store_true", help="print summary.json (progress stays on stderr)")
    p.set_defaults(func=cmd_sweep)
    p = sub.add_parser(
        "serve-plant", help="run a plant alone for an outside controller",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Serve one plant over ZeroMQ to an outside controller (docs/PROTOCOL.md).",
        epilog="Once the socket is bound and the plant compiled, prints 'ready ENDPOINT' on stdout (and, with\n"
               "--log-dir, writes ready.json and endpoint there); at the end it prints the summary as JSON.\n"
               "--log-dir gets the plant's files of a `launch run` folder: plant_ticks.csv, trajectory.npz,\n"
               "progress.json, plant_summary.json, ready.json, endpoint (and sensors.npz with --sensors hardware).\n"
               "The controller's files\n"
               "(controller_ticks.csv, ...), summary.json and the plots are not written: a `run` makes\n"
               "them from both processes.")
    p.add_argument("robot", help="a robot name (python -m launch robots) or an import path package.module:build, "
                                 "importable from the current folder or PYTHONPATH")
    p.add_argument("--bind", default="tcp://127.0.0.1:5555", help="ZeroMQ endpoint (default %(default)s)")
    p.add_argument("--plant", default="ess", help="plant: ess, nmdp, hybrid or mujoco (default %(default)s)")
    p.add_argument("--mode", default="realtime", choices=("lockstep", "realtime"), help="(default %(default)s)")
    p.add_argument("--rate", type=float, default=100.0, help="control rate, Hz (default %(default)s)")
    p.add_argument("--plant-rate", type=float, default=1000.0, help="plant rate, Hz (default %(default)s)")
    p.add_argument("--hold-ticks", type=int, default=3,
                   help="ticks to hold the last command after a miss (default %(default)s)")
    p.add_argument("--safe-kp", type=float, default=None, metavar="KP",
                   help="stiffness (N m/rad) of the safe command that follows the held ones, holding the joints where "
                        "they were (default: the robot's controller_defaults['safe']['kp']: 40 for go1, 50 for go2, "
                        "200 for anymal_c, 0 = damping only for the planar robots)")
    p.add_argument("--duration", type=float, default=None,
                   help="stop after this many simulated seconds (default: until Ctrl-C or SIGTERM)")
    p.add_argument("--sensors", default="full", choices=("full", "hardware"),
                   help="what STATE carries: the true state (full, default) or the robot's own sensors (hardware: "
                        "encoders, IMU, foot forces; docs/PROTOCOL.md 'Hardware sensors', docs/ESTIMATION.md)")
    p.add_argument("--sensor-noise-scale", type=float, default=1.0, metavar="S",
                   help="hardware sensors: multiply every noise and bias of the robot's sensor data (default 1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the hardware sensors' noise (default 0)")
    p.add_argument("--log-dir", default=None, help="write the plant's run logs here (default: none)")
    p.add_argument("--curve-keys", default=None,
                   help="CurveZMQ key folder (required off loopback; default: none, loopback only)")
    p.set_defaults(func=cmd_serve_plant)
    p = sub.add_parser("profile", help="per-tick latency table and plots of a run folder")
    p.add_argument("run", help="run folder (runs/<timestamp>-<scenario>)")
    p.add_argument("--compare", help="a second run folder to put side by side")
    p.set_defaults(func=cmd_profile)
    p = sub.add_parser("animate", help="render a run folder's animation.mp4 (the robot, contact forces, misses)")
    p.add_argument("run", help="run folder (runs/<timestamp>-<scenario>)")
    p.add_argument("--slowmo", type=float, default=1.0, metavar="F", help="F times slower than real time")
    p.add_argument("--fps", type=int, default=30, help="frames per second of video (default %(default)s)")
    p.set_defaults(func=cmd_animate)

    p = sub.add_parser("view", help="serve a run folder's interactive 3D replay in the browser (viser)")
    p.add_argument("run", help="run folder (runs/<timestamp>-<scenario>)")
    p.add_argument("--host", default="127.0.0.1", help="address to serve on (default %(default)s)")
    p.add_argument("--port", type=_port, default=8080, help="port (default %(default)s)")
    p.add_argument("--trace-frames", action="store_true",
                   help="print a line per frame drawn (t and base position; for tests and scripts)")
    p.set_defaults(func=cmd_view)

    p = sub.add_parser("mcap", help="write a run folder's run.mcap (for Foxglove): poses, joints, contacts, timing")
    p.add_argument("run", help="run folder (runs/<timestamp>-<scenario>)")
    p.set_defaults(func=cmd_mcap)

    p = sub.add_parser("keys", help="create CurveZMQ keys (plant + one controller) in a folder")
    p.add_argument("folder")
    p.set_defaults(func=cmd_keys)
    p = sub.add_parser("bench", help="run a benchmark (see --list)")
    p.add_argument("name", nargs="?", help="benchmark name")
    p.add_argument("--list", action="store_true", help="list benchmarks")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--repeats", type=int, default=None, help="override the number of repeats")
    p.add_argument("--full", action="store_true", help="the paper's full-size run where a benchmark has one")
    p.add_argument("--robot", default=None, metavar="NAME",
                   help=f"the robot of a benchmark that takes one ({', '.join(ROBOT_BENCHMARKS)}; default go1)")
    p.set_defaults(func=cmd_bench)
    p = sub.add_parser("plan", help="offline contact-implicit plan (time-freezing + FESD): hopper-holes, particle")
    p.add_argument("scenario", choices=("hopper-holes", "particle"), help="which plan to solve")
    p.add_argument("--json", action="store_true", help="print the summary as JSON (progress goes to stderr)")
    p.add_argument("--out", default="runs/plans", help="folder for the PNGs, plan.npz and summary.json")
    p.add_argument("--no-replay", action="store_true", help="skip the open-loop replay check")
    p.add_argument("--max-homotopy", type=int, default=None, help="override the number of homotopy steps")
    p.add_argument("--linear-solver", default=None, metavar="NAME",
                   help="IPOPT linear solver (default mumps; ma57 etc. need an HSL library IPOPT can load)")
    p.add_argument("--strategy", choices=("scale", "sigma"), default="scale",
                   help="hopper-holes: 'scale' grows the terrain from one-hole hops (default); "
                        "'sigma' runs the sigma homotopy on the full task from the trivial guess")
    p.add_argument("--hole-semi-axis", type=float, default=None, metavar="M",
                   help="hopper-holes: the holes' horizontal semi-axis in m (default 0.25: 0.5 m wide holes, "
                        "as the paper's hole width and the authors' script; 0.5: the paper's a_k as a semi-axis, holes that touch)")
    p.add_argument("--warm-start", nargs="?", const="shipped", default=None, metavar="PLAN",
                   help="hopper-holes: re-converge from the primal vector of the plan shipped with the package "
                        "(or of the plan file PLAN) in minutes, instead of from scratch (~1.5 h)")
    p.add_argument("--ship", action="store_true",
                   help="hopper-holes, developers: do not solve; verify the plan in --out on today's model and "
                        "write it as the package's shipped plan (mpc/planning/data/hopper-holes-plan.npz)")
    p.set_defaults(func=cmd_plan)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `python -m launch`; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (ValueError, RuntimeError) as exc:  # user-facing errors: one clear line, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader of stdout went away (`| head`): no traceback, the shell's code
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's exit flush must not fail too
        return 141
