"""Stand-alone go1 stand controller for the plant server, from docs/PROTOCOL.md alone.

Uses only pyzmq and numpy (the wire format is in wire.py beside it). It reads the robot's
standing pose from CONFIG (q0, q_index), then moves every joint target from the joint angles
of the first STATE to the standing ones in --rise seconds (a smoothstep) and holds them with a
joint PD, the low-level command shape of commercial quadrupeds (tau_ff, q_des, v_des, kp, kd).
It prints the base height and the base quaternion (x, y, z, w) once a second.

When the plant sends the robot's own sensors (`serve-plant --sensors hardware`: encoders, IMU,
foot forces, no base state), the joint PD needs only the encoders, and the base height and
quaternion it prints are the project's estimator's (estimation/, docs/ESTIMATION.md): the one
import of this project, in that mode only.

    python -m launch serve-plant go1 --plant mujoco --bind tcp://127.0.0.1:5555 [--sensors hardware] &
    python bridge/examples/go1_stand.py tcp://127.0.0.1:5555 --ticks 300
"""
import argparse
import sys

import numpy as np
import zmq

from wire import STATE_FIELDS, STATUS, command, control_loop, hello


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
    sock.send_multipart(hello("go1_stand example", robot="go1", sensors=("full", "hardware")))
    setup = {}

    def on_config(cfg):
        if not cfg["floating_base"]:
            raise SystemExit(f"{cfg['robot']} has no floating base; this example is for go1-like robots")
        setup["q_index"] = cfg["q_index"]
        setup["stand"] = np.array(cfg["q0"])[cfg["q_index"]]
        setup["sensors"] = cfg.get("sensors", "full")
        if setup["sensors"] == "hardware":  # no base state on the wire: the project's estimator gives it
            from estimation import LeggedEstimator
            from robots import get_robot

            setup["estimator"] = LeggedEstimator(get_robot(cfg["robot"]), period_s=1.0 / cfg["control_rate_hz"])
        print(f"connected to {cfg['robot']} ({cfg['mode']}, {cfg['control_rate_hz']} Hz)", file=sys.stderr)

    def on_state(seq, t, arrays):
        state = dict(zip(STATE_FIELDS[setup["sensors"]], arrays))
        status = state["status"]
        if "estimator" in setup:  # hardware: the estimate of q = (base xyz, quaternion xyzw, joints)
            q, _, contact = setup["estimator"].update(state)
            joints = state["q_joint"]
        else:
            q, contact = state["q"], state["contact"]
            joints = q[setup["q_index"]]
        stand = setup["stand"]
        if "start" not in setup:
            setup["start"] = (t, joints.copy())
        t0, q0 = setup["start"]
        s = min(1.0, max(0.0, (t - t0) / args.rise)) if args.rise > 0 else 1.0
        q_des = q0 + s * s * (3 - 2 * s) * (stand - q0)
        v_des = 6 * s * (1 - s) / args.rise * (stand - q0) if args.rise > 0 else np.zeros_like(stand)
        if seq % 100 == 0:
            print(f"t={t:.2f}s base height {q[2]:.3f} m quaternion {np.round(q[3:7], 3)} "
                  f"feet on ground {int(contact.sum())} plant status {STATUS[int(status[0])]}"
                  + (" (estimated)" if "estimator" in setup else ""), file=sys.stderr)
        n = len(stand)
        return command(seq, t, np.zeros(n), q_des, v_des, np.full(n, args.kp), np.full(n, args.kd))

    return 0 if control_loop(sock, on_config, on_state, args.ticks) is not None else 3


if __name__ == "__main__":
    sys.exit(main())
