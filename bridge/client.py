"""The controller client: connects to a plant server and answers each STATE with a COMMAND.

    client = ControllerClient(endpoint, controller, options)
    summary = client.run()           # until BYE, a stop signal, or the plant goes silent

Per tick it logs (controller_ticks.csv): tick, sim time, tick_ms (receive-to-send time),
solve_ms (receive to the end of the controller's optional `prepare()` after sending: the whole
tick's work), the controller's own phases in ms (e.g. acados time_tot/time_qp...), and its
optional `tick_info()` fields (e.g. status, qp_iter, missed, touchdown_plan_s).
Fault injection for tests: `delay_s` added before sending on ticks where
tick % delay_every == delay_phase.
"""
from __future__ import annotations

import csv
import gc
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import zmq

from . import protocol as P
from .lifecycle import install_stop_handlers, restore_handlers
from .security import secure_client

EXIT_OK, EXIT_PLANT_SILENT = 0, 3


@dataclass(frozen=True)
class ClientOptions:
    """timeout_s: give up when the plant sends nothing for this long (first_timeout_s before its
    first message, while it may still be starting); log_dir: logs (None: none);
    curve_keys: CurveZMQ key folder; delay_s/delay_every/delay_phase: injected delays; name: HELLO name."""

    timeout_s: float = 5.0
    first_timeout_s: float = 60.0
    log_dir: str | None = None
    curve_keys: str | None = None
    delay_s: float = 0.0
    delay_every: int = 0
    delay_phase: int = 0
    name: str = "controller"


class ControllerClient:
    """Run `controller` (see mpc.controllers) against the plant at `endpoint`."""

    def __init__(self, endpoint: str, controller, options: ClientOptions = ClientOptions()):
        self.endpoint = endpoint
        self.controller = controller
        self.options = options
        self.stop = False
        self.exit_code = EXIT_OK
        self.errors: list[dict] = []
        self.rows: list[dict] = []

    def _on_signal(self, signum, frame) -> None:
        self.stop = True

    def run(self) -> dict:
        """Connect, say HELLO, serve commands until the run ends; return a summary."""
        o = self.options
        sock = zmq.Context.instance().socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        # our own routing id: if the link drops and reconnects, the plant still knows us (PROTOCOL.md)
        sock.setsockopt(zmq.ROUTING_ID, b"c" + os.urandom(15))
        secure_client(sock, o.curve_keys)
        sock.connect(self.endpoint)
        old = install_stop_handlers(self._on_signal)
        log_file = writer = None
        if o.log_dir:
            Path(o.log_dir).mkdir(parents=True, exist_ok=True)
            log_file = open(Path(o.log_dir) / "controller_ticks.csv", "w", newline="")
        try:
            model = self.controller.model
            # the cyclic garbage collector off the latency path: everything built so far (the
            # controller, its libraries) moves to the permanent generation, before HELLO starts
            # the plant's clock; young objects are collected after each tick's preparation, never
            # inside compute (a full collection there costs milliseconds)
            gc.collect()
            gc.freeze()
            gc.disable()
            sock.send_multipart(P.encode_json(P.HELLO, 0, 0.0, {"protocol": P.VERSION, "robot": model.name,
                                                                "name": o.name}))
            dims = P.Dims.of(model)
            prepare = getattr(self.controller, "prepare", None)
            tick_info = getattr(self.controller, "tick_info", None)
            predicted = getattr(self.controller, "predicted_q", None)
            horizons: dict[int, np.ndarray] = {}
            last_flush = time.monotonic()
            last_heard = time.monotonic()
            heard_any = False
            while not self.stop:
                if not sock.poll(timeout=100):
                    if time.monotonic() - last_heard > (o.timeout_s if heard_any else o.first_timeout_s):
                        self.exit_code = EXIT_PLANT_SILENT
                        break
                    continue
                last_heard, heard_any = time.monotonic(), True
                frames = sock.recv_multipart()
                t_recv = time.perf_counter()
                try:
                    msg = P.decode(frames, dims)
                except P.ProtocolError as err:
                    self.errors.append({"reason": err.reason, "detail": err.detail})
                    continue
                if msg.type == P.BYE:
                    break
                if msg.type == P.ERROR:
                    try:
                        self.errors.append(msg.json())
                    except P.ProtocolError as err:
                        self.errors.append({"reason": err.reason, "detail": f"unreadable ERROR: {err.detail}"})
                    continue
                if msg.type != P.STATE:
                    continue
                a = msg.arrays
                cmd, phases = self.controller.compute(msg.t, a["q"], a["v"], a["contact"].astype(bool))
                if o.delay_every and msg.seq % o.delay_every == o.delay_phase:
                    time.sleep(o.delay_s)
                arrays = P.command_arrays(cmd, -1)  # -1: the plant may hold it for its hold_ticks
                try:
                    frames = P.encode(P.COMMAND, msg.seq, msg.t, arrays, dims=dims)
                except ValueError as err:  # a malformed command: logged here, sent as is, the plant rejects and counts it
                    self.errors.append({"reason": "bad_command", "detail": str(err)})
                    frames = P.encode(P.COMMAND, msg.seq, msg.t, arrays)
                sock.send_multipart(frames)
                t_sent = time.perf_counter()
                P.prepare_decode(P.STATE, dims)  # the next STATE's arrays, off the latency path
                if prepare is not None:  # e.g. the MPC's preparation phase, off the latency path
                    phases.update(prepare())
                row = {"tick": msg.seq, "t": msg.t, "tick_ms": (t_sent - t_recv) * 1e3,
                       "solve_ms": (time.perf_counter() - t_recv) * 1e3,
                       **{f"{k}_ms": v * 1e3 for k, v in phases.items()}}
                if tick_info is not None:
                    row.update(tick_info())
                if predicted is not None and o.log_dir:  # the plan of this tick, for the animation
                    plan = predicted()
                    if plan is not None:
                        horizons[msg.seq] = plan
                self.rows.append(row)
                gc.collect(0)
                if log_file is not None:
                    if writer is None:
                        writer = csv.DictWriter(log_file, fieldnames=list(row))
                        writer.writeheader()
                    writer.writerow(row)
                    if time.monotonic() - last_flush >= 1.0:
                        log_file.flush()
                        last_flush = time.monotonic()
        finally:
            gc.enable()
            gc.unfreeze()
            restore_handlers(old)
            if log_file is not None:
                log_file.close()
            sock.close(linger=0)
        summary = {"ticks": len(self.rows), "errors": self.errors[:20], "n_errors": len(self.errors),
                   "exit_code": self.exit_code,
                   "reason": "plant stopped responding" if self.exit_code == EXIT_PLANT_SILENT else "run ended"}
        if o.log_dir:
            (Path(o.log_dir) / "controller_summary.json").write_text(json.dumps(summary, indent=1))
            if horizons:  # predicted q per tick (ticks x stages x nq; nan where a tick had none)
                ticks = max(horizons) + 1
                shape = next(iter(horizons.values())).shape
                stack = np.full((ticks, *shape), np.nan)
                for k, plan in horizons.items():
                    if plan.shape == shape:
                        stack[k] = plan
                np.savez(Path(o.log_dir) / "controller_horizon.npz", q=stack)
        return summary
