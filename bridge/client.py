"""The controller client: connects to a plant server and answers each STATE with a COMMAND.

    client = ControllerClient(endpoint, controller, options)
    summary = client.run()           # until BYE, a stop signal, or the plant goes silent

Per tick it logs (controller_ticks.csv): tick, sim time, tick_ms (receive-to-send time),
cpu_ms (the same span's thread CPU time), solve_ms (receive to the end of the controller's
optional `prepare()` after sending: the whole tick's work), the controller's own phases in ms
(e.g. acados time_tot/time_qp...), its optional `tick_info()` fields (e.g. status, qp_iter,
touchdown_plan_s) and skipped (STATEs dropped unanswered before this one).

Each COMMAND carries the tick's report (bridge/protocol.py REPORT_FIELDS) for the plant's
deadline attribution: when STATE was read, the tick's CPU and wall time, whether the solver
failed (the controller's optional `solver_ok` attribute, read after `compute`), the host stalls
this process's witness (bridge/witness.py, realtime plants only) saw since the last COMMAND, and
when the previous tick's work ended. A controller may return a `sim.command_plan.JointPlan` (K
setpoints) instead of a JointCommand.

With hardware sensors (CONFIG `sensors`) the controller runs on the estimator's state
(estimation/); once the estimate diverges the client stops commanding: in realtime it goes on
listening while the plant follows, holds, then damps; in lockstep (where the plant would wait
for it every tick) it ends with exit code 4.

Behind after a stall, the client answers only the newest STATE waiting (older ones are stale:
their ticks have passed) and counts the ones it dropped.

Chaos (sim/chaos.py), realtime plants only: `stall_ms` slept before answering on a seeded
fraction `stall_prob` of ticks; each COMMAND held `transport_delay_ms` after its send stamp.
Fault injection for tests: `delay_s` added before sending on ticks where
tick % delay_every == delay_phase; `burn_s` of CPU spent instead on those ticks.
"""
from __future__ import annotations

import csv
import gc
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import zmq

from sim.chaos import StallSchedule

from . import protocol as P
from .lifecycle import install_stop_handlers, restore_handlers
from .security import secure_client

EXIT_OK, EXIT_PLANT_SILENT, EXIT_ESTIMATE_DIVERGED = 0, 3, 4


@dataclass(frozen=True)
class ClientOptions:
    """timeout_s: give up when the plant sends nothing for this long (first_timeout_s before its
    first message, while it may still be starting); log_dir: logs (None: none);
    curve_keys: CurveZMQ key folder; delay_s/delay_every/delay_phase: injected delays (burn_s: of
    CPU); name: HELLO name; stall_ms, stall_prob, transport_delay_ms, chaos_seed: chaos in realtime
    (module docstring)."""

    timeout_s: float = 5.0
    first_timeout_s: float = 60.0
    log_dir: str | None = None
    curve_keys: str | None = None
    delay_s: float = 0.0
    delay_every: int = 0
    delay_phase: int = 0
    burn_s: float = 0.0
    name: str = "controller"
    stall_ms: float = 0.0
    stall_prob: float = 0.0
    transport_delay_ms: float = 0.0
    chaos_seed: int = 0


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
        self.skipped = 0  # stale STATEs dropped unanswered (module docstring)
        self.host_stalls: dict | None = None
        self.sensor_set = "full"  # what STATE carries, from CONFIG
        self.dims = P.Dims.of(controller.model)
        self.estimator = None  # estimation.LeggedEstimator, when the plant sends hardware sensors
        self.silenced = ""  # why the client stopped commanding (the estimate diverged)

    def sensor_sets(self) -> list[str]:
        """The sensor sets this client reads (HELLO's "sensors"): "full", and for a floating-base
        robot "hardware" through the estimator, unless the controller says otherwise (its
        optional `sensors` attribute)."""
        model = self.controller.model
        default = ["full", "hardware"] if model.floating_base else ["full"]
        return list(getattr(self.controller, "sensors", default))

    def _configured(self, msg: P.Message, witness_holder: list) -> tuple[bool, StallSchedule | None]:
        """Read CONFIG: its sensor set (hardware: the STATE layout changes and the estimator
        starts) and mode; in realtime start the host-stall witness and the chaos schedule."""
        try:
            config = msg.json()
        except P.ProtocolError as err:
            self.errors.append({"reason": err.reason, "detail": f"unreadable CONFIG: {err.detail}"})
            return False, None
        model = self.controller.model
        self.sensor_set = config.get("sensors", "full")
        if self.sensor_set not in P.SENSOR_SETS:
            self.errors.append({"reason": "sensors", "detail": f"CONFIG names an unknown sensor set {self.sensor_set!r}"})
            self.sensor_set = "full"
        self.dims = P.Dims.of(model, self.sensor_set)
        if self.sensor_set == "hardware" and self.estimator is None:
            from estimation import LeggedEstimator

            self.estimator = LeggedEstimator(model, period_s=1.0 / float(config.get("control_rate_hz", 100.0)))
        if config.get("mode") != "realtime":
            return False, None
        if witness_holder[0] is None:
            from .witness import StallWitness

            witness_holder[0] = StallWitness.start()
        o = self.options
        period = 1.0 / float(config.get("control_rate_hz", 100.0))
        chaos = StallSchedule(stall_ms=o.stall_ms, stall_prob=o.stall_prob, period_s=period,
                              deadline_s=float(config.get("deadline_s", 0.9 * period)), seed=o.chaos_seed)
        return True, chaos if chaos.active else None

    def _warm_up_config(self) -> None:
        """Load now, before HELLO, what handling CONFIG needs: the plant sends STATE 0 right after
        CONFIG, so work done then would make tick 0 late (the witness library, ~50 ms even when
        compiled; numpy.random's generators for a chaos schedule, ~10 ms)."""
        try:
            from .witness import StallWitness

            StallWitness.prepare()
        except (RuntimeError, OSError):  # no C compiler: a lockstep run needs no witness (realtime fails at CONFIG)
            pass
        if self.options.stall_ms > 0 and self.options.stall_prob > 0:
            np.random.default_rng(self.options.chaos_seed)

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
            if "hardware" in self.sensor_sets():  # compiled now, not on the first tick of a hardware run
                from estimation import LeggedEstimator

                LeggedEstimator.warm_up(model)
            self._warm_up_config()
            gc.collect()
            gc.freeze()
            gc.disable()
            sock.send_multipart(P.encode_json(P.HELLO, 0, 0.0, {"protocol": P.VERSION, "robot": model.name,
                                                                "name": o.name, "sensors": self.sensor_sets()}))
            witness_holder = [None]  # the host-stall witness, started when CONFIG says realtime
            prepare = getattr(self.controller, "prepare", None)
            tick_info = getattr(self.controller, "tick_info", None)
            predicted = getattr(self.controller, "predicted_q", None)
            horizons: dict[int, np.ndarray] = {}
            last_flush = time.monotonic()
            last_heard = time.monotonic()
            heard_any = False
            realtime = False
            chaos = None
            ready_ns = busy_cpu_ns = 0  # when the last tick's work ended, and its CPU after sending
            while not self.stop:
                if not sock.poll(timeout=100):
                    if time.monotonic() - last_heard > (o.timeout_s if heard_any else o.first_timeout_s):
                        self.exit_code = EXIT_PLANT_SILENT
                        break
                    continue
                last_heard, heard_any = time.monotonic(), True
                batch = [sock.recv_multipart()]
                while True:  # everything else already waiting: only the newest STATE is answered
                    try:
                        batch.append(sock.recv_multipart(flags=zmq.NOBLOCK))
                    except zmq.Again:
                        break
                t_recv = time.perf_counter()
                t_recv_ns, cpu0 = time.monotonic_ns(), time.thread_time_ns()
                msg, skipped, bye = None, 0, False
                for frames in batch:
                    try:
                        m = P.decode(frames, self.dims)
                    except P.ProtocolError as err:
                        self.errors.append({"reason": err.reason, "detail": err.detail})
                        continue
                    if m.type == P.BYE:
                        bye = True
                        break
                    if m.type == P.ERROR:
                        try:
                            self.errors.append(m.json())
                        except P.ProtocolError as err:
                            self.errors.append({"reason": err.reason, "detail": f"unreadable ERROR: {err.detail}"})
                    elif m.type == P.CONFIG:
                        realtime, chaos = self._configured(m, witness_holder)
                    elif m.type == P.STATE:
                        skipped += msg is not None
                        msg = m
                if msg is None:
                    if bye:
                        break
                    continue
                self.skipped += skipped
                if chaos is not None and chaos.starts(msg.seq):
                    time.sleep(chaos.stall_s)
                a = msg.arrays
                est_row = {}
                if self.estimator is not None:  # hardware sensors: the controller runs on estimates
                    t_est = time.perf_counter()
                    q, v, contact = self.estimator.update(a)
                    est_row = estimate_row(q, v, contact, time.perf_counter() - t_est)
                    if self.estimator.diverged and not self.silenced:
                        self.silenced = f"estimate diverged at t = {msg.t:.3f} s: {self.estimator.diverged}"
                        print(f"controller: {self.silenced}; no more commands (the plant's safe command takes over)",
                              file=sys.stderr, flush=True)
                    if self.silenced:  # realtime: the plant's fallback takes over as the ticks go on;
                        self.rows.append({"tick": msg.seq, "t": msg.t, **est_row, "silenced": 1})
                        if not realtime:  # lockstep would wait for us tick after tick: end here
                            self.exit_code = EXIT_ESTIMATE_DIVERGED
                            break
                        if bye:
                            break
                        continue
                else:
                    q, v, contact = a["q"], a["v"], a["contact"].astype(bool)
                cmd, phases = self.controller.compute(msg.t, q, v, contact)
                if o.delay_every and msg.seq % o.delay_every == o.delay_phase:
                    if o.burn_s:
                        _burn(o.burn_s)
                    else:
                        time.sleep(o.delay_s)
                flags = P.REPORT_SOLVER_FAILED if getattr(self.controller, "solver_ok", True) is False else 0
                stall = _span(witness_holder[0].drain()) if witness_holder[0] is not None else (0, 0)
                now_ns = time.monotonic_ns()
                report = [t_recv_ns, time.thread_time_ns() - cpu0, now_ns - t_recv_ns, flags, *stall, ready_ns,
                          busy_cpu_ns]
                arrays = P.command_arrays(cmd, -1, report)  # -1: the plant may hold it for its hold_ticks
                try:
                    frames = P.encode(P.COMMAND, msg.seq, msg.t, arrays, dims=self.dims, wall_ns=now_ns)
                except ValueError as err:  # a malformed command: logged here, sent as is, the plant rejects and counts it
                    self.errors.append({"reason": "bad_command", "detail": str(err)})
                    frames = P.encode(P.COMMAND, msg.seq, msg.t, arrays, wall_ns=now_ns)
                if realtime and o.transport_delay_ms:  # chaos: the COMMAND spends this long "in transit"
                    time.sleep(o.transport_delay_ms * 1e-3)
                sock.send_multipart(frames)
                t_sent = time.perf_counter()
                cpu_sent = time.thread_time_ns()
                P.prepare_decode(P.STATE, self.dims)  # the next STATE's arrays, off the latency path
                if prepare is not None:  # e.g. the MPC's preparation phase, off the latency path
                    phases.update(prepare())
                row = {"tick": msg.seq, "t": msg.t, "tick_ms": (t_sent - t_recv) * 1e3,
                       "cpu_ms": report[1] * 1e-6, "solve_ms": (time.perf_counter() - t_recv) * 1e3,
                       **{f"{k}_ms": val * 1e3 for k, val in phases.items()}, "skipped": skipped,
                       "solver_failed": int(bool(flags)), **est_row}
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
                        writer = csv.DictWriter(log_file, fieldnames=list(row), extrasaction="ignore")
                        writer.writeheader()
                    writer.writerow(row)
                    if time.monotonic() - last_flush >= 1.0:
                        log_file.flush()
                        last_flush = time.monotonic()
                ready_ns, busy_cpu_ns = time.monotonic_ns(), time.thread_time_ns() - cpu_sent
                if bye:
                    break
        finally:
            if witness_holder[0] is not None:
                self.host_stalls = witness_holder[0].summary()
                witness_holder[0].stop()
            gc.enable()
            gc.unfreeze()
            restore_handlers(old)
            if log_file is not None:
                log_file.close()
            sock.close(linger=0)
        summary = {"ticks": len(self.rows), "errors": self.errors[:20], "n_errors": len(self.errors),
                   "skipped_states": self.skipped, "host_stalls": self.host_stalls, "sensors": self.sensor_set,
                   "estimator": None if self.estimator is None else {
                       "rejected": dict(self.estimator.rejected), "slips": self.estimator.slips,
                       "diverged": self.estimator.diverged,
                       "silenced": self.silenced, "gyro_bias": self.estimator.gyro_bias.tolist(),
                       "accel_bias": self.estimator.accel_bias.tolist()},
                   "exit_code": self.exit_code,
                   "reason": {EXIT_PLANT_SILENT: "plant stopped responding",
                              EXIT_ESTIMATE_DIVERGED: self.silenced}.get(self.exit_code, "run ended")}
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


ESTIMATE_COLUMNS = ("est_x", "est_y", "est_z", "est_qx", "est_qy", "est_qz", "est_qw", "est_vx", "est_vy",
                    "est_vz", "est_wx", "est_wy", "est_wz")


def estimate_row(q: np.ndarray, v: np.ndarray, contact: np.ndarray, seconds: float) -> dict:
    """controller_ticks.csv's estimate columns: base position, quaternion (x y z w), base-frame
    linear and angular velocity, the feet taken as standing (a bit per foot) and the
    estimator's time (ms)."""
    row = dict(zip(ESTIMATE_COLUMNS, [*q[:7].tolist(), *v[:6].tolist()]))
    row["est_contact"] = int(sum(1 << i for i, c in enumerate(contact) if c))
    row["estimator_ms"] = seconds * 1e3
    return row


def _span(stalls: np.ndarray) -> tuple[int, int]:
    """(first start, last end) of stalls ((n, 2) ns), (0, 0) if none."""
    return (int(stalls[:, 0].min()), int(stalls[:, 1].max())) if len(stalls) else (0, 0)


def _burn(seconds: float) -> None:
    """Spend `seconds` of this thread's CPU time (fault injection: a controller too slow)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
