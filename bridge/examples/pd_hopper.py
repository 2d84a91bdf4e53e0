"""Stand-alone controller for the plant server, written from docs/PROTOCOL.md alone.

Uses only pyzmq and numpy (no import of this project): it balances the hopper (or any robot)
by holding the nominal posture from CONFIG with a joint PD.

    python -m launch serve-plant hopper --bind tcp://127.0.0.1:5555 &
    python bridge/examples/pd_hopper.py tcp://127.0.0.1:5555 --ticks 300
"""
import argparse
import json
import struct
import sys

import numpy as np
import zmq

FIXED = struct.Struct("<4sHHIdqI")
DESC = struct.Struct("<HBBIII")
HELLO, CONFIG, STATE, COMMAND, ERROR, BYE = 1, 2, 3, 4, 6, 7
F8, U1, I8 = 1, 2, 3


def message(msg_type, seq, t, arrays):
    """Header frame + one frame per (dtype code, array)."""
    head = FIXED.pack(b"LMPC", 1, msg_type, seq, t, 0, len(arrays))
    for i, (code, a) in enumerate(arrays):
        dims = a.shape + (0,) * (2 - a.ndim)
        head += DESC.pack(i, code, a.ndim, dims[0], dims[1], 0)
    return [head] + [np.ascontiguousarray(a).tobytes() for _, a in arrays]


def parse(frames):
    """(type, seq, t, [arrays]) of a message."""
    magic, version, msg_type, seq, t, _, count = FIXED.unpack_from(frames[0], 0)
    assert magic == b"LMPC" and version == 1, "not protocol v1"
    arrays = []
    for i in range(count):
        _, code, ndim, d0, d1, _ = DESC.unpack_from(frames[0], FIXED.size + i * DESC.size)
        dtype = {F8: "<f8", U1: "u1", I8: "<i8"}[code]
        arrays.append(np.frombuffer(frames[1 + i], dtype=dtype).reshape((d0, d1)[:ndim]))
    return msg_type, seq, t, arrays


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("endpoint")
    ap.add_argument("--ticks", type=int, default=0, help="stop after this many commands (0: until BYE)")
    ap.add_argument("--kp", type=float, default=40.0)
    ap.add_argument("--kd", type=float, default=1.0)
    args = ap.parse_args()
    sock = zmq.Context().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.ROUTING_ID, b"pd-example")  # our own id: a dropped link reconnects into the session
    sock.connect(args.endpoint)
    hello = json.dumps({"protocol": 1, "name": "pd_hopper example"}).encode()
    sock.send_multipart(message(HELLO, 0, 0.0, [(U1, np.frombuffer(hello, np.uint8))]))
    joints = q_des = None
    sent = 0
    while args.ticks == 0 or sent < args.ticks:
        if not sock.poll(10000):
            print("plant silent for 10 s, giving up", file=sys.stderr)
            return 3
        msg_type, seq, t, arrays = parse(sock.recv_multipart())
        if msg_type == CONFIG:
            cfg = json.loads(bytes(arrays[0]))
            joints = cfg["q_index"]  # where each actuated joint sits in q
            q_des = np.array(cfg["q0"])[joints]
            print(f"connected to {cfg['robot']} ({cfg['mode']}, {cfg['control_rate_hz']} Hz)", file=sys.stderr)
        elif msg_type == STATE and joints is not None:
            q = arrays[0]
            n = len(joints)
            cmd = [np.zeros(n), q_des, np.zeros(n), np.full(n, args.kp), np.full(n, args.kd)]
            valid_until = np.array([-1])  # -1: the plant may hold this command for its hold_ticks
            sock.send_multipart(message(COMMAND, seq, t, [(F8, a) for a in cmd] + [(I8, valid_until)]))
            sent += 1
            if sent % 100 == 0:
                print(f"t={t:.2f}s base height {q[cfg['q_names'].index('z')]:.3f} m", file=sys.stderr)
        elif msg_type == ERROR:
            print("plant says:", json.loads(bytes(arrays[0])), file=sys.stderr)
        elif msg_type == BYE:
            break
    print(f"sent {sent} commands", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
