"""Bridge round-trip benchmark: quadruped-sized STATE -> COMMAND over loopback TCP.

The benchmark process plays the plant (encode STATE, wait for COMMAND, validate it); a second
process plays the controller (validate STATE, answer with a COMMAND). Both sides run the
project's full encode/decode, so the figure includes validation, not only ZeroMQ. The same
frames are then echoed through bare pyzmq by the same two processes: `bare_zmq_rtt_us` is the
machine's floor, and the ratio is the protocol's own cost.
"""
from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import zmq

from bridge import protocol as P
from robots import get_robot


ECHO = b"E"


def _dims() -> P.Dims:
    m = get_robot("quadruped")
    return P.Dims(m.nq, m.nv, m.nu, m.nc)


def peer(endpoint: str) -> None:
    """Controller side: answer every STATE with a COMMAND until BYE."""
    d = _dims()
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    sock.send_multipart(P.encode_json(P.HELLO, 0, 0.0, {"protocol": 1, "name": "bench-peer"}))
    cmd = [np.zeros(d.nu), np.zeros(d.nu), np.zeros(d.nu), np.full(d.nu, 40.0), np.ones(d.nu), np.zeros(1, np.int64)]
    while True:
        frames = sock.recv_multipart()
        if frames[0] == ECHO:  # the bare-ZeroMQ reference: echo the frames, no protocol work
            sock.send_multipart(frames)
            continue
        msg = P.decode(frames, d)
        if msg.type == P.BYE:
            return
        sock.send_multipart(P.encode(P.COMMAND, msg.seq, msg.t, cmd))


def bench_bridge(args) -> dict:
    """RTT percentiles (us), exchanges and messages per second, bytes per exchange."""
    n = max(2000, (args.repeats or 20) * 1000)
    d = _dims()
    sock = zmq.Context.instance().socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind("tcp://127.0.0.1:*")
    endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
    proc = subprocess.Popen([sys.executable, "-m", "bench.bridge", endpoint])
    try:
        ident = sock.recv_multipart()[0]  # HELLO
        state = [np.random.default_rng(0).normal(size=d.nq), np.zeros(d.nv), np.ones(d.nc, np.uint8),
                 np.zeros((d.nc, 2))]
        frames = P.encode(P.STATE, 0, 0.0, state)
        payload = sum(len(memoryview(f).cast("B")) for f in frames)
        rtt = np.empty(n)
        for k in range(-200, n):  # 200 warm-up exchanges
            t0 = time.perf_counter()
            sock.send_multipart([ident, *P.encode(P.STATE, max(k, 0), 0.0, state)])
            reply = sock.recv_multipart()
            P.decode(reply[1:], d, expect=(P.COMMAND,))
            if k >= 0:
                rtt[k] = time.perf_counter() - t0
        cmd_bytes = sum(len(f) for f in reply[1:])
        t0 = time.perf_counter()
        for k in range(n):  # throughput: the same exchange back to back
            sock.send_multipart([ident, *P.encode(P.STATE, k, 0.0, state)])
            P.decode(sock.recv_multipart()[1:], d, expect=(P.COMMAND,))
        rate = n / (time.perf_counter() - t0)
        bare = np.empty(n)  # the same frames through bare pyzmq, echoed: the machine's floor
        raw = [ECHO, *[bytes(memoryview(f)) for f in frames]]
        for k in range(-200, n):
            t0 = time.perf_counter()
            sock.send_multipart([ident, *raw])
            sock.recv_multipart()
            if k >= 0:
                bare[k] = time.perf_counter() - t0
        sock.send_multipart([ident, *P.encode_json(P.BYE, 0, 0.0, {"reason": "bench done"})])
    finally:
        proc.wait(timeout=10)
        sock.close()
    us, bare_us = rtt * 1e6, bare * 1e6
    return {"rtt_us": {"p50": float(np.percentile(us, 50)), "p99": float(np.percentile(us, 99)),
                       "max": float(us.max())},
            "bare_zmq_rtt_us": {"p50": float(np.percentile(bare_us, 50)), "p99": float(np.percentile(bare_us, 99))},
            "ratio_p50_vs_bare_zmq": float(np.percentile(us, 50) / np.percentile(bare_us, 50)),
            "exchanges_per_s": rate, "msgs_per_s": 2 * rate, "payload_bytes": payload + cmd_bytes,
            "state_bytes": payload, "command_bytes": cmd_bytes, "exchanges": n, "transport": "tcp loopback"}


if __name__ == "__main__":
    peer(sys.argv[1])
