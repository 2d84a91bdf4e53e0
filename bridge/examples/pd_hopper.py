"""Stand-alone controller for the plant server, written from docs/PROTOCOL.md alone.

Uses only pyzmq and numpy (no import of this project; the wire format is in wire.py beside
it): it balances the hopper (or any robot) by holding the nominal posture from CONFIG with a
joint PD.

    python -m launch serve-plant hopper --bind tcp://127.0.0.1:5555 &
    python bridge/examples/pd_hopper.py tcp://127.0.0.1:5555 --ticks 300
"""
import argparse
import sys

import numpy as np
import zmq

from wire import command, control_loop, hello


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
    setup = {}

    def on_config(cfg):
        setup["joints"] = joints = cfg["q_index"]  # where each actuated joint sits in q
        setup["q_des"] = np.array(cfg["q0"])[joints]
        setup["height"] = cfg["q_names"].index("base_z" if cfg["floating_base"] else "z")
        print(f"connected to {cfg['robot']} ({cfg['mode']}, {cfg['control_rate_hz']} Hz)", file=sys.stderr)

    def on_state(seq, t, arrays):
        q, n = arrays[0], len(setup["joints"])
        if seq % 100 == 0:
            print(f"t={t:.2f}s base height {q[setup['height']]:.3f} m", file=sys.stderr)
        return command(seq, t, np.zeros(n), setup["q_des"], np.zeros(n), np.full(n, args.kp), np.full(n, args.kd))

    return 0 if control_loop(sock, on_config, on_state, args.ticks) is not None else 3


if __name__ == "__main__":
    sys.exit(main())
