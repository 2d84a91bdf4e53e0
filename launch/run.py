"""`python -m launch run <scenario>`: plant and controller as two processes over the bridge.

run(scenario) creates runs/<timestamp>-<name>/, saves the scenario, starts
`python -m launch.child serve` and `python -m launch.child control` on it, shows progress, stops both
cleanly (Ctrl-C included: SIGTERM, then logs are completed), writes summary.json and plots.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from sim.metrics import base_names

from .estimation_metrics import estimation_metrics
from .plots import write_plots
from .runfolder import holes_metrics, worst_complementarity, latency_table, read_csv, task_metrics, touchdown_replanning
from .scenario import Scenario


def new_folder(runs_dir: str | Path, name: str) -> Path:
    """A new folder runs_dir/<YYYYmmdd-HHMMSS>-<name>/ (suffixed -1, -2... if it exists)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = Path(runs_dir) / f"{stamp}-{name}"
    folder, i = base, 1
    while folder.exists():
        folder, i = Path(f"{base}-{i}"), i + 1
    folder.mkdir(parents=True)
    return folder


def folder_label(scenario: Scenario, base: Scenario | None = None) -> str:
    """The run folder's name after its time stamp: the scenario's name, then the robot, plant,
    controller and mode where they differ from the scenario's own (`base`, as loaded)."""
    parts = [scenario.name]
    if base is not None:
        for field in ("robot", "plant", "controller", "mode"):
            value = getattr(scenario, field)
            if value != getattr(base, field):
                parts.append(str(value).replace(":", "_").replace("/", "_").replace(".", "_"))
    return "-".join(parts)


def new_run_folder(scenario: Scenario, runs_dir: str | Path = "runs", label: str | None = None) -> Path:
    """runs/<YYYYmmdd-HHMMSS>-<label>/ (label: the scenario's name by default; suffixed if it
    exists), with scenario.json written."""
    folder = new_folder(runs_dir, label or scenario.name)
    (folder / "scenario.json").write_text(scenario.to_json())
    return folder


def _spawn(role: str, folder: Path) -> subprocess.Popen:
    log = open(folder / f"{'plant' if role == 'serve' else 'controller'}.log", "w")
    return subprocess.Popen([sys.executable, "-m", "launch.child", role, str(folder)], stdout=log, stderr=subprocess.STDOUT)


def _stop(procs: list[subprocess.Popen], timeout: float = 10.0) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    end = time.monotonic() + timeout
    for p in procs:
        try:
            p.wait(timeout=max(0.1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _resolve_plan(scenario: Scenario) -> Scenario:
    """The scenario with its plan option (if any) replaced by the file the run tracks (the
    user's plan, or the plan shipped with the package: mpc.planning.shipped.resolve_plan), and
    which one it is said on stderr. The child processes read the resolved path from
    scenario.json."""
    plan = scenario.controller_options.get("plan")
    if plan is None:
        return scenario
    from mpc.planning.shipped import resolve_plan

    path, source = resolve_plan(plan)
    if source == "shipped":
        print(f"plan: the plan shipped with the package, {path} ({plan} does not exist; "
              "`python -m launch plan hopper-holes` makes one there)", file=sys.stderr, flush=True)
    else:
        print(f"plan: {path}", file=sys.stderr, flush=True)
    return scenario.with_overrides(controller_options={**scenario.controller_options, "plan": str(path)})


def setup_step(log: Path) -> str:
    """The last one-time setup line ("[gait3d] ...", "[acados] ...") of a child's log, shortened
    for the progress bar; "" if there is none yet."""
    try:
        with open(log, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 4096))
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    steps = [line.strip() for line in lines if line.startswith("[")]
    return steps[-1][:90] if steps else ""


class RunProgress:
    """A run's progress: rich's bar on a terminal; otherwise (CI, `| tee`) plain lines on stderr,
    one per new set-up step and one per tenth of the run."""

    def __init__(self, scenario: Scenario, *, terminal: bool | None = None, out=None):
        self.out = out if out is not None else sys.stderr
        self.duration = scenario.duration_s
        self.terminal = self.out.isatty() if terminal is None else terminal
        self.last_step, self.next_t = "", 0.0
        self.bar = None
        if self.terminal:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.fields[info]}"),
                                TimeElapsedColumn(), transient=True, console=Console(file=self.out))
            self.bar.start()
            self.task = self.bar.add_task(f"{scenario.name} ({scenario.mode})", total=self.duration, info="starting")
        else:
            self._line(f"{scenario.name} ({scenario.mode}, {self.duration:g} s): starting")

    def _line(self, text: str) -> None:
        print(f"[run] {text}", file=self.out, flush=True)

    def setup(self, step: str) -> None:
        """The controller's latest one-time set-up line (its log's last "[...]" line)."""
        if self.bar is not None:
            self.bar.update(self.task, info=step)
        elif step != self.last_step:
            self._line(f"set-up: {step}")
        self.last_step = step

    def running(self, t: float, misses: int) -> None:
        """Simulated time t (s) reached, with the misses so far."""
        if self.bar is not None:
            self.bar.update(self.task, completed=t, info=f"t={t:.1f}s misses={misses}")
        elif t >= self.next_t:
            self._line(f"t = {t:.1f} s of {self.duration:g} s, {misses} misses")
            self.next_t = t + 0.1 * self.duration

    def stop(self) -> None:
        """Remove the bar (plain lines stay)."""
        if self.bar is not None:
            self.bar.stop()


def check_port_free(port: int, what: str) -> None:
    """Raise ValueError in one line, naming `what` and the fix, if TCP `port` on 127.0.0.1 is
    taken (or not a port)."""
    import errno
    import socket

    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"{what} {port!r}: a TCP port is a whole number in 1..65535")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as err:
            busy = err.errno == errno.EADDRINUSE
            raise ValueError(f"{what} {port}: " + ("another process holds that port (a run with --live still "
                                                   "running?); pick another port or stop it" if busy else
                                                   f"cannot use it ({err.strerror})")) from None


def run(scenario: Scenario, *, runs_dir: str | Path = "runs", progress: bool = True,
        live_port: int | None = None, label: str | None = None) -> dict:
    """Run `scenario` closed loop over the bridge; return summary.json's content. live_port:
    stream the run to Foxglove's WebSocket server on that port while it goes (launch/live.py).
    label: the run folder's name after its stamp (`folder_label`; default the scenario's name)."""
    scenario = _resolve_plan(scenario.validate())
    if live_port is not None:
        check_port_free(live_port, "--live-port")  # before the run folder: no stub folder for a refused run
    # Ctrl-C and SIGTERM both end the run cleanly (explicit: a background job inherits SIGINT ignored)
    old_handlers = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    folder = new_run_folder(scenario, runs_dir, label)
    stream = None
    if live_port is not None:
        from robots import get_robot

        from .live import LiveStream, live_endpoint

        endpoint = live_endpoint()
        (folder / "live_endpoint").write_text(endpoint)  # the plant child publishes there
        stream = LiveStream(get_robot(scenario.robot), endpoint, port=live_port).start()
        print(f"live: Foxglove WebSocket at ws://127.0.0.1:{live_port} (open it in Foxglove)", file=sys.stderr)
    plant = _spawn("serve", folder)
    controller = _spawn("control", folder)
    procs = [plant, controller]
    interrupted = False
    bar = None
    try:
        if progress:
            bar = RunProgress(scenario)
        # a controller that fails first (it crashed, or gave up on a silent plant) ends the run: the
        # plant would otherwise wait for it tick after tick. One that exits 0 got BYE: the plant is
        # finishing its logs, wait for it.
        while plant.poll() is None and controller.poll() in (None, 0):
            time.sleep(0.2)
            if bar is not None and (folder / "progress.json").exists():
                try:
                    info = json.loads((folder / "progress.json").read_text())
                    bar.running(float(info["t"]), int(info["misses"]))
                except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                    pass
            elif bar is not None:  # still setting up: the controller's one-time work (gait, solver build)
                step = setup_step(folder / "controller.log")
                if step:
                    bar.setup(step)
        controller.wait(timeout=10)
    except KeyboardInterrupt:
        interrupted = True
    except subprocess.TimeoutExpired:
        pass
    finally:
        if bar is not None:
            bar.stop()
        _stop(procs)
        if stream is not None:
            stream.stop()
            print(f"live: {stream.messages} ticks streamed", file=sys.stderr)
        for sig, handler in old_handlers.items():
            signal.signal(sig, handler)
    return finalize(folder, scenario, interrupted=interrupted, exit_codes=[p.returncode for p in procs])


def mpc_task(scenario: Scenario, model=None):
    """The task the scenario's MPC is asked to do (mpc.wholebody.tasks: its options over the
    robot's defaults, `mpc.wholebody.controller.mpc_options`), None for another controller or
    options the MPC refuses (the controller's own error ends that run)."""
    if scenario.controller != "mpc":
        return None
    from mpc.wholebody.controller import mpc_options
    from robots import get_robot

    model = model if model is not None else get_robot(scenario.robot)
    try:
        if model.floating_base:  # the 3D MPC (mpc.centroidal)
            from mpc.centroidal.controller import mpc3d_options

            return mpc3d_options(model, **scenario.controller_options).task
        return mpc_options(model, **scenario.controller_options).task.for_model(model)
    except ValueError:
        return None


def task_targets(scenario: Scenario, model=None) -> dict:
    """The targets a run is measured against, as its task gives them: "apex_height" (m) and "vx"
    (m/s) of a gait, "vx" 0 of a stand, "vx", "vy" (m/s) and "yaw_rate" (rad/s) of a 3D robot's
    task; {} for a plan and for the PD stand."""
    task = mpc_task(scenario, model)
    return {} if task is None else dict(task.targets)


def _column_sum(columns: dict, name: str) -> int | None:
    """The sum of a per-tick 0/1 column of controller_ticks.csv, None if the controller has none."""
    col = columns.get(name)
    return None if col is None or not col.size else int(np.nansum(col))


def _column_first(columns: dict, name: str) -> float | None:
    """The first value of a per-tick column (a setting the controller repeats), None if absent."""
    col = columns.get(name)
    return None if col is None or not col.size else round(float(col[0]), 6)


def task_figures(model, metrics: dict, targets: dict) -> dict:
    """The task's figures of a run, each {"mean": achieved, "target": asked (None: not asked)}:
    vx_mps for every robot; apex_height_m for a planar robot (a hopper's hops); vy_mps and
    yaw_rate_radps for a floating base (sim/metrics.py says how each is measured)."""
    keys = [("vx_mps", "vx")]
    if model.floating_base:
        keys += [("vy_mps", "vy"), ("yaw_rate_radps", "yaw_rate")]
    else:
        keys += [("apex_height_m", "apex_height")]
    return {key: {"mean": metrics.get(key), "target": targets.get(target)} for key, target in keys}


def finalize(folder: Path, scenario: Scenario, *, interrupted: bool = False, exit_codes=()) -> dict:
    """Merge the two processes' logs into summary.json and draw the plots."""
    from robots import get_robot

    model = get_robot(scenario.robot)
    if not (folder / "plant_summary.json").exists():
        tails = "".join(f"\n--- {name} (end) ---\n{(folder / name).read_text()[-1500:]}"
                        for name in ("controller.log", "plant.log") if (folder / name).exists())
        raise RuntimeError(f"the run ended before the plant wrote its summary (exit codes plant, controller: "
                           f"{list(exit_codes)}; logs in {folder}):{tails}")
    plant = json.loads((folder / "plant_summary.json").read_text())
    table = latency_table(folder)
    z_name = base_names(list(model.q_names))[1]
    q0_z = model.q0[model.q_names.index(z_name)] if z_name in model.q_names else None
    metrics = task_metrics(folder, q0_z, model)
    ctrl = read_csv(folder / "controller_ticks.csv")
    task = mpc_task(scenario, model)
    targets = {} if task is None else task.targets
    comp = ctrl.get("complementarity")
    summary = {
        "ticks": plant["ticks"],
        "rate_hz": scenario.control_rate_hz,
        "deadline_ms": plant["deadline_ms"],
        "solve_ms": table["solve_ms"],
        "tick_ms": table["tick_ms"],
        "latency_ms": table["latency_ms"],
        # tick 0 carries one-time set-up (a cold solver): apart, not inside the percentiles above
        "startup_ms": table["startup_ms"],
        "jitter_ms": table["jitter_ms"],
        # ticks without a fresh command of the controller's in time, each with one cause
        # (bridge/attribution.py), and the host stalls the two processes witnessed
        "misses": plant["misses"],
        "misses_by_cause": plant.get("misses_by_cause"),
        "host_stalls": {k: v for k, v in (plant.get("host_stalls") or {}).items() if k in ("count_ge_1ms", "max_ms")},
        "followed_plan_ticks": plant.get("followed_plan"),
        "injected_ticks": plant.get("injected_ticks"),
        "fell": metrics["fell"],
        **task_figures(model, metrics, targets),
        "complementarity_max": float(np.nanmax(comp)) if comp is not None and comp.size else None,
        "complementarity_p99": float(np.nanpercentile(comp, 99)) if comp is not None and comp.size else None,
        "complementarity_worst": worst_complementarity(ctrl, model),
        # the 3D MPC's own word on its plans (mpc.centroidal.controller.PlanCheck): ticks whose
        # first stage failed the physics check (and was corrected), restarts after 3 such ticks in a
        # row, ticks whose QP stopped at its iteration cap, and how far it plans ahead
        "plan_inconsistent_ticks": _column_sum(ctrl, "plan_inconsistent"),
        "plan_restarts": _column_sum(ctrl, "plan_restart"),
        "qp_capped_ticks": _column_sum(ctrl, "qp_capped"),
        "horizon_s": _column_first(ctrl, "horizon_s"),
        # hardware sensors: the controller's estimates against the plant's truth (launch/estimation_metrics.py)
        "sensors": scenario.sensors,
        "estimation": estimation_metrics(folder, ctrl),
        "push_ns": scenario.push_ns,
        "push_axis": scenario.push_axis,
        "push_at_s": scenario.push_time_s,
        "touchdown_replanned_s": touchdown_replanning(folder, scenario),
        "plant": scenario.plant,
        "controller": scenario.controller,
        "mode": scenario.mode,
        "rejected": plant["rejected"],
        # the plant's own word on how the run ended: "run ended", a signal, or a broken invariant
        "end_reason": plant.get("end_reason"),
        "plant_violation": plant.get("plant_violation", ""),
        "interrupted": interrupted,
        "exit_codes": list(exit_codes),
        "run_dir": str(folder),
        # realtime with rt_priority: what each process got ({"requested", "granted", "refused"})
        "rt_priority": {role: json.loads((folder / f"sched_{role}.json").read_text())
                        for role in ("plant", "controller") if (folder / f"sched_{role}.json").exists()} or None,
    }
    try:  # a task over holes (a plan's own; a plan file gone since the run: reported, the run kept)
        terrain = None if task is None else task.terrain()
        if terrain is not None:
            summary.update(holes_metrics(folder, model, terrain))
    except (OSError, ValueError) as err:
        summary["holes_error"] = str(err)
    (folder / "summary.json").write_text(json.dumps(summary, indent=1))
    write_plots(folder)
    return summary
