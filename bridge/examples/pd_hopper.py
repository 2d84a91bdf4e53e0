"""Stand-alone controller for the plant server, written from docs/PROTOCOL.md alone.

Uses only pyzmq and numpy (no import of this project; the wire format is in wire.py beside
it): it balances the hopper (or any robot) by holding the nominal posture from CONFIG with a
joint PD.

    python -m launch serve-plant hopper --bind tcp://127.0.0.1:5555 &
    python bridge/examples/pd_hopper.py tcp://127.0.0.1:5555 --ticks 300
"""
import argparse
import json
import sys

import numpy as np
import zmq

from wire import BYE, CONFIG, ERROR, STATE, command, hello, parse


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
    sock.send_multipart(hello("pd_hopper example"))
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
            height = cfg["q_names"].index("base_z" if cfg["floating_base"] else "z")
            print(f"connected to {cfg['robot']} ({cfg['mode']}, {cfg['control_rate_hz']} Hz)", file=sys.stderr)
        elif msg_type == STATE and joints is not None:
            q = arrays[0]
            n = len(joints)
            sock.send_multipart(command(seq, t, np.zeros(n), q_des, np.zeros(n), np.full(n, args.kp),
                                        np.full(n, args.kd)))
            sent += 1
            if sent % 100 == 0:
                print(f"t={t:.2f}s base height {q[height]:.3f} m", file=sys.stderr)
        elif msg_type == ERROR:
            print("plant says:", json.loads(bytes(arrays[0])), file=sys.stderr)
        elif msg_type == BYE:
            break
    print(f"sent {sent} commands", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
