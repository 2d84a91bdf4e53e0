"""Bridge round-trip benchmark: quadruped-sized STATE -> COMMAND over loopback TCP.

The benchmark process plays the plant (encode STATE, wait for COMMAND, validate it, as
bridge/server.py does); a second process plays the controller (validate STATE, answer with a
COMMAND, as bridge/client.py does). Both sides run the project's full encode/decode, so the
figure includes validation, not only ZeroMQ. The reference is bare pyzmq carrying the same
bytes in the same frames both ways (the STATE's frames out, the COMMAND's frames back) between
the same two processes, with no protocol work: `bare_zmq_rtt_us` is the machine's floor, and
the ratio is the protocol's own cost. The two are measured in alternating blocks of 250
exchanges, so that a noisy neighbour hits both alike.

Measured (`python -m launch bench bridge --json`, this machine, 2 cores, 796 bytes a round
trip in 5 + 7 frames), ten runs interleaved with the protocol code of the previous release
(git worktree): p50 ratio 1.22-1.34, median 1.287 (RTT median 195 us against 148 us bare);
the previous code 1.34-1.46, median 1.376. The ratio rises as the machine gets faster (the
same overhead over a smaller bare RTT): 1.22-1.29 at ~185-220 us bare, 1.28-1.34 at ~140-150.

Where the protocol's time goes inside the round trip (per-phase timers, medians, 6000
exchanges): decode 7-10 us, encode 5-6 us per side, the COMMAND bound check 2.3-2.9 us, and
the send after that work 4-5 us slower than an immediate echo's, as ZeroMQ's I/O thread has
gone back to sleep. Code run right after a blocking receive is two to four times slower than
in a timeit loop on this machine, and numpy calls most of all (five `frombuffer` calls: 8 us
after a wake-up, 1.5 us back to back); hence `prepare_decode`, which makes the next message's
arrays while the peer works, so that decode only copies bytes into them.
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
    return P.Dims.of(m)


def _command_arrays(d: P.Dims) -> list[np.ndarray]:
    from sim.protocol import JointCommand

    return P.command_arrays(JointCommand(np.zeros(d.nu), np.zeros(d.nu), np.zeros(d.nu), np.full(d.nu, 40.0),
                                         np.ones(d.nu)), 0)


def peer(endpoint: str) -> None:
    """Controller side: answer every STATE with a COMMAND until BYE; answer a message whose header
    starts with ECHO (the reference) with the COMMAND's bytes, pre-encoded, and nothing else."""
    d = _dims()
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    sock.send_multipart(P.encode_json(P.HELLO, 0, 0.0, {"protocol": P.VERSION, "name": "bench-peer"}))
    cmd = _command_arrays(d)
    raw_reply = [bytes(memoryview(f).cast("B")) for f in P.encode(P.COMMAND, 0, 0.0, cmd, dims=d)]
    while True:
        frames = sock.recv_multipart()
        if frames[0][:1] == ECHO:  # the bare-ZeroMQ reference: the same reply bytes, no protocol work
            sock.send_multipart(raw_reply)
            continue
        msg = P.decode(frames, d)
        if msg.type == P.BYE:
            return
        sock.send_multipart(P.encode(P.COMMAND, msg.seq, msg.t, cmd, dims=d))
        P.prepare_decode(P.STATE, d)  # as bridge/client.py does after sending


def bench_bridge(args) -> dict:
    """RTT percentiles (us), exchanges and messages per second, bytes per exchange."""
    n = max(2000, (args.repeats or 20) * 1000)
    d = _dims()
    sock = zmq.Context.instance().socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind("tcp://127.0.0.1:*")
    endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
    # (-c, not -m bench.bridge: bench/__init__ imports this module first, and runpy warns)
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from bench.bridge import peer; peer(sys.argv[1])",
                             endpoint])
    try:
        ident = sock.recv_multipart()[0]  # HELLO
        state = [np.random.default_rng(0).normal(size=d.nq), np.zeros(d.nv), np.ones(d.nc, np.uint8),
                 np.zeros((d.nc, d.nf)), np.zeros(1, np.uint8)]
        frames = P.encode(P.STATE, 0, 0.0, state, dims=d)
        payload = sum(memoryview(f).nbytes for f in frames)
        raw = [bytes(memoryview(f).cast("B")) for f in frames]
        raw[0] = ECHO + raw[0][1:]  # the peer tells the reference from a STATE by its first byte
        rtt, bare = np.empty(n), np.empty(n)

        def exchange(k: int) -> float:
            t0 = time.perf_counter()
            sock.send_multipart([ident, *P.encode(P.STATE, k, 0.0, state, dims=d)])
            P.prepare_decode(P.COMMAND, d)  # as bridge/server.py does after sending, while the peer works
            reply = sock.recv_multipart()
            P.check_command(P.decode(reply[1:], d, expect=(P.COMMAND,)))
            return time.perf_counter() - t0

        def echo() -> float:
            t0 = time.perf_counter()
            sock.send_multipart([ident, *raw])
            sock.recv_multipart()
            return time.perf_counter() - t0

        for k in range(200):  # warm-up
            exchange(k), echo()
        block = 250
        for start in range(0, n, block):  # alternating blocks: the same noise for both
            for k in range(start, min(start + block, n)):
                rtt[k] = exchange(k)
            for k in range(start, min(start + block, n)):
                bare[k] = echo()
        cmd_bytes = sum(memoryview(f).nbytes for f in P.encode(P.COMMAND, 0, 0.0, _command_arrays(d), dims=d))
        t0 = time.perf_counter()
        for k in range(n):  # throughput: the same exchange back to back
            exchange(k)
        rate = n / (time.perf_counter() - t0)
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

