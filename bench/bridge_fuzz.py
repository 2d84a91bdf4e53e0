"""Long fuzz run against a real `serve-plant` process: `python -m launch bench bridge-fuzz`.

A hostile DEALER sends `bridge.fuzz.hostile_message`s (seeded, 100,000 by default, `--repeats
N` for another count) in batches of 50, each batch closed by a probe whose ERROR marks its end.
Every ERROR reply is counted by reason on our side and compared with the plant's own counters.
Some generated HELLOs are valid, so the hostile peer is at times the controller and gets STATEs
(lockstep: the plant waits for its COMMAND). Afterwards the project's PD controller takes
over for 100 ticks, and the plant is stopped with SIGTERM.

Figures: messages sent, rejections by reason (the plant's summary), whether they match the
replies counted here, plant exits before SIGTERM (must be 0), RSS growth of the plant process
between the first 1,000 messages and the end (%), whether the valid controller's session was clean.
"""
from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import zmq

from bridge import protocol as P
from bridge.fuzz import hostile_message, is_probe_reply, probe

BATCH = 50
WARMUP_BATCHES = 20  # the RSS baseline is taken after these (1,000 messages)


def _rss_kib(pid: int) -> int:
    """Resident set size of process `pid`, KiB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def bench_bridge_fuzz(args) -> dict:
    """Fuzz a serve-plant process with hostile messages; return the figures above."""
    from bridge.client import ClientOptions, ControllerClient
    from mpc.controllers import make_controller
    from robots import get_robot

    n_messages = args.repeats or 100_000
    model = get_robot("hopper")
    dims = P.Dims.of(model)
    folder = Path(tempfile.mkdtemp(prefix="bridge-fuzz-"))
    proc = subprocess.Popen([sys.executable, "-m", "launch", "serve-plant", "hopper", "--mode", "lockstep",
                             "--bind", f"ipc://{folder}/plant", "--log-dir", str(folder / "log")],
                            stdout=subprocess.PIPE, stderr=open(folder / "plant.stderr", "w"), text=True)
    t0 = time.perf_counter()
    ready = proc.stdout.readline().strip()
    if not ready.startswith("ready "):
        raise RuntimeError(f"serve-plant did not get ready: {ready!r} (see {folder / 'plant.stderr'})")
    endpoint = ready.split(" ", 1)[1]
    print(f"[bridge-fuzz] plant ready in {time.perf_counter() - t0:.1f} s at {endpoint}", file=sys.stderr)

    rng = random.Random(20261125)
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    replies: Counter = Counter()
    sent = probes = plant_exits = 0
    rss0 = None
    t_start = time.perf_counter()
    while sent < n_messages:
        for _ in range(min(BATCH, n_messages - sent)):
            frames = hostile_message(rng, dims, seq=rng.randrange(3))
            sock.send_multipart(frames)
            sent += 1
        probes += 1
        probe_frames, magic = probe(probes)
        sock.send_multipart(probe_frames)
        while True:
            if not sock.poll(30_000):
                plant_exits += proc.poll() is not None
                raise RuntimeError(f"the plant did not answer a probe within 30 s (exit code {proc.poll()})")
            msg = P.decode(sock.recv_multipart(), dims)
            if msg.type != P.ERROR:
                continue
            if is_probe_reply(msg, magic):
                break
            replies[msg.json()["reason"]] += 1
        if probes == WARMUP_BATCHES or rss0 is None and sent >= n_messages:
            rss0 = _rss_kib(proc.pid)  # after the warm-up: allocator pools and caches filled once
        if probes % 200 == 0:
            rate = sent / (time.perf_counter() - t_start)
            print(f"[bridge-fuzz] {sent}/{n_messages} messages, {rate:.0f}/s, ETA "
                  f"{(n_messages - sent) / rate:.0f} s", file=sys.stderr)
    seconds = time.perf_counter() - t_start
    rss1 = _rss_kib(proc.pid)
    sock.close()
    plant_exits += proc.poll() is not None

    # a valid controller afterwards: its session must be clean
    client = ControllerClient(endpoint, make_controller("pd", model), ClientOptions(timeout_s=5.0))
    out: dict = {}
    th = threading.Thread(target=lambda: out.update(client.run()), daemon=True)
    th.start()
    end = time.monotonic() + 60
    while len(client.rows) < 100 and time.monotonic() < end:
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=60)
    th.join(10)
    summary = json.loads((folder / "log" / "plant_summary.json").read_text())
    rejected = dict(summary["rejected"])
    rejected["magic"] = rejected.get("magic", 0) - probes  # the probes are ours, not the fuzz's
    rejected = {k: v for k, v in sorted(rejected.items()) if v}
    return {"messages": sent, "seconds": round(seconds, 1), "messages_per_s": round(sent / seconds),
            "rejected": rejected, "rejected_total": sum(rejected.values()),
            "counted_match_replies": rejected == {k: v for k, v in sorted(replies.items()) if v},
            "internal_errors": summary["internal_errors"], "plant_exits": plant_exits,
            "plant_exit_code_after_sigterm": code, "rss_kib": [rss0, rss1],
            "rss_growth_pct": round(100.0 * (rss1 - rss0) / rss0, 2),
            "clean_session_after": bool(out and out["n_errors"] == 0 and len(client.rows) >= 100),
            "controller_ticks_after": len(client.rows), "hellos": summary["hellos"], "links": summary["links"],
            "folder": str(folder)}
