"""`python -m launch profile RUN [--compare RUN2]`: per-tick latency table and plots of runs."""
from __future__ import annotations

from pathlib import Path

from .plots import write_plots
from .runfolder import latency_table


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def _what_ran(folder: Path) -> list[tuple[str, str]]:
    """(label, value) rows saying what a run folder ran: scenario, robot, plant, controller
    (from its scenario.json; "-" where it has none)."""
    import json

    path = folder / "scenario.json"
    try:
        sc = json.loads(path.read_text()) if path.exists() else {}
    except ValueError:
        sc = {}
    return [(key, str(sc.get(key) or "-")) for key in ("name", "robot", "plant", "controller")]


def profile_rows(folder: Path) -> list[tuple[str, str]]:
    """(metric, value) rows of one run's latency table, headed by what ran (scenario, robot,
    plant, controller, mode), so that `--compare` columns say which run is which."""
    t = latency_table(folder)
    rows = [("scenario" if k == "name" else k, v) for k, v in _what_ran(folder)]
    rows += [("mode", str(t["mode"] or "-")), ("ticks", str(t["ticks"])), ("deadline (ms)", _fmt(t["deadline_ms"])),
            ("misses (no fresh command in time)", str(t["misses"]))]
    rows += [(f"  misses: {cause}", str(n)) for cause, n in t["misses_by_cause"].items()]
    stalls = t["host_stalls"]
    if stalls:
        rows += [("host stalls >= 1 ms", str(stalls.get("count_ge_1ms", 0))),
                 ("host stall max (ms)", _fmt(stalls.get("max_ms")))]
    start = t["startup_ms"]
    rows += [("set-up tick 0: controller (ms)", _fmt(start["controller_tick"])),
             ("set-up tick 0: STATE->COMMAND (ms)", _fmt(start["latency"]))]
    for key, label in (("tick_ms", "controller tick"), ("latency_ms", "STATE->COMMAND"), ("jitter_ms", "tick jitter")):
        for p in ("p50", "p90", "p99", "max"):
            rows.append((f"{label} {p} (ms)", _fmt(t[key][p])))
    for phase, value in t["phases_mean_ms"].items():
        rows.append((f"phase {phase} mean (ms)", _fmt(value)))
    return rows


def profile(folders: list[Path], *, plots: bool = True) -> str:
    """A text table of one run, or of several side by side; writes each run's plots."""
    from rich.console import Console
    from rich.table import Table

    for f in folders:
        if not (f / "plant_ticks.csv").exists():
            raise ValueError(f"{f} is not a run folder (no plant_ticks.csv); runs are under runs/")
    tables = [dict(profile_rows(f)) for f in folders]
    table = Table(title="per-tick latency" + (" (compare)" if len(folders) > 1 else ""))
    table.add_column("metric")
    for f in folders:
        table.add_column(f.name, justify="right")
    keys = list(dict.fromkeys(k for t in tables for k in t))
    for k in keys:
        table.add_row(k, *(t.get(k, "-") for t in tables))
    console = Console(record=True)
    console.print(table)
    if plots:
        for f in folders:
            for p in write_plots(f):
                console.print(f"wrote {p}")
    return console.export_text()
