"""`bench live-overhead`: what `launch run --live` costs the control loop.

Realtime runs of a scenario (default hopper-pd, 10 s) alternate without and with --live (a
Foxglove client connected and subscribed to every channel, in this process, so the records are
really encoded and sent); the figure is the plant's STATE -> COMMAND latency p99 of each run
(summary.json `latency_ms`), medians over the pairs, and their ratio (issue 29: <= 1.05).
"""
from __future__ import annotations

import asyncio
import json
import socket
import statistics
import sys
import tempfile
import threading
import time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _subscriber(port: int, stop: threading.Event, counts: dict) -> None:
    """A Foxglove WebSocket client subscribed to every channel until `stop` (counts messages)."""
    import websockets

    async def main() -> None:
        while not stop.is_set():
            try:
                ws = await websockets.connect(f"ws://127.0.0.1:{port}",
                                              subprotocols=["foxglove.sdk.v1", "foxglove.websocket.v1"])
                break
            except OSError:
                await asyncio.sleep(0.1)
        else:
            return
        async with ws:
            while not stop.is_set():
                try:
                    msg = await asyncio.wait_for(ws.recv(), 0.2)
                except asyncio.TimeoutError:
                    continue
                except websockets.ConnectionClosed:
                    return
                if isinstance(msg, str):
                    body = json.loads(msg)
                    if body.get("op") == "advertise":
                        await ws.send(json.dumps({"op": "subscribe", "subscriptions": [
                            {"id": c["id"], "channelId": c["id"]} for c in body["channels"]]}))
                else:
                    counts["messages"] = counts.get("messages", 0) + 1

    asyncio.run(main())


def bench_live_overhead(args) -> dict:
    """STATE -> COMMAND p99 with and without --live (module docstring)."""
    from launch.run import run
    from launch.scenario import load_scenario

    scenario = load_scenario("hopper-pd").with_overrides(mode="realtime", duration_s=10.0)
    pairs = max(2, args.repeats or 3)
    p99 = {"off": [], "live": []}
    streamed = []
    with tempfile.TemporaryDirectory() as runs:
        for k in range(pairs):
            for mode in ("off", "live"):
                port, stop, counts = _free_port(), threading.Event(), {}
                listener = None
                if mode == "live":
                    listener = threading.Thread(target=_subscriber, args=(port, stop, counts), daemon=True)
                    listener.start()
                summary = run(scenario, runs_dir=runs, progress=False, live_port=port if mode == "live" else None)
                stop.set()
                if listener is not None:
                    listener.join(timeout=5)
                    streamed.append(counts.get("messages", 0))
                p99[mode].append(summary["latency_ms"]["p99"])
            print(f"[live-overhead] pair {k + 1}/{pairs}: p99 off {p99['off'][-1]:.3f} ms, "
                  f"live {p99['live'][-1]:.3f} ms", file=sys.stderr, flush=True)
    off, live = statistics.median(p99["off"]), statistics.median(p99["live"])
    return {"scenario": scenario.name, "duration_s": scenario.duration_s, "pairs": pairs,
            "latency_p99_ms": {"off": off, "live": live, "runs_off": p99["off"], "runs_live": p99["live"]},
            "ratio_live_vs_off": round(live / off, 3), "messages_received_per_live_run": streamed}
