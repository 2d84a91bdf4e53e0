"""Wire protocol v3 between plant and controller (specified in docs/PROTOCOL.md).

A message is a ZeroMQ multipart message:
    frame 0: header = 32-byte fixed part + 16 bytes per array descriptor (little-endian)
    frame 1..n: one raw array per frame (C order), decoded with numpy.frombuffer
Fixed part: magic b"LMPC", version u16, type u16, seq u32, sim time f64 (s),
sender clock i64 (CLOCK_MONOTONIC, ns: one clock for both processes on a host), array count u32.
Descriptor: field id u16, dtype code u8, ndim u8, dim0 u32, dim1 u32, reserved u32.

Every message type has a declared schema (field names, dtypes, shapes from the robot's
dimensions; JSON payloads have typed fields, JSON_SCHEMAS). `decode` validates everything
(magic, version, type, counts, frames, descriptors, sizes, dtypes, shapes, finite values)
and `Message.json` validates a JSON payload field by field; both raise
`ProtocolError(reason, detail)` and nothing else, with `reason` one of REASONS, so servers
count rejections by cause.
"""
from __future__ import annotations

import json
import math
import operator
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from sim.command_plan import MAX_PLAN_S, MAX_SETPOINTS

MAGIC = b"LMPC"
VERSION = 3  # v3: COMMAND carries K setpoints at stated times and the controller's timing report; the
# header's clock is CLOCK_MONOTONIC (v2: STATE's force columns per the robot's dimension and status)
FIXED = struct.Struct("<4sHHIdqI")  # 32 bytes
DESC = struct.Struct("<HBBIII")  # 16 bytes
MAX_ARRAYS = 16
MAX_FRAME_BYTES = 1 << 20  # 1 MiB per array frame: larger ones are refused (too_large)
MAX_MESSAGE_BYTES = 4 << 20  # 4 MiB for all frames of one message together (too_large)
MAX_JSON_BYTES = 64 << 10  # 64 KiB for a JSON payload (too_large)
# libzmq drops a single frame above this, and the connection it came on, before the plant
# reads it (ZMQ_MAXMSGSIZE); frames between MAX_MESSAGE_BYTES and this are read and refused.
MAX_LINK_FRAME_BYTES = 64 << 20

HELLO, CONFIG, STATE, COMMAND, PLAN, ERROR, BYE = 1, 2, 3, 4, 5, 6, 7
TYPE_NAMES = {HELLO: "HELLO", CONFIG: "CONFIG", STATE: "STATE", COMMAND: "COMMAND", PLAN: "PLAN", ERROR: "ERROR",
              BYE: "BYE"}

DTYPES = {1: np.dtype("<f8"), 2: np.dtype("u1"), 3: np.dtype("<i8")}
DTYPE_CODES = {v: k for k, v in DTYPES.items()}

# Every reason a message can be refused for; docs/PROTOCOL.md "Errors" says which case each covers.
REASONS = ("truncated", "magic", "version", "type", "count", "frames", "descriptor", "dtype", "shape", "size",
           "too_large", "non_finite", "value", "sequence", "json", "field", "robot", "sensors", "unexpected",
           "internal")

# What STATE carries (CONFIG's "sensors"): "full", the plant's true state (q, v, contact, force);
# "hardware", what a robot's own sensors give (sim/sensors.py READING_FIELDS), no base pose or
# velocity. A controller's HELLO lists the sets it reads ("sensors"; default ["full"]).
SENSOR_SETS = ("full", "hardware")

# COMMAND values are bounded so that the impedance law cannot overflow float64 (inf - inf):
# |tau_ff|, |q_des|, |v_des| <= COMMAND_VALUE_LIMIT and 0 <= kp, kd <= COMMAND_VALUE_LIMIT.
COMMAND_VALUE_LIMIT = 1e9


class ProtocolError(ValueError):
    """A message that breaks the protocol. `reason` is one of REASONS; `detail` says what."""

    def __init__(self, reason: str, detail: str):
        assert reason in REASONS, reason
        self.reason, self.detail = reason, detail
        super().__init__(f"{reason}: {detail}")


# STATE's "status": how the plant applied the tick before this STATE (the server's tick status):
# "plan" = a missed tick that followed the horizon of the last COMMAND (sim/command_plan.py)
STATUS_CODES = {"ok": 0, "hold": 1, "damp": 2, "violation": 3, "plan": 4}

# COMMAND's "report" (int64, REPORT_FIELDS): the controller's own account of the tick, on the
# shared CLOCK_MONOTONIC (ns; 0 = not known): when STATE was read, the tick's thread CPU time and
# wall time from STATE read to COMMAND sent, flags (REPORT_SOLVER_FAILED: the command is a
# fallback, the solver gave no plan this tick), the span of the host stalls the controller's
# witness saw since its last COMMAND (bridge/witness.py), when the controller finished the
# previous tick's work after its COMMAND (e.g. the MPC's preparation) and that work's CPU time.
REPORT_FIELDS = ("state_received_ns", "cpu_ns", "wall_ns", "flags", "stall_from_ns", "stall_to_ns", "ready_ns",
                 "busy_cpu_ns")
REPORT_SOLVER_FAILED = 1



@dataclass(frozen=True)
class Dims:
    """Robot dimensions that size the arrays: nq, nv, nu (actuators), nc (contacts), nf (force
    columns per contact: 2 (normal, x) for planar robots, 3 (normal, x, y) in 3D), and the
    sensor set STATE carries (SENSOR_SETS)."""

    nq: int
    nv: int
    nu: int
    nc: int
    nf: int = 2
    sensors: str = "full"

    def __post_init__(self):
        if self.sensors not in SENSOR_SETS:
            raise ValueError(f"sensors must be one of {SENSOR_SETS}, got {self.sensors!r}")
        object.__setattr__(self, "_hash", hash((self.nq, self.nv, self.nu, self.nc, self.nf, self.sensors)))
        object.__setattr__(self, "layouts", {})  # message type -> _Layout, made by _fixed_layout

    def __hash__(self) -> int:  # computed once: schema's cache hashes a Dims
        return self._hash

    def __reduce__(self):  # pickled without its caches
        return Dims, (self.nq, self.nv, self.nu, self.nc, self.nf, self.sensors)

    @classmethod
    def of(cls, model, sensors: str = "full") -> "Dims":
        """The Dims of a RobotModel whose STATE carries the sensor set `sensors`."""
        return cls(model.nq, model.nv, model.nu, model.nc, 1 + model.n_tangent, sensors)


@lru_cache(maxsize=256)
def schema(msg_type: int, dims: Dims | None, k: int = 1) -> tuple[tuple[str, np.dtype, tuple], ...]:
    """(field name, dtype, shape) of each array of a message type. JSON messages carry one
    u8 array "json" of any length; PLAN arrays have a free first dimension (-1); a COMMAND
    carries k setpoints (1 <= k <= MAX_SETPOINTS, read from its first descriptor)."""
    f8, u1, i8 = DTYPES[1], DTYPES[2], DTYPES[3]
    if msg_type in (HELLO, CONFIG, ERROR, BYE):
        return (("json", u1, (-1,)),)
    if dims is None:
        raise ProtocolError("unexpected", f"{TYPE_NAMES.get(msg_type, msg_type)} before CONFIG")
    if msg_type == STATE and dims.sensors == "hardware":
        n = dims.nu
        return (("q_joint", f8, (n,)), ("v_joint", f8, (n,)), ("tau_joint", f8, (n,)), ("gyro", f8, (3,)),
                ("accel", f8, (3,)), ("foot_force", f8, (dims.nc,)), ("status", u1, (1,)))
    if msg_type == STATE:
        return (("q", f8, (dims.nq,)), ("v", f8, (dims.nv,)), ("contact", u1, (dims.nc,)),
                ("force", f8, (dims.nc, dims.nf)), ("status", u1, (1,)))
    if msg_type == COMMAND:
        n = dims.nu
        return (("tau_ff", f8, (k, n)), ("q_des", f8, (k, n)), ("v_des", f8, (k, n)), ("kp", f8, (n,)),
                ("kd", f8, (n,)), ("valid_until", i8, (1,)), ("t_offset", f8, (k,)),
                ("report", i8, (len(REPORT_FIELDS),)))
    if msg_type == PLAN:
        return (("t", f8, (-1,)), ("x", f8, (-1, dims.nq + dims.nv)), ("u", f8, (-1, dims.nu)))
    raise ProtocolError("type", f"unknown message type {msg_type}")


@dataclass(frozen=True)
class _Layout:
    """A schema without free dimensions, precomputed for the fast paths: the exact descriptor
    bytes, each frame's byte size, per field (name, dtype, shape).

    For encoding: each field's (dtype, shape) `signature`, and `ndarrays` (np.ndarray per field:
    the types encode takes as they are).

    For decoding: the array frames are joined with the 8-byte fields first, then the 1-byte
    ones, each group in schema order, so that every field starts aligned to its item size
    (`order` picks the frames in that order; None: schema order). `values` is the struct that
    unpacks every number of the joined bytes, `runs` (dtype, count, byte offset) the stretches
    of one dtype in them, and `views` each field's place (name, run index, first and last
    element in the run or None, None for the whole run, shape to reshape to or None). `pool`
    holds (buffer, arrays) pairs made ahead of time by `prepare_decode`, one per message
    (list.append and list.pop: safe across threads)."""

    desc: bytes
    sizes: tuple[int, ...]
    fields: tuple[tuple[str, np.dtype, tuple], ...]
    signature: list[tuple[np.dtype, tuple]]
    ndarrays: list[type]
    order: Callable[[list], tuple] | None
    values: struct.Struct
    runs: tuple[tuple[np.dtype, int, int], ...]
    views: tuple[tuple[str, int, int | None, int | None, tuple | None], ...]
    pool: list = field(default_factory=list, compare=False)

    def arrays_of(self, buffer) -> dict[str, np.ndarray]:
        """The read-only arrays of one message, views of `buffer` (the array frames joined in
        `order`: bytes, or a bytearray that `prepare_decode` made)."""
        runs = [np.frombuffer(buffer, dtype, count, offset) for dtype, count, offset in self.runs]
        arrays = {}
        for name, run, start, stop, shape in self.views:
            arr = runs[run] if start is None else runs[run][start:stop]
            arrays[name] = arr if shape is None else arr.reshape(shape)
        if type(buffer) is not bytes:
            for arr in arrays.values():
                arr.flags.writeable = False
        return arrays


_STRUCT_CODES = {"f": "d", "u": "B", "i": "q"}  # struct letters of DTYPES' kinds (all little-endian)
_SIGNATURE = operator.attrgetter("dtype", "shape")


def _fixed_layout(msg_type: int, dims: Dims | None, k: int = 1) -> _Layout | None:
    """The _Layout of a message type's schema (a COMMAND's with k setpoints), or None (free
    dimensions, or unknown before CONFIG); kept on the Dims, one per message type and k."""
    if dims is None:
        return None
    try:
        return dims.layouts[msg_type, k]
    except KeyError:
        layout = dims.layouts[msg_type, k] = _make_layout(msg_type, dims, k)
        return layout


def _command_k(head, size: int) -> int:
    """The setpoint count K of a COMMAND: its first descriptor's dim0 when that array is 2-D
    (0 when the header is too short or the array is not 2-D)."""
    if size < FIXED.size + DESC.size:
        return 0
    _, _, ndim, d0, _, _ = DESC.unpack_from(head, FIXED.size)
    return d0 if ndim == 2 else 0


def _make_layout(msg_type: int, dims: Dims, k: int = 1) -> _Layout | None:
    """A new _Layout (see there), or None."""
    if msg_type == COMMAND and not 1 <= k <= MAX_SETPOINTS:
        return None
    try:
        fields = schema(msg_type, dims, k)
    except ProtocolError:
        return None
    if any(-1 in shape for _, _, shape in fields):
        return None
    desc = b"".join(DESC.pack(i, DTYPE_CODES[dt], len(sh), *(sh + (0,) * (2 - len(sh))), 0)
                    for i, (_, dt, sh) in enumerate(fields))
    counts = [math.prod(sh) for _, _, sh in fields]
    sizes = tuple(c * dt.itemsize for c, (_, dt, _) in zip(counts, fields))
    # widest items first: every size is a multiple of its item size, so every field stays aligned
    order = sorted(range(len(fields)), key=lambda i: -fields[i][1].itemsize)
    runs, views, offset = [], [None] * len(fields), 0
    for i in order:
        name, dt, sh = fields[i]
        if not (runs and runs[-1][0] == dt):
            runs.append([dt, 0, offset])
        start = runs[-1][1]
        runs[-1][1] += counts[i]
        views[i] = [name, len(runs) - 1, start, start + counts[i], sh if len(sh) > 1 else None]
        offset += sizes[i]
    for view in views:
        if view[2] == 0 and view[3] == runs[view[1]][1]:  # the field is its run: no slice needed
            view[2] = view[3] = None
    values = struct.Struct("<" + "".join(f"{counts[i]}{_STRUCT_CODES[fields[i][1].kind]}" for i in order))
    pick = None if order == sorted(order) or len(order) < 2 else operator.itemgetter(*order)
    return _Layout(desc, sizes, fields, [(dt, sh) for _, dt, sh in fields], [np.ndarray] * len(fields), pick,
                   values, tuple(map(tuple, runs)), tuple(map(tuple, views)))


def prepare_decode(msg_type: int, dims: Dims | None, k: int = 1) -> None:
    """Make the arrays of the next `msg_type` message ahead of time (a buffer and its read-only
    views), so that `decode` only copies the message's bytes into them: call it off the latency
    path, e.g. right after sending, while the peer works. A decode without prepared arrays makes
    its own; at most two sets wait. k: a COMMAND's expected setpoint count."""
    fast = _fixed_layout(msg_type, dims, k)
    if fast is not None and len(fast.pool) < 2:
        buffer = bytearray(fast.values.size)
        fast.pool.append((memoryview(buffer), fast.arrays_of(buffer)))


@dataclass
class Message:
    """A decoded message: type, seq, sim time t (s), sender wall clock (ns), arrays by name;
    `numbers`: every number of the array frames, all finite, when the fast path
    (`_decode_fixed`) decoded it, else None; in the layout's order (`_Layout`): a COMMAND's in
    schema order, a STATE's as q, v, force, contact, status."""

    type: int
    seq: int
    t: float
    wall_ns: int
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    numbers: tuple | None = None

    def json(self) -> dict:
        """The JSON payload of a HELLO / CONFIG / ERROR / BYE message, validated against the
        type's JSON_SCHEMAS entry (an object, required fields present, every known field of its
        type; bool is not an int). Raises ProtocolError: `too_large`, `json` or `field`."""
        raw = self.arrays.get("json")
        if raw is None:
            raise ProtocolError("json", f"{TYPE_NAMES.get(self.type, self.type)} carries no JSON payload")
        if raw.nbytes > MAX_JSON_BYTES:
            raise ProtocolError("too_large", f"JSON payload of {raw.nbytes} bytes > {MAX_JSON_BYTES}")
        try:
            obj = json.loads(bytes(raw).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # RecursionError: absurd nesting
            raise ProtocolError("json", f"bad JSON payload: {str(exc)[:120]}") from None
        if not isinstance(obj, dict):
            raise ProtocolError("json", f"the payload must be a JSON object, got {_json_type(obj)}")
        for name, (kind, required) in JSON_SCHEMAS.get(self.type, {}).items():
            if name not in obj:
                if required:
                    raise ProtocolError("field", f"{TYPE_NAMES[self.type]} needs field {name!r} ({kind.__name__})")
                continue
            value = obj[name]
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise ProtocolError("field", f"{TYPE_NAMES[self.type]} field {name!r} must be {_JSON_NAMES[kind]}, "
                                             f"got {_json_type(value)}")
        return obj


# JSON types as error details name them (bool first: it is an int to Python, not to JSON)
_JSON_NAMES = {bool: "true/false", int: "an integer", float: "a number", str: "a string", list: "an array",
               dict: "an object", type(None): "null"}

# Typed fields of the JSON payloads: name -> (Python type, required). Unknown fields are
# ignored (a newer peer may add some); a known field of the wrong type is an error.
JSON_SCHEMAS: dict[int, dict[str, tuple[type, bool]]] = {
    HELLO: {"protocol": (int, True), "name": (str, False), "robot": (str, False), "sensors": (list, False)},
    CONFIG: {"protocol": (int, True), "robot": (str, True), "nq": (int, True), "nv": (int, True),
             "nu": (int, True), "nc": (int, True), "q_names": (list, True), "u_names": (list, True),
             "q_index": (list, True), "v_index": (list, True), "mode": (str, True),
             "floating_base": (bool, True), "force_columns": (list, True), "quaternion_order": (str, False),
             "base_velocity_frame": (str, False), "sensors": (str, False)},
    ERROR: {"reason": (str, True), "detail": (str, False)},
    BYE: {"reason": (str, True)},
}


def _json_type(value) -> str:
    """A short description of a decoded JSON value for error details: its JSON type and a prefix."""
    text = repr(value)
    return f"{_JSON_NAMES.get(type(value), type(value).__name__)} {text[:40]}{'...' if len(text) > 40 else ''}"


def encode(msg_type: int, seq: int, t: float, arrays: list[np.ndarray], *, wall_ns: int | None = None,
           dims: Dims | None = None) -> list:
    """Frames of a message: [header bytes, array buffers...] (arrays must follow the schema).
    With `dims`, a schema without free dimensions is checked exactly (dtype and shape of every
    array, ValueError naming the field), its descriptors come from a cache, and every frame is
    bytes."""
    head = FIXED.pack(MAGIC, VERSION, msg_type, seq & 0xFFFFFFFF, float(t),
                      time.monotonic_ns() if wall_ns is None else wall_ns, len(arrays))
    k = 1
    if msg_type == COMMAND and arrays and np.ndim(arrays[0]) == 2:
        k = np.shape(arrays[0])[0]
    fast = _fixed_layout(msg_type, dims, k)
    if fast is not None:
        if len(arrays) != len(fast.fields):
            raise ValueError(f"{TYPE_NAMES[msg_type]} needs {len(fast.fields)} arrays, got {len(arrays)}")
        if list(map(type, arrays)) != fast.ndarrays:  # lists, numbers, array-likes: as numpy reads them
            arrays = [np.asarray(a) for a in arrays]
        signature = list(map(_SIGNATURE, arrays))
        if signature != fast.signature:
            for (name, dtype, shape), (got_dtype, got_shape) in zip(fast.fields, signature):
                if got_dtype != dtype or got_shape != shape:
                    raise ValueError(f"{name}: {got_dtype} {got_shape}, the schema needs {dtype} {shape}")
        # C order; pyzmq sends bytes faster than other buffers
        return [head + fast.desc, *map(np.ndarray.tobytes, arrays)]
    parts = [head]
    frames = []
    for fid, arr in enumerate(arrays):
        a = np.ascontiguousarray(arr, dtype=np.uint8 if np.asarray(arr).dtype == np.bool_ else None)
        code = DTYPE_CODES.get(a.dtype)
        if code is None or a.ndim > 2:
            raise ValueError(f"array {fid}: dtype {a.dtype} / ndim {a.ndim} cannot be sent (f8, u1, i8; ndim <= 2)")
        dims2 = a.shape + (0,) * (2 - a.ndim)
        parts.append(DESC.pack(fid, code, a.ndim, dims2[0], dims2[1], 0))
        frames.append(a)
    return [b"".join(parts), *frames]


def check_command_values(arrays: dict) -> None:
    """Raise ProtocolError("value") unless the COMMAND's values are within COMMAND_VALUE_LIMIT
    and its gains kp, kd are >= 0, and ProtocolError("non_finite") for NaN or inf (which
    `decode` has already refused). In plain Python, a few numbers are cheapest to check joined:
    one exact sum for finiteness, one sort each for the three value fields and the two gains;
    only a COMMAND that fails looks field by field for the error's detail."""
    limit = COMMAND_VALUE_LIMIT
    if "t_offset" in arrays:
        _check_offsets(arrays["t_offset"].tolist())
    values = arrays["tau_ff"].ravel().tolist() + arrays["q_des"].ravel().tolist() + arrays["v_des"].ravel().tolist()
    gains = arrays["kp"].tolist() + arrays["kd"].tolist()
    values.sort()
    gains.sort()
    try:
        finite = math.isfinite(math.fsum(values) + math.fsum(gains))
    except (OverflowError, ValueError):  # 1e308 + 1e308, or -inf + inf
        finite = False
    if finite and \
            (not values or (-limit <= values[0] and values[-1] <= limit)) and \
            (not gains or (0 <= gains[0] and gains[-1] <= limit)):
        return
    for name in ("tau_ff", "q_des", "v_des", "kp", "kd"):
        field = arrays[name].ravel().tolist()
        if not field:
            continue
        if not all(map(math.isfinite, field)):  # arrays that did not come from decode
            raise ProtocolError("non_finite", f"{name} contains NaN or inf")
        lo, hi = min(field), max(field)
        if name in ("kp", "kd") and lo < 0:
            raise ProtocolError("value", f"{name} has {lo}: gains must be >= 0")
        if hi > limit or lo < -limit:
            raise ProtocolError("value", f"{name} has {hi if hi > limit else lo}: |values| must be <= {limit:g}")


def check_command(msg: Message) -> None:
    """`check_command_values` of a decoded COMMAND. A message from the fast path carries its
    numbers, already known finite, as one tuple (`Message.numbers`): the bounds are then read off
    two sorted slices of it (sorting floats beats min and max in Python), and only a COMMAND
    that breaks them is looked at field by field."""
    numbers = msg.numbers
    if numbers is not None:
        k, n = msg.arrays["tau_ff"].shape
        if not n:
            _check_offsets(msg.arrays["t_offset"].tolist())
            return
        kn = 3 * k * n
        values, gains, limit = sorted(numbers[:kn]), sorted(numbers[kn:kn + 2 * n]), COMMAND_VALUE_LIMIT
        if -limit <= values[0] and values[-1] <= limit and 0 <= gains[0] and gains[-1] <= limit:
            _check_offsets(numbers[kn + 2 * n + 1: kn + 2 * n + 1 + k])
            return
    check_command_values(msg.arrays)


def _check_offsets(t_offset) -> None:
    """Raise ProtocolError("value") unless a COMMAND's setpoint times (s after its STATE) start at
    0, increase strictly and end by MAX_PLAN_S."""
    if t_offset[0] != 0.0 or t_offset[-1] > MAX_PLAN_S or any(b <= a for a, b in zip(t_offset, t_offset[1:])):
        shown = [round(x, 6) for x in t_offset[:8]]
        raise ProtocolError("value", f"t_offset {shown}{'...' if len(t_offset) > 8 else ''}: setpoint times must start "
                                     f"at 0, increase strictly and end by {MAX_PLAN_S} s")


def command_arrays(cmd, valid_until: int, report=None) -> list[np.ndarray]:
    """The eight arrays of a COMMAND from a `sim.protocol.JointCommand` (one setpoint) or a
    `sim.command_plan.JointPlan` (K setpoints at its t_offset): tau_ff, q_des, v_des as (K, nu)
    and kp, kd as f8 (integer gains, e.g. from a TOML file, would otherwise be rejected), the
    tick until which it is valid, the setpoint times and the report (REPORT_FIELDS; None: zeros,
    not known)."""
    f8 = np.float64
    t_offset = getattr(cmd, "t_offset", None)
    if t_offset is None:
        rows = [np.asarray(cmd.tau_ff, f8)[None, :], np.asarray(cmd.q_des, f8)[None, :],
                np.asarray(cmd.v_des, f8)[None, :]]
        t_offset = np.zeros(1)
    else:
        rows = [np.asarray(cmd.tau_ff, f8), np.asarray(cmd.q_des, f8), np.asarray(cmd.v_des, f8)]
    rep = np.zeros(len(REPORT_FIELDS), np.int64) if report is None else np.asarray(report, np.int64)
    return [*rows, np.asarray(cmd.kp, f8), np.asarray(cmd.kd, f8), np.array([valid_until], dtype=np.int64),
            np.asarray(t_offset, f8), rep]


def encode_json(msg_type: int, seq: int, t: float, payload: dict) -> list:
    """Frames of a HELLO / CONFIG / ERROR / BYE message carrying `payload` as UTF-8 JSON."""
    data = np.frombuffer(json.dumps(payload).encode("utf-8"), dtype=np.uint8)
    return encode(msg_type, seq, t, [data])


def _decode_fixed(frames: list, dims: Dims | None, expect: tuple[int, ...] | None) -> Message | None:
    """The fast path of `decode` for the usual message: a STATE or COMMAND of a fixed layout,
    every frame bytes (as recv_multipart gives them), the descriptors exactly the schema's and
    every value finite. Anything else returns None, and `decode`'s full validation then names
    the fault. The array frames are joined into one bytes object (in the layout's `order`),
    whose numbers one struct unpacks for a single finiteness check of their sum (inf and NaN
    propagate through it; finite numbers whose sum overflows go to the full validation); the
    numbers stay on the message (`Message.numbers`, for `check_command`). The arrays are
    read-only, aligned views: of arrays that `prepare_decode` made, the joined bytes copied into
    them, or else of the joined bytes themselves."""
    head = frames[0]
    if type(head) is not bytes or len(head) < FIXED.size:
        return None
    magic, version, msg_type, seq, t, wall_ns, count = FIXED.unpack_from(head)
    if magic != MAGIC or version != VERSION or (expect is not None and msg_type not in expect):
        return None
    fast = _fixed_layout(msg_type, dims, _command_k(head, len(head)) if msg_type == COMMAND else 1)
    if fast is None or count != len(fast.sizes) or len(frames) != 1 + count or head[FIXED.size:] != fast.desc:
        return None
    body = frames[1:]
    for frame in body:
        if type(frame) is not bytes:  # len() of another buffer may count items, not bytes
            return None
    if tuple(map(len, body)) != fast.sizes:
        return None
    blob = b"".join(body if fast.order is None else fast.order(body))
    numbers = fast.values.unpack(blob)
    if not math.isfinite(sum(numbers, t)):
        return None
    try:
        buffer, arrays = fast.pool.pop()
    except IndexError:
        arrays = fast.arrays_of(blob)
    else:
        buffer[:] = blob
    return Message(msg_type, seq, t, wall_ns, arrays, numbers)


def decode(frames: list, dims: Dims | None, *, expect: tuple[int, ...] | None = None) -> Message:
    """Validate and decode a multipart message into read-only arrays (views of the frames, or
    mostly of one joined copy of them on the fast path, `_decode_fixed`).

    dims: the robot dimensions (None before CONFIG is known). expect: allowed types.
    Raises ProtocolError with a reason from REASONS.
    """
    if not frames:
        raise ProtocolError("truncated", "empty message")
    msg = _decode_fixed(frames, dims, expect)
    if msg is not None:
        return msg
    sizes = [len(f) if type(f) is bytes else memoryview(f).nbytes for f in frames]  # bytes, zmq.Frame, buffers
    total = sum(sizes)
    if total > MAX_MESSAGE_BYTES:
        raise ProtocolError("too_large", f"message of {total} bytes > {MAX_MESSAGE_BYTES}")
    if len(frames) > 1 + MAX_ARRAYS:
        raise ProtocolError("frames", f"{len(frames)} frames; no message has more than {1 + MAX_ARRAYS}")
    head = frames[0] if isinstance(frames[0], bytes) else memoryview(frames[0]).cast("B")
    if sizes[0] < FIXED.size:
        raise ProtocolError("truncated", f"header has {sizes[0]} bytes, needs {FIXED.size}")
    magic, version, msg_type, seq, t, wall_ns, count = FIXED.unpack_from(head, 0)
    if magic != MAGIC:
        raise ProtocolError("magic", f"magic {bytes(magic)!r}, expected {MAGIC!r}")
    if version != VERSION:
        raise ProtocolError("version", f"protocol version {version}, this side speaks only version {VERSION}: update "
                                       f"the peer to version {VERSION} (docs/PROTOCOL.md, 'Changes from version "
                                       f"{VERSION - 1}')")
    if msg_type not in TYPE_NAMES:
        raise ProtocolError("type", f"unknown message type {msg_type}")
    if expect is not None and msg_type not in expect:
        raise ProtocolError("unexpected", f"{TYPE_NAMES[msg_type]} not expected here "
                                          f"(expected {[TYPE_NAMES[e] for e in expect]})")
    k = 1
    if msg_type == COMMAND:
        k = _command_k(head, sizes[0]) or 1  # not 2-D: the descriptor checks below name the fault
        if k > MAX_SETPOINTS:
            raise ProtocolError("shape", f"COMMAND's tau_ff must be (K, nu) with 1 <= K <= {MAX_SETPOINTS} setpoints "
                                         "(2-D even for K = 1)")
    fields = schema(msg_type, dims, k)
    if count != len(fields) or count > MAX_ARRAYS:
        raise ProtocolError("count", f"{TYPE_NAMES[msg_type]} declares {count} arrays, schema has {len(fields)}")
    if sizes[0] != FIXED.size + count * DESC.size:
        raise ProtocolError("truncated", f"header is {sizes[0]} bytes, expected {FIXED.size + count * DESC.size} "
                                         f"for {count} descriptors")
    if len(frames) != 1 + count:
        raise ProtocolError("frames", f"{len(frames) - 1} array frames, the header declares {count}")
    if not math.isfinite(t):
        raise ProtocolError("non_finite", f"sim time {t}")
    arrays = {}
    for i, (name, dtype, shape) in enumerate(fields):
        fid, code, ndim, d0, d1, reserved = DESC.unpack_from(head, FIXED.size + i * DESC.size)
        if fid != i:
            raise ProtocolError("descriptor", f"array {i} has field id {fid}")
        if ndim not in (1, 2):
            raise ProtocolError("descriptor", f"{name}: ndim {ndim}, must be 1 or 2")
        if ndim == 1 and d1 != 0:
            raise ProtocolError("descriptor", f"{name}: dim1 is {d1}, must be 0 for a 1-D array")
        if reserved != 0:
            raise ProtocolError("descriptor", f"{name}: reserved is {reserved}, must be 0")
        if code not in DTYPES or DTYPES[code] != dtype:
            raise ProtocolError("dtype", f"{name}: dtype code {code}, expected {DTYPE_CODES[dtype]} ({dtype})")
        if ndim != len(shape):
            raise ProtocolError("shape", f"{name}: ndim {ndim}, expected {len(shape)}")
        got = (d0, d1)[:ndim]
        if any(s != -1 and s != g for s, g in zip(shape, got)):
            raise ProtocolError("shape", f"{name}: shape {got}, expected {shape}")
        buf = memoryview(frames[1 + i]).cast("B")
        if buf.nbytes > MAX_FRAME_BYTES:
            raise ProtocolError("too_large", f"{name}: {buf.nbytes} bytes > {MAX_FRAME_BYTES}")
        if buf.nbytes != math.prod(got) * dtype.itemsize:
            raise ProtocolError("size", f"{name}: {buf.nbytes} bytes for shape {got} of {dtype}")
        arr = np.frombuffer(buf, dtype=dtype)
        if ndim == 2:
            arr = arr.reshape(got)
        if dtype.kind == "f" and not np.isfinite(arr).all():
            raise ProtocolError("non_finite", f"{name} contains NaN or inf")
        arrays[name] = arr
    if msg_type == PLAN:
        lengths = {name: len(arrays[name]) for name in ("t", "x", "u")}
        if len(set(lengths.values())) != 1:
            raise ProtocolError("shape", f"PLAN arrays disagree on N: {lengths}")
    return Message(msg_type, seq, t, wall_ns, arrays)
