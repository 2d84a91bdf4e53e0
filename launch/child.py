"""Child-process entry points used by `python -m launch run` (launch/run.py):

    python -m launch.child serve   RUN_FOLDER     plant server for RUN_FOLDER/scenario.json
    python -m launch.child control RUN_FOLDER     controller client for the same scenario

They live in launch/ because they read the scenario (launch/scenario.py); bridge/ knows
nothing of scenarios.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def _die_with_parent() -> None:
    """Ask Linux to send this process SIGTERM when its parent (`launch run`) dies, so that a
    killed run (SIGKILL, a crash) leaves no plant waiting for a controller forever. Elsewhere
    (no prctl), a no-op."""
    import ctypes
    import os
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _scenario(folder: Path):
    from .scenario import Scenario

    return Scenario.from_json((folder / "scenario.json").read_text())


def request_fifo(priority: int) -> str:
    """Put this process under SCHED_FIFO at `priority` (1-99); "" when granted, else why not."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return ""
    except (PermissionError, OSError, AttributeError) as err:
        return str(err) or type(err).__name__


def realtime_priority(sc, role: str, folder: Path | None = None) -> None:
    """Put this process under SCHED_FIFO at the scenario's rt_priority (realtime mode only);
    one line on stderr (the process's log) says what it got, and folder/sched_<role>.json
    ({"requested", "granted", "refused"}) records it for the run's summary."""
    if sc.mode != "realtime" or not sc.rt_priority:
        return
    refused = request_fifo(sc.rt_priority)
    if folder is not None:
        import json

        (Path(folder) / f"sched_{role}.json").write_text(json.dumps(
            {"requested": sc.rt_priority, "granted": not refused, "refused": refused}))
    if refused:
        print(f"[{role}] rt_priority {sc.rt_priority} not granted ({refused}); normal scheduler", file=sys.stderr,
              flush=True)
    else:
        print(f"[{role}] SCHED_FIFO priority {sc.rt_priority}", file=sys.stderr, flush=True)


def serve(folder: Path) -> int:
    """Run the plant server of the scenario in `folder`; logs go there."""
    t_start = time.perf_counter()
    from bridge.server import PlantServer, ServerOptions
    from sim.registry import make_plant

    from .model_errors import plant_robot

    sc = _scenario(folder)
    model = plant_robot(sc)  # with the scenario's mass, inertia, friction and ground errors
    plant = make_plant(sc.plant, model, plant_rate_hz=sc.plant_rate_hz, **sc.plant_options)
    q0 = sc.initial_configuration(model)
    live = folder / "live_endpoint"  # written by `launch run --live`
    opts = ServerOptions(bind="tcp://127.0.0.1:*", mode=sc.mode, control_rate_hz=sc.control_rate_hz,
                         plant_rate_hz=sc.plant_rate_hz, hold_ticks=sc.hold_ticks, duration_s=sc.duration_s,
                         log_dir=str(folder), push_ns=sc.push_ns, push_at_s=sc.push_at_s, push_axis=sc.push_axis,
                         live=live.read_text().strip() if live.exists() else None, stall_ms=sc.stall_ms,
                         stall_prob=sc.stall_prob, transport_delay_ms=sc.transport_delay_ms, chaos_seed=sc.seed,
                         sensors=sc.sensors, sensor_noise_scale=sc.sensor_noise_scale, sensor_seed=sc.seed)
    server = PlantServer(plant, opts, q0=q0, announce=True, t_start=t_start)  # warms the plant up
    # after the warm-up (no JIT compiling under FIFO), before the server's ZeroMQ context (its I/O
    # thread inherits the policy) and its stall witness
    realtime_priority(sc, "plant", folder)
    server.run()
    return 0


def wait_for_endpoint(folder: Path, timeout_s: float = 60.0) -> str:
    """The endpoint the plant wrote to folder/endpoint, once the file exists and is not empty
    ("" after timeout_s). The plant writes it atomically; an empty file still counts as not yet
    written (a controller that connected to '' failed the demo once)."""
    path = Path(folder) / "endpoint"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() <= deadline:
        if path.exists():
            text = path.read_text().strip()
            if text:
                return text
        time.sleep(0.02)
    return ""


def control(folder: Path) -> int:
    """Run the controller of the scenario in `folder` against the plant that wrote folder/endpoint."""
    from bridge.client import ClientOptions, ControllerClient
    from mpc.controllers import make_controller
    from robots import get_robot

    from .model_errors import with_model_errors

    sc = _scenario(folder)
    # the nominal robot; sensor noise and command latency between it and the plant
    controller = with_model_errors(make_controller(sc.controller, get_robot(sc.robot), **sc.controller_options), sc)
    endpoint = wait_for_endpoint(folder)
    if not endpoint:
        print("controller: the plant never published its endpoint", file=sys.stderr)
        return 2
    realtime_priority(sc, "controller", folder)  # before the client's ZeroMQ context: its I/O thread inherits it
    client = ControllerClient(endpoint, controller, ClientOptions(
        log_dir=str(folder), name=sc.controller, stall_ms=sc.stall_ms, stall_prob=sc.stall_prob,
        transport_delay_ms=sc.transport_delay_ms, chaos_seed=sc.seed))
    summary = client.run()
    if summary["exit_code"]:
        print(f"controller: {summary['reason']}", file=sys.stderr)
    return summary["exit_code"]


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("serve", "control"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    _die_with_parent()
    sys.exit({"serve": serve, "control": control}[sys.argv[1]](Path(sys.argv[2])))
