"""The plant server: steps a plant for one controller over ZeroMQ (protocol in docs/PROTOCOL.md).

Per control tick k: send STATE(k) to the registered controller, wait for COMMAND(k), step the
plant one control period under it, log. Modes:
- lockstep: simulated time; the plant waits for COMMAND(k) (up to `lockstep_timeout_s`, after
  which the tick counts as a miss so that a dead controller never hangs the plant);
- realtime: ticks are paced by the wall clock (starting when the first controller says
  HELLO); COMMAND(k) must arrive before STATE(k) send time + deadline_s.
In both modes a miss holds the last command for `hold_ticks` ticks (never past its
`valid_until`), then applies the safe command: zero torque, joint damping `damping_kd` and a
joint spring of stiffness `safe_kp` that holds the joints where they were when the safe command
took over (0 for planar robots: damping only; the 3D quadrupeds' robot data asks for 40 N m/rad,
so that a robot whose controller died stands instead of collapsing through its body, which has
no contacts); the next valid command resumes control.
Any malformed or unexpected message is answered with ERROR and counted by reason; nothing a
peer sends can stop the loop. A plant that reports a broken invariant (PlantState.violation)
ends the run with BYE and the reason. SIGINT/SIGTERM end the run after the current tick; logs
are flushed every second and completed on exit.
"""
from __future__ import annotations

import csv
import json
from array import array
import math
import numbers
import os
import sys
import time
import traceback
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import zmq
from zmq.utils.monitor import recv_monitor_message

from sim.chaos import StallSchedule, transport_always_late
from sim.command_plan import CommandKeeper, JointPlan, safe_stiffness
from sim.protocol import PUSH_AXES, JointCommand, actuated_joints, actuated_positions, pushed_velocity
from sim.sensors import READING_FIELDS

from . import protocol as P
from .attribution import TickRecord, attribute, miss_times
from .lifecycle import install_stop_handlers, restore_handlers
from .security import check_endpoint, secure_server

# Connection events counted in the summary's "links" (where garbage or drops came from).
LINK_EVENT_NAMES = {zmq.EVENT_ACCEPTED: "accepted", zmq.EVENT_HANDSHAKE_SUCCEEDED: "handshake_ok",
                    zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL: "handshake_failed_protocol",
                    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL: "handshake_failed_no_detail",
                    zmq.EVENT_HANDSHAKE_FAILED_AUTH: "handshake_failed_auth", zmq.EVENT_DISCONNECTED: "disconnected"}
LINK_EVENTS_MASK = 0
for _event in LINK_EVENT_NAMES:
    LINK_EVENTS_MASK |= _event


def _is_stiffness(value) -> bool:
    """A joint stiffness the safe command can use: a finite real number >= 0 (numpy scalars
    included; not a bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and math.isfinite(value) \
        and value >= 0


@dataclass(frozen=True)
class ServerOptions:
    """Plant server settings.

    bind: ZeroMQ endpoint (non-loopback needs curve_keys). mode: "lockstep" or "realtime".
    control_rate_hz: STATE/COMMAND exchanges per second. plant_rate_hz: physics/impedance rate,
    used as the plant's largest integration step. deadline_s: realtime command deadline after
    STATE is sent (default: 0.9 of a control period). hold_ticks: ticks to hold the last command
    after a miss. damping_kd: joint damping of the safe command, N m s/rad. safe_kp: stiffness
    of the safe command's joint spring, N m/rad (None: the robot's
    controller_defaults["safe"]["kp"], else 0). duration_s: run
    length in simulated seconds (None: until stopped). lockstep_timeout_s: longest wait in
    lockstep. log_dir: where logs go (None: no logs). curve_keys: CurveZMQ key folder.
    push_ns: an impulse (N s) applied to the base along push_axis ("x", "y" horizontal, "z" vertical)
    once simulated time reaches push_at_s (default: mid-run); 0 = no push. live: an ipc://
    endpoint on which every tick's record is published (ZeroMQ PUB, never blocking: a full queue
    drops the record and counts it, `live_dropped`) for `launch run --live` (`LIVE_FIELDS`).
    stall_ms, stall_prob, transport_delay_ms, chaos_seed: in lockstep, simulated controller stalls
    and late COMMANDs (sim/chaos.py); in realtime the controller injects them (ClientOptions).
    sensors: what STATE carries (protocol SENSOR_SETS): "full" (the true state) or "hardware"
    (sim/sensors.py: encoders, IMU, foot forces; a floating-base robot only), its noise scaled by
    sensor_noise_scale and drawn from sensor_seed; log_dir then also gets sensors.npz.
    """

    bind: str = "tcp://127.0.0.1:5555"
    mode: str = "lockstep"
    control_rate_hz: float = 100.0
    plant_rate_hz: float = 1000.0
    deadline_s: float | None = None
    hold_ticks: int = 3
    damping_kd: float = 1.0
    safe_kp: float | None = None
    duration_s: float | None = None
    lockstep_timeout_s: float = 5.0
    log_dir: str | None = None
    curve_keys: str | None = None
    push_ns: float = 0.0
    push_at_s: float | None = None
    push_axis: str = "x"
    live: str | None = None
    stall_ms: float = 0.0
    stall_prob: float = 0.0
    transport_delay_ms: float = 0.0
    chaos_seed: int = 0
    sensors: str = "full"
    sensor_noise_scale: float = 1.0
    sensor_seed: int = 0

    def validate(self) -> "ServerOptions":
        """Raise ValueError naming any bad field; return self."""
        if self.mode not in ("lockstep", "realtime"):
            raise ValueError(f"mode must be 'lockstep' or 'realtime', got {self.mode!r}")
        check_endpoint(self.bind, self.curve_keys)
        for name in ("control_rate_hz", "plant_rate_hz", "damping_kd", "lockstep_timeout_s"):
            if not (np.isfinite(getattr(self, name)) and getattr(self, name) >= 0):
                raise ValueError(f"{name} must be finite and >= 0, got {getattr(self, name)}")
        if self.control_rate_hz <= 0 or self.plant_rate_hz < self.control_rate_hz:
            raise ValueError(f"need 0 < control_rate_hz <= plant_rate_hz, got {self.control_rate_hz}, "
                             f"{self.plant_rate_hz}")
        if self.deadline_s is not None and not (0 < self.deadline_s <= 1.0 / self.control_rate_hz):
            raise ValueError(f"deadline_s must be in (0, control period], got {self.deadline_s}")
        if self.safe_kp is not None and not _is_stiffness(self.safe_kp):
            raise ValueError(f"safe_kp must be a finite number >= 0 (N m/rad) or None, got {self.safe_kp!r}")
        if self.hold_ticks < 0:
            raise ValueError(f"hold_ticks must be >= 0, got {self.hold_ticks}")
        if self.duration_s is not None and not self.duration_s > 0:
            raise ValueError(f"duration_s must be > 0, got {self.duration_s}")
        if self.push_axis not in PUSH_AXES:
            raise ValueError(f"push_axis must be one of {PUSH_AXES}, got {self.push_axis!r}")
        for name in ("stall_ms", "transport_delay_ms"):
            if not (np.isfinite(getattr(self, name)) and getattr(self, name) >= 0):
                raise ValueError(f"{name} must be finite and >= 0 (ms), got {getattr(self, name)}")
        if not 0 <= self.stall_prob <= 1:
            raise ValueError(f"stall_prob must be in [0, 1], got {self.stall_prob}")
        if self.sensors not in P.SENSOR_SETS:
            raise ValueError(f"sensors must be one of {P.SENSOR_SETS}, got {self.sensors!r}")
        if isinstance(self.sensor_noise_scale, bool) or not (np.isfinite(self.sensor_noise_scale)
                                                             and self.sensor_noise_scale >= 0):
            raise ValueError(f"sensor_noise_scale must be a finite number >= 0, got {self.sensor_noise_scale!r}")
        if self.live is not None and not (isinstance(self.live, str) and self.live.startswith("ipc://")):
            raise ValueError(f"live must be an ipc:// endpoint (a local file), got {self.live!r}")
        return self

    @property
    def period(self) -> float:
        """Control period, s."""
        return 1.0 / self.control_rate_hz


# the live record of a tick (float64): these scalars, then q (nq), v (nv), force (nc x nf, row
# major), contact flags (nc, 0/1), applied torques (nu)
LIVE_FIELDS = ("tick", "t", "latency_us", "jitter_us", "missed")


class RunLog:
    """Per-tick timing CSV and trajectory, appended as the run goes; the trajectory NPZ is built
    once, at the end.

    Every tick appends one fixed-size float64 record (t, q, v, tau, contact, force) to
    trajectory.bin and one row to plant_ticks.csv; both files are flushed at least every second,
    so a tick costs the same at tick 1,000,000 as at tick 1. `close` builds trajectory.npz from
    them; after a SIGKILL, `recover_trajectory(folder)` builds it from trajectory.bin."""

    TICK_FIELDS = ("tick", "t", "wall_ns", "jitter_us", "latency_us", "status", "missed", "cause")

    def __init__(self, folder: str | None, model):
        self.folder = Path(folder) if folder else None
        self.rows: list[tuple] = []
        self.traj: dict[str, list] = {"t": [], "q": [], "v": [], "tau": [], "contact": [], "force": []}
        self._last_flush = time.monotonic()
        self._csv = self._bin = None
        self.names = {"q": list(model.q_names), "u": list(model.u_names), "contacts": [c.name for c in model.contacts]}
        self.layout = trajectory_layout(model)
        if self.folder:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._file = open(self.folder / "plant_ticks.csv", "w", newline="")
            self._csv = csv.writer(self._file)
            self._csv.writerow(self.TICK_FIELDS[:-1])  # causes are known at the end: misses.csv
            _write_json_atomically(self.folder / "trajectory_layout.json",
                                   {"layout": self.layout, "q_names": self.names["q"], "u_names": self.names["u"]})
            self._bin = open(self.folder / "trajectory.bin", "wb")

    def tick(self, row: tuple, state, tau: np.ndarray) -> None:
        """Record one tick (row in TICK_FIELDS order, without the cause) and the plant state after it."""
        self.rows.append(row)
        if self._csv:
            self._csv.writerow(row)
        values = (state.t, state.q, state.v, tau, state.contact, state.force)
        if self._bin is not None:
            self._bin.write(np.concatenate([np.ravel(np.asarray(v, np.float64)) for v in values]).tobytes())
        else:  # no folder: kept in memory for `trajectory`
            for key, value in zip(("t", "q", "v", "tau", "contact", "force"), values):
                self.traj[key].append(np.copy(value))
        if time.monotonic() - self._last_flush >= 1.0:
            self.flush()

    def flush(self) -> None:
        """Push what was appended since the last flush to disk (cost: the new rows only)."""
        self._last_flush = time.monotonic()
        if self._csv:
            self._file.flush()
        if self._bin is not None:
            self._bin.flush()

    def trajectory(self) -> dict:
        """The trajectory so far as arrays (t, q, v, tau, contact, force)."""
        if self._bin is not None:
            self.flush()
            return read_trajectory(self.folder)
        return {k: np.asarray(v) for k, v in self.traj.items()}

    def close(self) -> None:
        """Final flush, close, and build trajectory.npz."""
        self.flush()
        if self._csv:
            self._file.close()
            self._csv = None
        if self._bin is not None:
            self._bin.close()
            self._bin = None
            recover_trajectory(self.folder)


def trajectory_layout(model) -> list:
    """(name, shape) of each part of a trajectory.bin record, in order."""
    nf = 1 + model.n_tangent
    return [("t", []), ("q", [model.nq]), ("v", [model.nv]), ("tau", [model.nu]), ("contact", [model.nc]),
            ("force", [model.nc, nf])]


def read_trajectory(folder) -> dict:
    """The arrays of folder/trajectory.bin (every whole record written so far), by
    trajectory_layout.json; plus q_names and u_names."""
    folder = Path(folder)
    info = json.loads((folder / "trajectory_layout.json").read_text())
    sizes = [int(np.prod(shape)) if shape else 1 for _, shape in info["layout"]]
    width = sum(sizes)
    raw = np.fromfile(folder / "trajectory.bin", dtype=np.float64)
    data = raw[: len(raw) // width * width].reshape(-1, width)
    out, col = {}, 0
    for (name, shape), size in zip(info["layout"], sizes):
        part = data[:, col:col + size]
        col += size
        out[name] = part[:, 0] if not shape else part.reshape(len(data), *shape)
    out["contact"] = out["contact"].astype(bool)
    return {**out, "q_names": np.array(info["q_names"]), "u_names": np.array(info["u_names"])}


def recover_trajectory(folder) -> Path:
    """Build folder/trajectory.npz from trajectory.bin (what a plant killed mid-run leaves: every
    whole record written; `read_trajectory`); returns the NPZ's path."""
    folder = Path(folder)
    out = read_trajectory(folder)
    tmp = folder / "trajectory.tmp.npz"
    np.savez(tmp, **out)
    tmp.replace(folder / "trajectory.npz")
    return folder / "trajectory.npz"


class PlantServer:
    """Serve `plant` (a sim.protocol Plant) to one controller at a time.

    announce: print `ready ENDPOINT` on stdout once bound. t_start: perf_counter() time the
    process started building the plant (for ready.json's seconds_to_ready; default: now)."""

    def __init__(self, plant, options: ServerOptions, *, q0=None, v0=None, announce: bool = False,
                 t_start: float | None = None):
        self.plant = plant
        self.model = plant.model
        self.options = options.validate()
        m = self.model
        self.dims = P.Dims.of(m, options.sensors)
        self.sensors = None  # the hardware sensor model (sim/sensors.py)
        self.reading: dict = {}  # its latest reading, what STATE carries
        self.readings: list[dict] = []  # every reading, for sensors.npz (with a log_dir only)
        if options.sensors == "hardware":
            from robots.sensors import sensor_spec
            from sim.sensors import SensorModel

            self.sensors = SensorModel(m, sensor_spec(m).scaled(options.sensor_noise_scale), period_s=options.period,
                                       seed=options.sensor_seed)
        self.joints = actuated_joints(m)  # index into v per actuator
        self.joints_q = actuated_positions(m)  # index into q (past a floating base's quaternion)
        self.status = np.zeros(1, np.uint8)  # STATE's status: how the last tick's command was applied
        # warm up (JIT-compile) the plant before any controller connects, then start for real
        plant.reset(m.q0 if q0 is None else q0, v0)
        plant.step(JointCommand.zero(m.nu), 1e-3)
        self.state = plant.reset(m.q0 if q0 is None else q0, v0)
        self.client: bytes | None = None
        self.rejects: Counter = Counter()
        self.counts: Counter = Counter()
        self.stop = False
        self.joined = False
        self.endpoint = ""
        self.safe_kp = safe_stiffness(m, options.safe_kp)
        if not _is_stiffness(self.safe_kp):
            raise ValueError(f"{m.name}: controller_defaults['safe']['kp'] must be a finite number >= 0 (N m/rad), "
                             f"got {self.safe_kp!r}")
        self.safe_kp = float(self.safe_kp)
        self.keeper = CommandKeeper(m.nu, self.joints_q, hold_ticks=options.hold_ticks, safe_kp=self.safe_kp,
                                    damping_kd=options.damping_kd)
        self.records: list[TickRecord] = []  # one per tick, for the deadline attribution
        self.work_us = array("d")  # per tick: the plant's own work (step, log, publish), us
        self.controller_stalls: list[tuple[int, int]] = []  # stall spans the controller reported
        self.witnesses: list = []  # the host-stall witness (realtime runs; bridge/witness.py)
        self.setpoints = 1  # the last COMMAND's K: the next decode's prepared arrays
        self.chaos = StallSchedule(stall_ms=options.stall_ms, stall_prob=options.stall_prob, period_s=options.period,
                                   deadline_s=self._deadline(), seed=options.chaos_seed)
        self.pushed = False
        if options.push_ns and not m.floating_base and options.push_axis not in m.q_names:
            raise ValueError(f"push_ns along {options.push_axis!r} needs a robot with the base coordinate "
                             f"{options.push_axis!r}; {m.name} has none")
        self.log = RunLog(options.log_dir, m)
        self.links: Counter = Counter()  # connection events from the socket monitor
        self.end_reason = "run ended"
        self.violation = ""  # the plant's invariant violation that ended the run, if any
        self.announce = announce
        self.live = None  # the PUB socket of options.live
        self.t_built = time.perf_counter() if t_start is None else t_start

    # ------------------------------------------------------------------ messages
    def _config(self) -> dict:
        m, o = self.model, self.options
        return {"protocol": P.VERSION, "robot": m.name, "nq": m.nq, "nv": m.nv, "nu": m.nu, "nc": m.nc,
                "q_names": list(m.q_names), "u_names": list(m.u_names), "contacts": [c.name for c in m.contacts],
                "q_index": self.joints_q.tolist(), "v_index": self.joints.tolist(),
                "floating_base": m.floating_base, "force_columns": ["normal", "x", "y"][:self.dims.nf],
                **({"quaternion_order": "xyzw", "base_velocity_frame": "base"} if m.floating_base else {}),
                "u_max": m.u_max.tolist(), "q0": m.q0.tolist(), "mode": o.mode, "control_rate_hz": o.control_rate_hz,
                "plant_rate_hz": o.plant_rate_hz, "deadline_s": self._deadline(), "hold_ticks": o.hold_ticks,
                "safe_kp": self.safe_kp, "damping_kd": o.damping_kd, "max_setpoints": P.MAX_SETPOINTS,
                "max_plan_s": P.MAX_PLAN_S, "clock": "CLOCK_MONOTONIC", "sensors": o.sensors,
                **(self._sensor_config() if self.sensors is not None else {})}

    def _sensor_config(self) -> dict:
        """CONFIG's description of the hardware sensors: the IMU frame's placement on the base and
        how old each reading is (docs/PROTOCOL.md, "Hardware sensors")."""
        s = self.sensors
        return {"imu": {"position": s.r_imu.tolist(), "rotation": s.R_imu.tolist()},
                "sensor_latency_s": s.spec.latency_s}

    def _deadline(self) -> float:
        return self.options.deadline_s if self.options.deadline_s is not None else 0.9 * self.options.period

    def _send(self, ident: bytes, frames: list) -> None:
        try:
            self.sock.send_multipart([ident, *frames], flags=zmq.NOBLOCK)
        except zmq.Again:
            self.counts["send_dropped"] += 1

    def _send_state(self, tick: int) -> None:
        s = self.state
        if self.sensors is not None:
            arrays = [*(self.reading[k] for k in READING_FIELDS), self.status]
        else:
            arrays = [s.q, s.v, s.contact.astype(np.uint8), s.force, self.status]
        self._send(self.client, P.encode(P.STATE, tick, s.t, arrays, dims=self.dims))
        P.prepare_decode(P.COMMAND, self.dims, self.setpoints)  # while the controller works: the reply's arrays

    def _sense(self) -> None:
        """The hardware sensors read the state the plant is in (every tick, whether or not a
        controller listens: a robot's sensors run on their own); kept for sensors.npz when the
        run has a log folder."""
        if self.sensors is not None:
            self.reading = self.sensors.read(self.state)
            if self.options.log_dir:
                self.readings.append({**self.reading, "t": self.state.t})

    def _write_sensors(self) -> None:
        """sensors.npz in the log folder: every tick's reading (READING_FIELDS, and t)."""
        if self.readings and self.options.log_dir:
            np.savez(Path(self.options.log_dir) / "sensors.npz",
                     **{k: np.array([r[k] for r in self.readings]) for k in self.readings[0]})

    def _reject(self, ident: bytes, err: P.ProtocolError, seq: int) -> None:
        self.rejects[err.reason] += 1
        self._send(ident, P.encode_json(P.ERROR, seq, self.state.t, {"reason": err.reason, "detail": err.detail}))

    def _receive(self, tick: int) -> P.Message | None:
        """Read one incoming message and handle it; return a valid COMMAND for `tick`, else None.

        Nothing a peer sends escapes from here: a ProtocolError is answered with ERROR and
        counted by its reason; any other exception while handling the message is counted as
        `internal`, printed to stderr with its traceback, answered, and the plant goes on."""
        frames = self.sock.recv_multipart()  # small messages: copying beats zmq's zero-copy path
        ident, body = frames[0], frames[1:]
        try:
            return self._handle(ident, body, tick)
        except P.ProtocolError as err:
            self._reject(ident, err, tick)
            if ident == self.client and self.records and self.records[-1].tick == tick and \
                    err.reason != "sequence" and _claims_command_for(body, tick):
                self.records[-1].refused = True  # the controller answered this tick with a bad COMMAND
        except Exception as exc:  # a bug of ours, never the peer's licence to stop the plant
            self.counts["internal_errors"] += 1
            print(f"plant: internal error handling a message ({exc.__class__.__name__}: {exc}); going on\n"
                  f"{traceback.format_exc()}", file=sys.stderr)
            self._reject(ident, P.ProtocolError("internal", f"{exc.__class__.__name__} while handling the message"),
                         tick)
        return None

    def _handle(self, ident: bytes, body: list, tick: int) -> P.Message | None:
        """Validate one message from peer `ident`; act on HELLO and PLAN, return a COMMAND for `tick`."""
        msg = P.decode(body, self.dims, expect=(P.HELLO, P.COMMAND, P.PLAN))
        if msg.type == P.HELLO:
            hello = msg.json()
            if hello["protocol"] != P.VERSION:
                raise P.ProtocolError("version", _hello_version_detail(hello["protocol"]))
            if hello.get("robot", self.model.name) != self.model.name:
                raise P.ProtocolError("robot", f"controller is for robot {hello['robot'][:60]!r}, "
                                               f"this plant simulates {self.model.name!r}")
            reads = hello.get("sensors", ["full"])
            if self.options.sensors not in reads:
                raise P.ProtocolError("sensors", f"this plant sends the {self.options.sensors!r} sensor set "
                                                 f"(CONFIG 'sensors'); the controller reads only {str(reads)[:80]} "
                                                 "(HELLO 'sensors'): give it an estimator (estimation/), or start "
                                                 "the plant with the set it reads (serve-plant --sensors)")
            self.client = ident
            self.counts["hellos"] += 1
            self._send(ident, P.encode_json(P.CONFIG, tick, self.state.t, self._config()))
            self.joined = True  # the tick loop sends it the current STATE
            return None
        if ident != self.client:
            raise P.ProtocolError("unexpected", f"{P.TYPE_NAMES[msg.type]} from a peer that has not sent HELLO "
                                                "(or was replaced by a newer controller): send HELLO first")
        if msg.type == P.PLAN:
            self.counts["plans"] += 1
            return None
        if msg.seq != tick:
            self._late_report(msg, tick)
            raise P.ProtocolError("sequence", f"COMMAND for tick {msg.seq}, current tick is {tick}")
        P.check_command(msg)
        return msg

    def _late_report(self, msg: P.Message, tick: int) -> None:
        """Keep a late COMMAND's timing for its tick's attribution (the COMMAND itself is refused:
        its tick has passed)."""
        if 0 <= msg.seq < tick and msg.seq < len(self.records):
            rec = self.records[msg.seq]
            if not rec.arrival_ns:
                rec.arrival_ns, rec.command_sent_ns = time.monotonic_ns(), msg.wall_ns
                rec.report = tuple(msg.arrays["report"].tolist()) if "report" in msg.arrays else None
                self._note_stall(rec.report)

    def _note_stall(self, report) -> None:
        """Keep the stall span a controller's report carries (bridge/witness.py)."""
        if report is not None and report[5] > report[4] > 0:
            self.controller_stalls.append((report[4], report[5]))

    # ------------------------------------------------------------------ loop
    def run(self) -> dict:
        """Serve until duration_s of simulated time or a stop signal; return the summary."""
        o = self.options
        ctx = zmq.Context.instance()
        self.sock = ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.ROUTER_MANDATORY, 0)
        # a controller that reconnects under the routing id it set keeps its session (docs/PROTOCOL.md)
        self.sock.setsockopt(zmq.ROUTER_HANDOVER, 1)
        # libzmq drops a frame above this with its connection; smaller oversized ones are refused by decode
        self.sock.setsockopt(zmq.MAXMSGSIZE, P.MAX_LINK_FRAME_BYTES)
        release_auth = secure_server(self.sock, o.bind, o.curve_keys)
        self.monitor = self.sock.get_monitor_socket(LINK_EVENTS_MASK)
        old = install_stop_handlers(self._on_signal)
        try:
            try:
                self.sock.bind(o.bind)
            except zmq.ZMQError as err:
                raise ValueError(f"cannot bind {o.bind}: {err.strerror}" + (
                    ": another process holds that port (a plant still running?); pick another port or stop it"
                    if err.errno == zmq.EADDRINUSE else "")) from None
            self.endpoint = self.sock.getsockopt_string(zmq.LAST_ENDPOINT)
            if o.live:
                self.live = ctx.socket(zmq.PUB)
                self.live.setsockopt(zmq.LINGER, 0)
                self.live.setsockopt(zmq.SNDHWM, 1000)
                self.live.bind(o.live)
            self._ready()
            return self._loop()
        except Exception as exc:  # a failure of the plant itself: the BYE says so (not "run ended")
            self.end_reason = f"plant failed: {exc.__class__.__name__}: {exc}"[:200]
            raise
        finally:
            restore_handlers(old)
            for w in self.witnesses:
                w.stop()
            if self.live is not None:
                self.live.close(linger=0)
            if self.client is not None:
                self._send(self.client, P.encode_json(P.BYE, 0, self.state.t, {"reason": self.end_reason}))
            self.log.close()
            self._write_sensors()
            self.sock.disable_monitor()
            self.monitor.close(linger=0)
            self.sock.close(linger=100)
            release_auth()

    def _ready(self) -> None:
        """Announce that the socket is bound: `ready ENDPOINT` on stdout, and the files
        `endpoint` and `ready.json` (endpoint, pid, seconds since the server was built) in log_dir."""
        info = {"endpoint": self.endpoint, "pid": os.getpid(),
                "seconds_to_ready": round(time.perf_counter() - self.t_built, 3)}
        if self.options.log_dir:
            folder = Path(self.options.log_dir)
            _write_atomically(folder / "endpoint", self.endpoint)
            _write_json_atomically(folder / "ready.json", info)
        if self.announce:
            print(f"ready {self.endpoint}", flush=True)

    def _links_summary(self) -> dict:
        """Connection counters, every one always present (0 if none); `refused`: connections
        accepted that never completed a ZMTP/3 handshake (raw bytes, legacy ZMTP peers, CurveZMQ
        refusals: libzmq closes them). libzmq raises a handshake_failed_* event for some of
        these only (none for raw bytes that do not start like ZMTP/3): `refused` counts them all."""
        out = {name: self.links[name] for name in LINK_EVENT_NAMES.values()}
        out.update({k: v for k, v in self.links.items() if k not in out})
        out["refused"] = max(0, self.links["accepted"] - self.links["handshake_ok"])
        return out

    def _drain_monitor(self) -> None:
        """Count connection events (accepted, handshakes, disconnects) from the socket monitor."""
        while True:
            try:
                event = recv_monitor_message(self.monitor, flags=zmq.NOBLOCK)
            except zmq.Again:
                return
            self.links[LINK_EVENT_NAMES.get(event["event"], "other")] += 1

    def _on_signal(self, signum, frame) -> None:
        self.stop = True
        self.end_reason = f"plant stopped by signal {signum}"

    def _loop(self) -> dict:
        o = self.options
        period, deadline_s = o.period, self._deadline()
        deadline_ns = int(round(deadline_s * 1e9))
        n_ticks = None if o.duration_s is None else int(round(o.duration_s / period))
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        poller.register(self.monitor, zmq.POLLIN)
        realtime = o.mode == "realtime"
        spin = realtime and not _under_fifo()  # never spin under SCHED_FIFO (it starves the machine)
        late_transport = not realtime and transport_always_late(o.transport_delay_ms, deadline_s)
        tick = 0
        if realtime:  # loaded before a controller's HELLO starts the clock
            from .witness import StallWitness

            StallWitness.prepare()
        while realtime and self.client is None and not self.stop:  # the clock starts with a controller
            events = dict(poller.poll(timeout=100))
            if self.monitor in events:
                self._drain_monitor()
            if self.sock in events:
                self._receive(tick)
        if realtime:
            self.witnesses = [StallWitness.start()]
        self.joined = False
        t_sched = time.perf_counter()
        self._sense()
        while not self.stop and (n_ticks is None or tick < n_ticks):
            if realtime:
                _sleep_until(t_sched, spin)
            t_send = t_state = time.perf_counter()  # t_state: when STATE(tick) last left (latency's start)
            jitter_us = (t_send - t_sched) * 1e6 if realtime else 0.0
            rec = TickRecord(tick, time.monotonic_ns(), 0)
            rec.deadline_ns = rec.sent_ns + deadline_ns
            self.records.append(rec)
            injected = "host" if not realtime and self.chaos.stalled(tick) else ""
            if self.client is not None and not injected:
                self._send_state(tick)
            command = None
            limit = t_send + (deadline_s if realtime else o.lockstep_timeout_s)
            while command is None and not self.stop and not injected:
                remaining = limit - time.perf_counter()
                if remaining <= 0:
                    break
                # whole milliseconds, rounded up: pyzmq truncates, and poll(0) would spin
                events = dict(poller.poll(timeout=math.ceil(min(remaining, 0.1) * 1000)))
                if self.monitor in events:
                    self._drain_monitor()
                if self.sock in events:
                    msg = self._receive(tick)
                    if msg is not None:
                        rec.arrival_ns, rec.command_sent_ns = time.monotonic_ns(), msg.wall_ns
                        rec.report = tuple(msg.arrays["report"].tolist())
                        self._note_stall(rec.report)
                        if realtime and time.perf_counter() > limit:  # past the deadline while it was read
                            self.rejects["sequence"] += 1
                        else:
                            command = msg
                    elif self.joined:  # a controller (re)connected during this tick: give it the state
                        self.joined = False
                        t_state = time.perf_counter()  # its latency counts from here, not from its HELLO's wait
                        self._send_state(tick)
                elif not realtime and self.client is None:
                    limit = time.perf_counter() + o.lockstep_timeout_s  # lockstep: wait for a controller
            latency_us = (time.perf_counter() - t_state) * 1e6 if command is not None else float("nan")
            if self.stop and command is None:
                self.records.pop()
                break
            t_work = time.perf_counter()  # the plant's own work on the tick starts here
            if late_transport and command is not None:
                injected, command = "transport", None
            status = self._apply(command, tick, rec, injected, deadline_ns, period)
            if self.options.push_ns and not self.pushed and self.state.t >= self._push_time():
                self._push()
            self._sense()
            violation = self.state.violation
            if violation:  # the plant left physics: say so and end the run instead of serving fiction
                status = "violation"
                self.violation = violation
                self.end_reason = f"plant invariant violated: {violation}"
                print(f"plant: {self.end_reason}; ending the run", file=sys.stderr)
                self.stop = True
            self.status[0] = P.STATUS_CODES.get(status.split(" ")[0], P.STATUS_CODES["damp"])
            self.log.tick((tick, self.state.t, time.time_ns(), round(jitter_us, 1), round(latency_us, 1), status,
                           int(rec.missed)), self.state, self.state.tau)
            if self.live is not None:  # after the tick's work: never between STATE and COMMAND
                self._publish(tick, latency_us, jitter_us, rec.missed)
            self.work_us.append((time.perf_counter() - t_work) * 1e6)
            tick += 1
            t_sched += period
            if realtime and time.perf_counter() - t_sched > 10 * period:
                t_sched = time.perf_counter()  # far behind (e.g. suspended): restart the schedule
                self.counts["schedule_resets"] += 1
            if o.log_dir and tick % max(1, int(o.control_rate_hz)) == 0:
                self._progress(tick, n_ticks)
        for w in self.witnesses:
            w.stop()
        summary = self.summary(tick)
        if o.log_dir:
            self._progress(tick, n_ticks, done=True)
            self._write_misses()
            (Path(o.log_dir) / "plant_summary.json").write_text(json.dumps(summary, indent=1))
        return summary

    def _apply(self, command, tick: int, rec: TickRecord, injected: str, deadline_ns: int, period: float) -> str:
        """Step the plant one control period under the tick's COMMAND (a fresh plan) or what the
        keeper holds (sim/command_plan.py); mark the tick missed (no fresh plan of the
        controller's on time: late or lost, its solver failed, or, in lockstep, its CPU time over
        the deadline) and return the tick's status."""
        o = self.options
        keeper = self.keeper
        if command is not None:
            a = command.arrays
            plan = JointPlan(a["t_offset"], a["tau_ff"], a["q_des"], a["v_des"], a["kp"], a["kd"])
            self.setpoints = plan.k
            keeper.accept(plan, self.state.t, int(a["valid_until"][0]))
            status = "ok"
            rep = rec.report
            rec.missed = bool(rep[3] & P.REPORT_SOLVER_FAILED) or (o.mode == "lockstep" and rep[1] > deadline_ns)
        else:
            rec.missed, rec.injected = True, injected
            if injected:
                self.counts[f"injected_{injected}"] += 1
            status = keeper.status(tick, self.state.t)
            self.counts[status] += 1
        if rec.missed:
            self.counts["misses"] += 1
        try:
            self.state = keeper.step(self.plant, self.state, period, status)
        except ValueError as err:  # a command the plant cannot apply (decode and check_command
            self.counts["bad_commands"] += 1  # should have refused it already)
            keeper.drop()
            self.state = keeper.step(self.plant, self.state, period, "damp")
            status = f"damp ({err})"[:40]
        return status

    def _stalls(self) -> np.ndarray:
        """Every host stall witnessed in this run, both processes', (n, 2) from_ns, to_ns."""
        theirs = np.array(self.controller_stalls, np.int64).reshape(-1, 2)
        return np.vstack([w.stalls for w in self.witnesses] + [theirs])

    def misses_by_cause(self) -> dict:
        """The missed ticks counted by cause (bridge/attribution.py), summing to `misses`."""
        return attribute(self.records, self._stalls(), int(round(self._deadline() * 1e9)),
                         realtime=self.options.mode == "realtime")

    def _write_misses(self) -> None:
        """misses.csv in log_dir: every missed tick, its cause and the times it was judged by
        (ms: how late the COMMAND arrived, or nan; the report's CPU and wall time; STATE's and
        COMMAND's time between the processes; how long STATE waited for the controller's work
        before; the CPU time over the run's median: a `controller` miss at many times its usual
        CPU time for the same work is a slow machine, which no witness sees), and stalls.csv: every host stall witnessed (source, from_ns, to_ns)."""
        folder = Path(self.options.log_dir)
        with open(folder / "misses.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(("tick", "cause", "late_ms", "cpu_ms", "wall_ms", "state_leg_ms", "command_leg_ms",
                        "waited_ms", "cpu_over_median"))
            cpu = [r.report[1] for r in self.records if r.report is not None and r.report[1] > 0]
            median = float(np.median(cpu)) / 1e6 if cpu else float("nan")
            for r in self.records:
                if r.missed:
                    times = miss_times(r)
                    w.writerow((r.tick, r.cause, *(round(x, 3) for x in times), round(times[1] / median, 2)))
        with open(folder / "stalls.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(("source", "from_ns", "to_ns"))
            for wit in self.witnesses:
                w.writerows(("plant", int(a), int(b)) for a, b in wit.stalls)
            w.writerows(("controller", a, b) for a, b in self.controller_stalls)

    def _publish(self, tick: int, latency_us: float, jitter_us: float, missed: bool) -> None:
        """Send this tick's live record (LIVE_FIELDS, then the state) without blocking."""
        s = self.state
        record = np.concatenate(((tick, s.t, latency_us, jitter_us, float(missed)), s.q, s.v, s.force.ravel(),
                                 s.contact, s.tau))
        try:
            self.live.send(record, flags=zmq.NOBLOCK, copy=False)
        except zmq.Again:
            self.counts["live_dropped"] += 1

    def _push_time(self) -> float:
        o = self.options
        if o.push_at_s is not None:
            return o.push_at_s
        return 0.5 * o.duration_s if o.duration_s else 0.0

    def _push(self) -> None:
        """Apply the impulse push_ns (N s) at the base: v += M^-1 e_axis push_ns."""
        s, o = self.state, self.options
        self.state = self.plant.reset(s.q.copy(), pushed_velocity(self.model, s.q, s.v, o.push_ns, o.push_axis), s.t)
        self.pushed = True
        self.counts["pushes"] += 1

    def _progress(self, tick: int, n_ticks: int | None, done: bool = False) -> None:
        info = {"tick": tick, "ticks": n_ticks, "t": self.state.t, "misses": self.counts["misses"], "done": done,
                "rejected": sum(self.rejects.values())}
        _write_json_atomically(Path(self.options.log_dir) / "progress.json", info)

    def summary(self, ticks: int) -> dict:
        """Counters and latency/jitter statistics of the run so far (docs/PROTOCOL.md, "The plant's
        summary"). Tick 0's latency is the controller's first answer, which may carry one-time set-up
        (a cold solver): it is reported apart, `startup_us`, and left out of `latency_us`."""
        rows = self.log.rows
        lat = np.array([r[4] for r in rows if r[0] != 0], dtype=float)
        lat = lat[np.isfinite(lat)]
        startup = [r[4] for r in rows if r[0] == 0 and math.isfinite(r[4])]
        jit = np.abs(np.array([r[3] for r in rows], dtype=float))
        pct = lambda a, p: float(np.percentile(a, p)) if a.size else None  # noqa: E731
        return {"ticks": ticks, "mode": self.options.mode, "control_rate_hz": self.options.control_rate_hz,
                "deadline_ms": round(self._deadline() * 1e3, 6), "misses": self.counts["misses"],
                "misses_by_cause": self.misses_by_cause(), "host_stalls": self._host_stalls(),
                "followed_plan": self.counts["plan"],
                "injected_ticks": {"stall": self.counts["injected_host"], "transport": self.counts["injected_transport"]},
                "held": self.counts["hold"], "damped": self.counts["damp"], "hellos": self.counts["hellos"],
                "rejected": dict(self.rejects), "links": self._links_summary(), "internal_errors": self.counts["internal_errors"],
                "end_reason": self.end_reason, "plant_violation": self.violation, "fell": self._fell(),
                "startup_us": float(startup[0]) if startup else None,
                "latency_us": {"p50": pct(lat, 50), "p99": pct(lat, 99), "max": float(lat.max()) if lat.size else None},
                "jitter_us": {"p50": pct(jit, 50), "p99": pct(jit, 99), "max": float(jit.max()) if jit.size else None},
                "work_us": self._work_summary(),
                "options": {**asdict(self.options), "deadline_s": self._deadline(), "safe_kp": self.safe_kp}}

    def _work_summary(self) -> dict:
        """p50, p99, max of the plant's own work per tick (step, log, live record; us), and the
        p99 of each minute of ticks (`p99_by_minute`: flat when logging costs the same at every tick)."""
        work = np.frombuffer(self.work_us, dtype=np.float64) if len(self.work_us) else np.zeros(0)
        if not work.size:
            return {"p50": None, "p99": None, "max": None, "p99_by_minute": []}
        per_minute = max(1, int(round(60 * self.options.control_rate_hz)))
        chunks = [work[i:i + per_minute] for i in range(0, work.size, per_minute)]
        return {"p50": float(np.percentile(work, 50)), "p99": float(np.percentile(work, 99)), "max": float(work.max()),
                "p99_by_minute": [round(float(np.percentile(c, 99)), 1) for c in chunks]}

    def _host_stalls(self) -> dict:
        """count_ge_1ms and max_ms of the host stalls witnessed by both processes (realtime;
        zeros in lockstep), with the plant's own witness summary apart."""
        from .witness import stall_stats

        return {**stall_stats(self._stalls()),
                "plant": [w.summary() for w in self.witnesses] or None,
                "controller_reported": len(self.controller_stalls)}

    def _fell(self) -> bool:
        """Whether the robot fell during the run, decided as a run's summary decides it
        (sim.metrics.trajectory_metrics, from the states after each tick): once the base has
        been at least half its nominal height (CONFIG's q0), it dropped below that, or one of a
        floating base's other bodies came within 2 cm of the ground; or a floating base tilted
        more than 60 degrees; False for a robot without a base height coordinate."""
        from sim.metrics import base_names, body_heights, trajectory_metrics

        traj, names = self.log.trajectory(), list(self.model.q_names)
        if not len(traj["q"]):
            return False
        z_name = base_names(names)[1]
        q0_z = float(self.model.q0[names.index(z_name)]) if z_name in names else None
        q = np.asarray(traj["q"])
        return bool(trajectory_metrics(np.asarray(traj["t"]), q, np.asarray(traj["contact"]), names, q0_z,
                                       body_heights(self.model, q))["fell"])


def _claims_command_for(body: list, tick: int) -> bool:
    """True if a message's header (readable or not as a whole) says it is COMMAND(tick)."""
    head = body[0] if body and isinstance(body[0], bytes) else b""
    if len(head) < P.FIXED.size:
        return False
    _, _, msg_type, seq, _, _, _ = P.FIXED.unpack_from(head)
    return msg_type == P.COMMAND and seq == tick


def _hello_version_detail(asked: int) -> str:
    """The detail of ERROR `version` for a HELLO whose `protocol` is not ours: which version this
    plant speaks, and what the controller must change."""
    asked_text = str(asked) if abs(asked) < 10**9 else f"{str(asked)[:9]}..."
    head = f"HELLO asks for protocol {asked_text}; this plant speaks only protocol {P.VERSION}: "
    if asked < P.VERSION:
        return head + (f"update the controller to protocol {P.VERSION} (HELLO's \"protocol\" and the header's version "
                       f"{P.VERSION}, COMMAND's (K, nu) setpoints, t_offset and report: docs/PROTOCOL.md, 'Changes "
                       f"from version {P.VERSION - 1}')")
    return head + (f"send HELLO with \"protocol\": {P.VERSION} and version {P.VERSION} headers if the controller "
                   f"still speaks it, or run a plant that speaks protocol {asked_text}")


def _write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file, so readers never see half of it (or an
    empty file: the controller of a run once read the endpoint as '')."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def _write_json_atomically(path: Path, info: dict) -> None:
    """Write `info` as JSON to `path` atomically (see _write_atomically)."""
    _write_atomically(path, json.dumps(info))


def _under_fifo() -> bool:
    """True if this process runs under SCHED_FIFO (then nothing may spin)."""
    try:
        return os.sched_getscheduler(0) == os.SCHED_FIFO
    except (AttributeError, OSError):
        return False


def _sleep_until(t_target: float, spin: bool = True) -> None:
    """Sleep until perf_counter() reaches t_target: coarse sleep, then (spin) spin the last ~1 ms
    (the OS may wake a sleeper late on a busy machine; spinning costs one core for 1 ms a tick).
    Under SCHED_FIFO the caller passes spin=False: a FIFO thread that spins starves the machine
    (the kernel throttles it), and FIFO wakes a sleeper on time anyway."""
    while True:
        remaining = t_target - time.perf_counter()
        if remaining <= 0:
            return
        if not spin:
            time.sleep(remaining)
        elif remaining > 1.2e-3:
            time.sleep(remaining - 1e-3)
        else:
            while time.perf_counter() < t_target:
                pass
            return
