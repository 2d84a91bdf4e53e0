"""The command-line interface. Each sub-command is a small function taking parsed arguments.

    python -m launch robots [--json]        table of robots (nq, nv, nu, contacts)
    python -m launch demo                   the main job (what exists so far, said plainly)
    python -m launch bench <name> [--json]  reproducible benchmarks (`bench --list`)
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence


def robot_table() -> list[dict]:
    """One row per registered robot: name, nq, nv, nu, ncontacts (default parameters)."""
    from robots import get_robot, robot_names

    rows = []
    for name in robot_names():
        m = get_robot(name)
        rows.append({"name": name, "nq": m.nq, "nv": m.nv, "nu": m.nu, "ncontacts": m.nc})
    return rows


def cmd_robots(args: argparse.Namespace) -> int:
    """Print the robot table (or JSON)."""
    rows = robot_table()
    if args.json:
        print(json.dumps(rows))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title="robots (python -m launch robots --json for machine-readable output)")
    for col in ("name", "nq", "nv", "nu", "ncontacts"):
        table.add_column(col, justify="left" if col == "name" else "right")
    for r in rows:
        table.add_row(r["name"], *(str(r[k]) for k in ("nq", "nv", "nu", "ncontacts")))
    Console().print(table)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the main job. Until the closed loop exists, it runs the foundation end to end."""
    from .demo import run_demo

    return run_demo()


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
    fn, _ = BENCHMARKS[args.name]
    result = fn(args)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:24s} {value}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser for all sub-commands."""
    parser = argparse.ArgumentParser(
        prog="python -m launch",
        description="Real-time contact-implicit MPC runtime for legged robots.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("robots", help="list the robots with nq, nv, nu and number of contacts")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_robots)
    p = sub.add_parser("demo", help="run the main job (what `make demo` runs)")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("bench", help="run a benchmark (see --list)")
    p.add_argument("name", nargs="?", help="benchmark name")
    p.add_argument("--list", action="store_true", help="list benchmarks")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--repeats", type=int, default=None, help="override the number of repeats")
    p.add_argument("--full", action="store_true", help="the paper's full-size run where a benchmark has one")
    p.set_defaults(func=cmd_bench)
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
