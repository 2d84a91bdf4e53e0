"""Stand-alone go1 stand controller for the plant server, from docs/PROTOCOL.md alone.

Uses only pyzmq and numpy (the wire format is in wire.py beside it). It reads the robot's
standing pose from CONFIG (q0, q_index), then moves every joint target from the joint angles
of the first STATE to the standing ones in --rise seconds (a smoothstep) and holds them with a
joint PD, the low-level command shape of commercial quadrupeds (tau_ff, q_des, v_des, kp, kd).
It prints the base height and the base quaternion (x, y, z, w) once a second.

    python -m launch serve-plant go1 --plant mujoco --bind tcp://127.0.0.1:5555 &
    python bridge/examples/go1_stand.py tcp://127.0.0.1:5555 --ticks 300
"""
import argparse
import json
import sys

import numpy as np
import zmq

from wire import BYE, CONFIG, ERROR, STATE, STATUS, command, hello, parse


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("endpoint")
    ap.add_argument("--ticks", type=int, default=0, help="stop after this many commands (0: until BYE)")
    ap.add_argument("--kp", type=float, default=100.0, help="joint stiffness, N m/rad")
    ap.add_argument("--kd", type=float, default=3.0, help="joint damping, N m s/rad")
    ap.add_argument("--rise", type=float, default=1.0, help="seconds to reach the standing pose")
    args = ap.parse_args()
    sock = zmq.Context().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.ROUTING_ID, b"go1-stand-example")
    sock.connect(args.endpoint)
    sock.send_multipart(hello("go1_stand example", robot="go1"))
    cfg = start = None
    sent = 0
    while args.ticks == 0 or sent < args.ticks:
        if not sock.poll(10000):
            print("plant silent for 10 s, giving up", file=sys.stderr)
            return 3
        msg_type, seq, t, arrays = parse(sock.recv_multipart())
        if msg_type == CONFIG:
            cfg = json.loads(bytes(arrays[0]))
            if not cfg["floating_base"]:
                print(f"{cfg['robot']} has no floating base; this example is for go1-like robots", file=sys.stderr)
                return 2
            stand = np.array(cfg["q0"])[cfg["q_index"]]
            print(f"connected to {cfg['robot']} ({cfg['mode']}, {cfg['control_rate_hz']} Hz)", file=sys.stderr)
        elif msg_type == STATE and cfg is not None:
            q, v, contact, force, status = arrays  # q = (base xyz, quaternion xyzw, joints)
            joints = q[cfg["q_index"]]
            if start is None:
                start = (t, joints.copy())
            s = min(1.0, max(0.0, (t - start[0]) / args.rise)) if args.rise > 0 else 1.0
            q_des = start[1] + s * s * (3 - 2 * s) * (stand - start[1])
            v_des = 6 * s * (1 - s) / args.rise * (stand - start[1]) if args.rise > 0 else np.zeros_like(stand)
            n = len(stand)
            sock.send_multipart(command(seq, t, np.zeros(n), q_des, v_des, np.full(n, args.kp), np.full(n, args.kd)))
            sent += 1
            if sent % 100 == 0:
                print(f"t={t:.2f}s base height {q[2]:.3f} m quaternion {np.round(q[3:7], 3)} "
                      f"feet on ground {int(contact.sum())} plant status {STATUS[int(status[0])]}", file=sys.stderr)
        elif msg_type == ERROR:
            print("plant says:", json.loads(bytes(arrays[0])), file=sys.stderr)
        elif msg_type == BYE:
            break
    print(f"sent {sent} commands", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
