"""The wire format of docs/PROTOCOL.md (version 3) in numpy and struct, and the answering loop, for the
stand-alone example controllers beside it (no import of this project)."""
import json
import struct
import time

import numpy as np

VERSION = 3
FIXED = struct.Struct("<4sHHIdqI")
DESC = struct.Struct("<HBBIII")
HELLO, CONFIG, STATE, COMMAND, ERROR, BYE = 1, 2, 3, 4, 6, 7
F8, U1, I8 = 1, 2, 3
STATUS = {0: "ok", 1: "hold", 2: "damp", 3: "violation", 4: "plan"}  # STATE's status codes
REPORT_LEN = 8  # COMMAND's report: 8 int64 (zeros: "not known", docs/PROTOCOL.md)


def message(msg_type, seq, t, arrays):
    """Header frame + one frame per (dtype code, array)."""
    head = FIXED.pack(b"LMPC", VERSION, msg_type, seq, t, time.monotonic_ns(), len(arrays))
    for i, (code, a) in enumerate(arrays):
        dims = a.shape + (0,) * (2 - a.ndim)
        head += DESC.pack(i, code, a.ndim, dims[0], dims[1], 0)
    return [head] + [np.ascontiguousarray(a).tobytes() for _, a in arrays]


# STATE's arrays by CONFIG's "sensors": the true state, or the robot's own sensors (docs/PROTOCOL.md)
STATE_FIELDS = {"full": ("q", "v", "contact", "force", "status"),
                "hardware": ("q_joint", "v_joint", "tau_joint", "gyro", "accel", "foot_force", "status")}


def hello(name, robot=None, sensors=("full",)):
    """The HELLO message's frames; `sensors`: the sensor sets this controller reads."""
    payload = {"protocol": VERSION, "name": name, "sensors": list(sensors), **({"robot": robot} if robot else {})}
    return message(HELLO, 0, 0.0, [(U1, np.frombuffer(json.dumps(payload).encode(), np.uint8))])


def command(seq, t, tau_ff, q_des, v_des, kp, kd, valid_until=-1, t_offset=None):
    """A COMMAND's frames: one setpoint (tau_ff, q_des, v_des of length nu), or K setpoints
    ((K, nu) each, at t_offset (K,) seconds after the STATE, starting at 0); valid_until -1: the
    plant may hold it for its hold_ticks. The report is all zeros ("not known")."""
    rows = [np.atleast_2d(np.asarray(a, dtype="<f8")) for a in (tau_ff, q_des, v_des)]
    t_offset = np.zeros(1) if t_offset is None else np.asarray(t_offset, dtype="<f8")
    arrays = [(F8, a) for a in rows] + [(F8, np.asarray(a, dtype="<f8")) for a in (kp, kd)]
    return message(COMMAND, seq, t, arrays + [(I8, np.array([valid_until], dtype="<i8")), (F8, t_offset),
                                              (I8, np.zeros(REPORT_LEN, dtype="<i8"))])


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


def control_loop(sock, on_config, on_state, ticks=0):
    """Answer the plant until BYE (or `ticks` commands): CONFIG -> on_config(cfg dict); STATE ->
    on_state(seq, t, arrays) returns a COMMAND's frames (or None to skip); ERROR is printed.
    Returns the number of commands sent (None if the plant fell silent for 10 s)."""
    import sys

    sent = 0
    configured = False
    while ticks == 0 or sent < ticks:
        if not sock.poll(10000):
            print("plant silent for 10 s, giving up", file=sys.stderr)
            return None
        msg_type, seq, t, arrays = parse(sock.recv_multipart())
        if msg_type == CONFIG:
            on_config(json.loads(bytes(arrays[0])))
            configured = True
        elif msg_type == STATE and configured:
            frames = on_state(seq, t, arrays)
            if frames is not None:
                sock.send_multipart(frames)
                sent += 1
        elif msg_type == ERROR:
            print("plant says:", json.loads(bytes(arrays[0])), file=sys.stderr)
        elif msg_type == BYE:
            break
    print(f"sent {sent} commands", file=sys.stderr)
    return sent
