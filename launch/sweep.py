"""`python -m launch sweep`: Monte Carlo sweeps of closed-loop episodes as Ray tasks.

    run_sweep(SweepSpec.from_args("hopper", ["push=0:4:3"], seeds=2, duration_s=3.0))

Each episode (launch/episode.py: the lockstep loop in one process) is one Ray task with one
CPU. Ray schedules, places and retries them: without an address a local Ray with `workers`
CPUs (default: the machine's cores), with `address` ("auto", "HOST:PORT" of a head node, or
"ray://HOST:PORT" through the Ray client) an existing cluster, whose nodes must have this
project importable (the same version). A task whose worker process dies is retried by Ray
(MAX_RETRIES times); its result arrives once. The driver writes each row to episodes.csv as
it arrives (ray.wait), so Ctrl-C (or SIGTERM) keeps every finished episode (disconnecting
the driver ends the job's running tasks), and
`--resume DIR` runs only the missing ones. At the end (also after Ctrl-C) it writes
episodes.parquet, summary.json and the plots (launch/sweep_report.py).
"""
from __future__ import annotations

import csv
import functools
import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import sweep_report
from .sweep_spec import SweepSpec, load_spec

MAX_RETRIES = 3  # Ray retries an episode whose worker process died this many times


WARMUP_TICKS = 10  # a worker's first episode of a kind follows this many unrecorded ticks
_warm: set[str] = set()  # the kinds of episode this worker process has warmed up for


def run_sweep_episode(scenario_json: str, episode: int) -> dict:
    """Ray task body: run one episode (launch/episode.py) from its scenario's JSON; returns its
    row with `episode`, `warmup_s`, `started_unix_s` (when the task began, s since the epoch) and
    `code_version` (code_version()) set. Before the first episode of a robot, plant and
    controller in this worker process, WARMUP_TICKS ticks of it run unrecorded (warmup_s, s), so
    that one-time costs (loading compiled code, first calls) stay out of the episode's timing."""
    import dataclasses

    from .episode import run_episode
    from .scenario import Scenario

    started = time.time()
    sc = Scenario.from_json(scenario_json)
    kind = json.dumps([sc.robot, sc.plant, sc.controller, sc.controller_options, sc.plant_options], sort_keys=True)
    t0 = time.perf_counter()
    if kind not in _warm:
        run_episode(dataclasses.replace(sc, duration_s=WARMUP_TICKS / sc.control_rate_hz, push_ns=0.0, push_at_s=None))
        _warm.add(kind)
    warmup_s = time.perf_counter() - t0
    row = run_episode(sc)
    row.update(episode=episode, warmup_s=warmup_s, started_unix_s=started, code_version=code_version())
    return row


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """This process's code: the git commit of the checkout it runs from ('+dirty' with local
    changes), else the installed legmpc version. Every row carries its worker's, so a cluster
    whose nodes run other code shows in the rows (and on stderr)."""
    v = versions()
    if v.get("git_commit"):
        return v["git_commit"][:12] + ("+dirty" if v.get("git_dirty") else "")
    return f"legmpc {v.get('legmpc')}"


def versions() -> dict:
    """Versions that decide an episode's outcome: this project (and its git commit when run
    from a checkout), Python, Ray, numpy, CasADi, numba, the host."""
    import importlib.metadata as md

    out = {"python": platform.python_version(), "host": platform.node()}
    for dist in ("legmpc", "ray", "numpy", "casadi", "numba", "pyarrow"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    try:
        root = Path(__file__).resolve().parents[1]
        out["git_commit"] = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                                           text=True, timeout=5).stdout.strip() or None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        out["git_dirty"] = bool(dirty)
    except (OSError, subprocess.SubprocessError):
        out["git_commit"] = None
    return out


def new_sweep_folder(spec: SweepSpec, runs_dir: str | Path = "runs") -> Path:
    """runs/<YYYYmmdd-HHMMSS>-sweep-<scenario>/ (suffixed if it exists), with sweep.json."""
    from .run import new_folder

    folder = new_folder(runs_dir, f"sweep-{spec.base.name}")
    meta = {"kind": "legmpc sweep", "format": 1, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "spec": spec.to_json(), "columns": sweep_report.columns(spec.vary), "versions": versions(),
            "invocations": []}
    (folder / "sweep.json").write_text(json.dumps(meta, indent=1))
    return folder


def _text_fields(spec: SweepSpec) -> list[str]:
    return [f for f, values in spec.vary.items() if any(isinstance(v, str) for v in values)]


def _ray_init(address: str | None, workers: int | None):
    try:
        import ray
    except ImportError:
        raise RuntimeError("sweeps need Ray: pip install ray (it is in the dev extra: pip install -e '.[dev]')") from None
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    kwargs = {"include_dashboard": False, "log_to_driver": False, "logging_level": "warning"}
    if address:
        if workers is not None:
            raise ValueError("--workers sets the CPUs of a local Ray; with --address the cluster's size is its "
                             "own (ray start --num-cpus N on each node): drop --workers")
        try:
            ray.init(address=address, **kwargs)
        except (ConnectionError, RuntimeError, ImportError, ValueError) as err:
            hint = (" (ray:// needs the Ray client: pip install 'ray[client]')" if address.startswith("ray://")
                    else " (start one with `ray start --head`, or drop --address for a local Ray)")
            raise RuntimeError(f"--address {address}: cannot connect to a Ray cluster: {type(err).__name__}: "
                               f"{str(err)[:300]}{hint}") from None
    else:
        ray.init(num_cpus=workers or os.cpu_count() or 1, **kwargs)
    return ray


class _Progress:
    """A progress bar with ETA on stderr (a plain line every 10 s when stderr is not a terminal)."""

    def __init__(self, total: int, done: int, label: str, enabled: bool):
        self.total, self.done, self.failed, self.label = total, done, 0, label
        self.enabled = enabled
        self.bar = None
        self.t0 = time.monotonic()
        self.start_done = done
        self.last_line = 0.0
        if not enabled:
            return
        from rich.console import Console

        console = Console(stderr=True)
        if console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
                TimeRemainingColumn

            self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[info]}"), TimeElapsedColumn(), TextColumn("ETA"),
                                TimeRemainingColumn(), console=console)
            self.bar.start()
            self.task = self.bar.add_task(label, total=total, completed=done, info="")

    def advance(self, success: bool) -> None:
        self.done += 1
        self.failed += 0 if success else 1
        info = f"failed {self.failed}"
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done, info=info)
        elif self.enabled and (time.monotonic() - self.last_line >= 10.0 or self.done == self.total):
            self.last_line = time.monotonic()
            rate = (self.done - self.start_done) / max(1e-9, time.monotonic() - self.t0)
            eta = (self.total - self.done) / rate if rate > 0 else float("nan")
            print(f"{self.label}: {self.done}/{self.total} episodes, {info}, ETA {eta:.0f} s", file=sys.stderr)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def run_sweep(spec: SweepSpec | None = None, *, resume: str | Path | None = None, workers: int | None = None,
              address: str | None = None, runs_dir: str | Path = "runs", progress: bool = True) -> dict:
    """Run the sweep's episodes as Ray tasks (module docstring) into a new sweep folder, or the
    missing episodes of the folder `resume` (whose sweep.json must hold `spec` if both are
    given); return summary.json's content (sweep_dir, episodes_completed, success_rate, ...)."""
    if resume is not None:
        stored = load_spec(resume)
        if spec is not None and spec.to_json() != stored.to_json():
            raise ValueError(f"--resume {resume}: its sweep.json describes another sweep than this command line; "
                             f"give only --resume DIR (and --workers/--address) to finish it")
        spec = stored
    elif spec is None:
        raise ValueError("give a scenario to sweep, or --resume DIR")
    if workers is not None and workers < 1:
        raise ValueError(f"--workers must be >= 1, got {workers}")
    seeded = {"sensor_noise_q", "sensor_noise_v", "stall_prob", "sensors"}  # what the seed draws
    hardware = spec.base.sensors == "hardware" and spec.base.sensor_noise_scale > 0
    if spec.seeds > 1 and not (spec.base.sensor_noise_q or spec.base.sensor_noise_v or spec.base.stall_prob
                               or hardware or seeded & set(spec.vary)):
        print(f"note: no sensor noise, so the {spec.seeds} seeds of each point repeat the same episode "
              "(--set sensor_noise_q=... or sensors=hardware makes them differ)", file=sys.stderr)
    t_init = time.perf_counter()
    ray = _ray_init(address, workers)  # first: a cluster that cannot be reached leaves no empty sweep folder
    init_s = time.perf_counter() - t_init
    try:
        folder = Path(resume) if resume is not None else new_sweep_folder(spec, runs_dir)
    except BaseException:
        ray.shutdown()
        raise
    names = sweep_report.columns(spec.vary)
    text_fields = _text_fields(spec)
    done = {r["episode"] for r in sweep_report.read_rows(folder, text_fields)}
    todo = [k for k in range(spec.episodes) if k not in done]

    old_handlers = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    interrupted, lost = False, {}
    pending: dict = {}
    walls: list[float] = []
    slots = t_loop = None
    mine, foreign = code_version(), set()
    bar = _Progress(spec.episodes, len(done), f"sweep {spec.base.name}", progress)
    journal = open(folder / "episodes.csv", "a+", newline="")
    if journal.tell() > 0:  # a line cut short by a killed driver is ended, so the next row starts clean
        journal.seek(journal.tell() - 1)
        if journal.read(1) != "\n":
            journal.write("\n")
    try:
        if journal.tell() > 0:  # resuming: the rows keep the columns the folder's header has
            journal.seek(0)
            names = next(csv.reader(journal), names)
            journal.seek(0, os.SEEK_END)
        writer = csv.DictWriter(journal, fieldnames=names, extrasaction="ignore")
        if journal.tell() == 0:
            writer.writeheader()
            journal.flush()
        slots = int(ray.cluster_resources().get("CPU", 0))
        task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES)(run_sweep_episode)
        t_loop = time.perf_counter()
        pending = {task.remote(spec.scenario(k).to_json(), k): k for k in todo}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
            for ref in ready:
                k = pending.pop(ref)
                try:
                    row = ray.get(ref)
                except ray.exceptions.RayError as err:  # e.g. its worker died MAX_RETRIES + 1 times
                    lost[k] = f"{type(err).__name__}: {str(err)[:300]}"
                    continue
                row.update(spec.values(k))
                if row.get("code_version") not in (None, mine) and row["code_version"] not in foreign:
                    foreign.add(row["code_version"])
                    print(f"warning: episode {k} ran on {row['host']} (node {row['node_id'][:8]}) with code "
                          f"{row['code_version']}, this driver has {mine}", file=sys.stderr)
                writer.writerow(row)
                journal.flush()  # a row on disk as soon as it arrives: Ctrl-C keeps it
                walls.append(row["wall_s"] + row["warmup_s"])
                bar.advance(row["success"])
    except KeyboardInterrupt:
        # no ray.cancel: ray.shutdown() below ends this job's tasks (local Ray and cluster alike), and
        # a forced cancel racing a task's completion once aborted the driver inside Ray's task manager
        interrupted = True
    finally:
        loop_s = time.perf_counter() - t_loop if t_loop is not None else 0.0
        bar.stop()
        journal.close()
        if ray.is_initialized():
            ray.shutdown()
        for sig, handler in old_handlers.items():
            signal.signal(sig, handler)
    n = len(walls)
    invocation = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(time.time() - loop_s)),
                  "address": address, "cpus": slots, "ray_init_s": init_s, "episodes_run": n,
                  "loop_wall_s": loop_s, "episodes_per_s": n / loop_s if loop_s > 0 else None,
                  # CPU-slot time not spent inside episodes (Ray's scheduling and transport, and slots
                  # left idle at the end of the sweep), per episode, s
                  "overhead_per_episode_s": (loop_s * slots - sum(walls)) / n if n and slots else None,
                  "interrupted": interrupted, "lost": lost, "versions": versions()}
    return finish(folder, spec, invocation)


def finish(folder: Path, spec: SweepSpec, invocation: dict | None = None) -> dict:
    """Record the invocation in sweep.json, write episodes.parquet, summary.json and the plots
    from episodes.csv; return the summary."""
    meta = json.loads((folder / "sweep.json").read_text())
    if invocation is not None:
        meta["invocations"].append(invocation)
        (folder / "sweep.json").write_text(json.dumps(meta, indent=1))
    names = sweep_report.columns(spec.vary)
    rows = sorted(sweep_report.read_rows(folder, _text_fields(spec)), key=lambda r: r["episode"])
    sweep_report.write_parquet(folder, rows, names)
    summary = {"scenario": spec.base.name, "sweep_dir": str(folder), "vary": spec.vary, "seeds": spec.seeds,
               **sweep_report.summarize(rows, spec.vary, planned=spec.episodes)}
    if invocation is not None:
        summary["this_invocation"] = {k: invocation[k] for k in ("episodes_run", "loop_wall_s", "episodes_per_s",
                                                                 "overhead_per_episode_s", "ray_init_s", "cpus",
                                                                 "interrupted")}
        summary["lost"] = invocation["lost"]
    summary["interrupted"] = bool(invocation and invocation["interrupted"])
    sweep_report.write_summary(folder, summary)  # first: the rows' summary does not depend on the plots
    try:
        summary["plots"] = [p.name for p in sweep_report.write_plots(folder, rows, spec.vary,
                                                                     deadline_ms=1e3 / spec.base.control_rate_hz)]
    except Exception as exc:  # noqa: BLE001 - the episodes and their summary are written; plots are extras
        print(f"warning: no plots for {folder}: {type(exc).__name__}: {exc}", file=sys.stderr)
        summary["plots"] = []
    sweep_report.write_summary(folder, summary)
    return summary
