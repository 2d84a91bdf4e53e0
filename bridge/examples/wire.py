"""The wire format of docs/PROTOCOL.md (version 2) in 40 lines of numpy and struct, for the
stand-alone example controllers beside it (no import of this project)."""
import json
import struct

import numpy as np

VERSION = 2
FIXED = struct.Struct("<4sHHIdqI")
DESC = struct.Struct("<HBBIII")
HELLO, CONFIG, STATE, COMMAND, ERROR, BYE = 1, 2, 3, 4, 6, 7
F8, U1, I8 = 1, 2, 3
STATUS = {0: "ok", 1: "hold", 2: "damp", 3: "violation"}  # STATE's status codes


def message(msg_type, seq, t, arrays):
    """Header frame + one frame per (dtype code, array)."""
    head = FIXED.pack(b"LMPC", VERSION, msg_type, seq, t, 0, len(arrays))
    for i, (code, a) in enumerate(arrays):
        dims = a.shape + (0,) * (2 - a.ndim)
        head += DESC.pack(i, code, a.ndim, dims[0], dims[1], 0)
    return [head] + [np.ascontiguousarray(a).tobytes() for _, a in arrays]


def hello(name, robot=None):
    """The HELLO message's frames."""
    payload = {"protocol": VERSION, "name": name, **({"robot": robot} if robot else {})}
    return message(HELLO, 0, 0.0, [(U1, np.frombuffer(json.dumps(payload).encode(), np.uint8))])


def command(seq, t, tau_ff, q_des, v_des, kp, kd, valid_until=-1):
    """A COMMAND's frames (valid_until -1: the plant may hold it for its hold_ticks)."""
    arrays = [(F8, np.asarray(a, dtype="<f8")) for a in (tau_ff, q_des, v_des, kp, kd)]
    return message(COMMAND, seq, t, arrays + [(I8, np.array([valid_until], dtype="<i8"))])


def parse(frames):
    """(type, seq, t, [arrays]) of a message."""
    magic, version, msg_type, seq, t, _, count = FIXED.unpack_from(frames[0], 0)
    assert magic == b"LMPC" and version == VERSION, f"not protocol version {VERSION}"
    arrays = []
    for i in range(count):
        _, code, ndim, d0, d1, _ = DESC.unpack_from(frames[0], FIXED.size + i * DESC.size)
        dtype = {F8: "<f8", U1: "u1", I8: "<i8"}[code]
        arrays.append(np.frombuffer(frames[1 + i], dtype=dtype).reshape((d0, d1)[:ndim]))
    return msg_type, seq, t, arrays
