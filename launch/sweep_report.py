"""Reading a sweep folder's episodes back: typed rows, success rates with Wilson intervals, plots.

A sweep folder (launch/sweep.py) holds sweep.json (the request, the versions, one entry per
invocation), episodes.csv (one row per episode, appended as each arrives), and after each
invocation episodes.parquet (the same rows, typed), summary.json and the PNG plots written here.
"""
from __future__ import annotations

import csv
import itertools
import json
import math
from pathlib import Path

import numpy as np

from .episode import RESULT_COLUMNS

BOOL_COLUMNS = ("success", "fell")
INT_COLUMNS = ("episode", "seed", "ticks", "misses", "misses_host", "misses_controller", "misses_solver",
               "misses_transport", "misses_unattributed", "pid")
TEXT_COLUMNS = ("plant_violation", "error", "host", "node_id", "code_version")


def columns(vary_fields) -> list[str]:
    """The columns of episodes.csv: episode, the varied fields, seed, the episode's results,
    warmup_s (s of unrecorded warm-up ticks before a worker's first episode, else ~0),
    started_unix_s (when its task began, s since the epoch) and code_version (the worker's git
    commit or package version)."""
    return ["episode", *vary_fields, "seed", *RESULT_COLUMNS, "warmup_s", "started_unix_s", "code_version"]


def worker_gaps(rows: list[dict]) -> list[float]:
    """Idle time between consecutive episodes of one worker process (s): the next task's start
    minus the end of the previous one (its start + warm-up + wall time), for every pair of
    consecutive rows with the same host and pid. Between two queued episodes this is what Ray
    costs per episode (returning a result, handing the worker its next task)."""
    by_worker: dict = {}
    for r in rows:
        if r.get("started_unix_s") is not None:
            by_worker.setdefault((r["host"], r["pid"]), []).append(r)
    gaps = []
    for runs in by_worker.values():
        runs.sort(key=lambda r: r["started_unix_s"])
        for a, b in zip(runs, runs[1:]):
            gaps.append(b["started_unix_s"] - (a["started_unix_s"] + (a["warmup_s"] or 0.0) + a["wall_s"]))
    return gaps


def _typed(column: str, text: str, text_fields: set[str]):
    if column in TEXT_COLUMNS or column in text_fields:
        return text
    if text == "":
        return None
    if column in BOOL_COLUMNS:
        return text == "True"
    if column in INT_COLUMNS:
        return int(text)
    return float(text)


def read_rows(folder: str | Path, text_fields=()) -> list[dict]:
    """The typed rows of folder/episodes.csv, one per episode (the first if an episode appears
    twice); a last line cut short by a killed process is skipped. `text_fields`: varied fields
    whose values are text."""
    path = Path(folder) / "episodes.csv"
    if not path.exists():
        return []
    rows, seen = [], set()
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        for raw in reader:
            if None in raw or any(raw.get(c) is None for c in header):  # a cut-short line
                continue
            try:
                row = {c: _typed(c, raw[c], set(text_fields)) for c in header}
            except ValueError:
                continue
            if row["episode"] not in seen:
                seen.add(row["episode"])
                rows.append(row)
    return rows


def wilson_interval(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float] | None:
    """Wilson score interval (95 % by default) of a success probability from `successes` of `n`
    trials; None when n is 0."""
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # exactly 0 at no successes and 1 at all (rounding gives 5.6e-17 and 1 - 1.1e-16)
    return (0.0 if successes == 0 else max(0.0, centre - half)), (1.0 if successes == n else min(1.0, centre + half))


def _rate(rows: list[dict]) -> dict:
    n = len(rows)
    k = sum(1 for r in rows if r["success"])
    ci = wilson_interval(k, n)
    return {"episodes": n, "successes": k, "success_rate": k / n if n else None,
            "ci95": list(ci) if ci else None}


def _pct(values) -> dict:
    a = np.array([v for v in values if v is not None], dtype=float)
    if not a.size:
        return {"p50": None, "p90": None, "max": None}
    return {"p50": float(np.percentile(a, 50)), "p90": float(np.percentile(a, 90)), "max": float(a.max())}


def summarize(rows: list[dict], vary: dict, *, planned: int) -> dict:
    """Success overall and per value of each varied field (with Wilson 95 % intervals), falls,
    plant violations, errors, episodes with misses, and the spread of the episodes' solve p99
    (ms) and wall times (s)."""
    out = {"episodes_planned": planned, "episodes_completed": len(rows), "episodes_missing": planned - len(rows)}
    overall = _rate(rows)
    out.update(successes=overall["successes"], success_rate=overall["success_rate"], success_ci95=overall["ci95"])
    out["falls"] = sum(1 for r in rows if r["fell"])
    out["plant_violations"] = sum(1 for r in rows if r["plant_violation"])
    out["errors"] = sum(1 for r in rows if r["error"])
    out["episodes_with_misses"] = sum(1 for r in rows if r["misses"])
    out["by_field"] = {f: [{"value": v, **_rate([r for r in rows if r[f] == v])} for v in values]
                       for f, values in vary.items()}
    out["solve_p99_ms"] = _pct(r["solve_p99_ms"] for r in rows)
    out["episode_wall_s"] = _pct(r["wall_s"] for r in rows)
    gaps = worker_gaps(rows)
    out["worker_gap_s"] = {**_pct(gaps), "mean": float(np.mean(gaps)) if gaps else None}
    out["hosts"] = sorted({r["host"] for r in rows})
    out["code_versions"] = sorted({r.get("code_version") or "" for r in rows})
    out["nodes"] = len({r["node_id"] for r in rows})
    if out["errors"]:
        out["first_error"] = next(r["error"] for r in rows if r["error"])
    return out


def write_parquet(folder: str | Path, rows: list[dict], names: list[str]) -> Path | None:
    """folder/episodes.parquet from the typed rows (None when pyarrow is not installed)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    path = Path(folder) / "episodes.parquet"
    table = pa.table({c: [r.get(c) for r in rows] for c in names})
    pq.write_table(table, path)
    return path


def write_plots(folder: str | Path, rows: list[dict], vary: dict, *, deadline_ms: float | None = None) -> list[Path]:
    """success_vs_<field>.png per varied field (rate and Wilson 95 % interval per value),
    success_<f1>_<f2>.png heat maps for each pair of varied fields, and solve_p99.png (the
    distribution of the episodes' solve p99, with the controller's deadline)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(folder)
    written: list[Path] = []
    if not rows:
        return written
    for f, values in vary.items():
        stats = [_rate([r for r in rows if r[f] == v]) for v in values]
        numeric = all(isinstance(v, (int, float)) for v in values)
        x = np.array(values, dtype=float) if numeric else np.arange(len(values))
        rate = np.array([s["success_rate"] if s["success_rate"] is not None else np.nan for s in stats])
        lo = np.array([s["ci95"][0] if s["ci95"] else np.nan for s in stats])
        hi = np.array([s["ci95"][1] if s["ci95"] else np.nan for s in stats])
        fig, ax = plt.subplots(figsize=(6, 4))
        # (the interval holds the rate; clipped at 0 against rounding, e.g. hi = 1 - 1e-16 at rate 1)
        ax.errorbar(x, rate, yerr=[np.maximum(rate - lo, 0), np.maximum(hi - rate, 0)], fmt="o-", capsize=4,
                    label="success, Wilson 95 %")
        for xi, s in zip(x, stats):
            ax.annotate(f"n={s['episodes']}", (xi, 1.07), ha="center", fontsize=7, color="gray")
        if not numeric:
            ax.set_xticks(x, [str(v) for v in values])
        ax.set_ylim(-0.02, 1.12)
        ax.set_xlabel(f)
        ax.set_ylabel("success rate")
        ax.set_title(f"success vs {f}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
        fig.tight_layout()
        written.append(folder / f"success_vs_{f}.png")
        fig.savefig(written[-1], dpi=100)
        plt.close(fig)
    for f1, f2 in itertools.combinations(vary, 2):
        v1, v2 = vary[f1], vary[f2]
        grid = np.full((len(v2), len(v1)), np.nan)
        counts = np.zeros_like(grid, dtype=int)
        for i, a in enumerate(v1):
            for j, b in enumerate(v2):
                s = _rate([r for r in rows if r[f1] == a and r[f2] == b])
                counts[j, i] = s["episodes"]
                if s["success_rate"] is not None:
                    grid[j, i] = s["success_rate"]
        fig, ax = plt.subplots(figsize=(1.0 + 0.8 * len(v1) + 1.5, 1.0 + 0.6 * len(v2) + 1.0))
        im = ax.imshow(grid, origin="lower", vmin=0, vmax=1, cmap="RdYlGn", aspect="auto")
        for i in range(len(v1)):
            for j in range(len(v2)):
                label = "-" if counts[j, i] == 0 else f"{grid[j, i]:.2f}\nn={counts[j, i]}"
                ax.text(i, j, label, ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(v1)), [f"{v:g}" if isinstance(v, float) else str(v) for v in v1])
        ax.set_yticks(range(len(v2)), [f"{v:g}" if isinstance(v, float) else str(v) for v in v2])
        ax.set_xlabel(f1)
        ax.set_ylabel(f2)
        ax.set_title("success rate")
        fig.colorbar(im, ax=ax)
        fig.tight_layout()
        written.append(folder / f"success_{f1}_{f2}.png")
        fig.savefig(written[-1], dpi=100)
        plt.close(fig)
    p99 = np.array([r["solve_p99_ms"] for r in rows if r["solve_p99_ms"] is not None], dtype=float)
    if p99.size:
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.hist(p99, bins=min(50, max(5, p99.size // 2)), alpha=0.8)
        if deadline_ms:
            ax.axvline(deadline_ms, color="red", ls="--", label=f"control period {deadline_ms:.1f} ms")
            ax.legend(fontsize=8)
        ax.set_xlabel("solve time p99 of an episode (ms)")
        ax.set_ylabel("episodes")
        ax.set_title(f"solve p99 over {p99.size} episodes")
        fig.tight_layout()
        written.append(folder / "solve_p99.png")
        fig.savefig(written[-1], dpi=100)
        plt.close(fig)
    return written


def write_summary(folder: str | Path, summary: dict) -> Path:
    """folder/summary.json."""
    path = Path(folder) / "summary.json"
    path.write_text(json.dumps(summary, indent=1))
    return path


def format_summary(summary: dict) -> str:
    """A few lines for the console: success overall and per varied value, falls, errors, the
    spread of solve p99, where the episodes ran and the sweep folder."""
    def rate(s) -> str:
        if s["success_rate"] is None:
            return "no episodes"
        lo, hi = s["ci95"] if "ci95" in s else s["success_ci95"]
        return f"{s['success_rate']:.2f} [{lo:.2f}, {hi:.2f}] ({s['successes']}/{s['episodes']})"

    lines = [f"sweep folder: {summary['sweep_dir']}",
             f"episodes: {summary['episodes_completed']} of {summary['episodes_planned']} completed"
             f"{' (interrupted)' if summary.get('interrupted') else ''}"]
    overall = {"success_rate": summary["success_rate"], "ci95": summary["success_ci95"],
               "successes": summary["successes"], "episodes": summary["episodes_completed"]}
    lines.append(f"success: {rate(overall)}   (Wilson 95 % interval)")
    for f, per in summary["by_field"].items():
        for s in per:
            lines.append(f"  {f} = {s['value']}: {rate(s)}")
    lines.append(f"falls: {summary['falls']}   plant violations: {summary['plant_violations']}   "
                 f"errors: {summary['errors']}   episodes with misses: {summary['episodes_with_misses']}")
    p99 = summary["solve_p99_ms"]
    if p99["p50"] is not None:
        lines.append(f"solve p99 per episode: median {p99['p50']:.2f} ms, p90 {p99['p90']:.2f} ms, "
                     f"max {p99['max']:.2f} ms")
    inv = summary.get("this_invocation")
    if inv and inv.get("episodes_per_s"):
        lines.append(f"ran {inv['episodes_run']} episodes in {inv['loop_wall_s']:.1f} s on {inv['cpus']} CPUs "
                     f"({inv['episodes_per_s']:.2f} episodes/s) on {summary['nodes']} node(s): "
                     f"{', '.join(summary['hosts'])}")
    if summary.get("first_error"):
        lines.append(f"first error: {summary['first_error']}")
    return "\n".join(lines)
