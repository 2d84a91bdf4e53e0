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
import sys

import numpy as np
import zmq

from wire import STATUS, command, control_loop, hello


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
    setup = {}

    def on_config(cfg):
        if not cfg["floating_base"]:
            raise SystemExit(f"{cfg['robot']} has no floating base; this example is for go1-like robots")
        setup["q_index"] = cfg["q_index"]
        setup["stand"] = np.array(cfg["q0"])[cfg["q_index"]]
        print(f"connected to {cfg['robot']} ({cfg['mode']}, {cfg['control_rate_hz']} Hz)", file=sys.stderr)

    def on_state(seq, t, arrays):
        q, v, contact, force, status = arrays  # q = (base xyz, quaternion xyzw, joints)
        stand = setup["stand"]
        if "start" not in setup:
            setup["start"] = (t, q[setup["q_index"]].copy())
        t0, q0 = setup["start"]
        s = min(1.0, max(0.0, (t - t0) / args.rise)) if args.rise > 0 else 1.0
        q_des = q0 + s * s * (3 - 2 * s) * (stand - q0)
        v_des = 6 * s * (1 - s) / args.rise * (stand - q0) if args.rise > 0 else np.zeros_like(stand)
        if seq % 100 == 0:
            print(f"t={t:.2f}s base height {q[2]:.3f} m quaternion {np.round(q[3:7], 3)} "
                  f"feet on ground {int(contact.sum())} plant status {STATUS[int(status[0])]}", file=sys.stderr)
        n = len(stand)
        return command(seq, t, np.zeros(n), q_des, v_des, np.full(n, args.kp), np.full(n, args.kd))

    return 0 if control_loop(sock, on_config, on_state, args.ticks) is not None else 3


if __name__ == "__main__":
    sys.exit(main())
