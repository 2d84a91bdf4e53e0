"""`launch run --live` (launch/live.py): a Foxglove WebSocket client (the `websockets` package,
speaking Foxglove's protocol: advertise, subscribe, binary message data) receives the run's
channels while it goes, and the run itself completes as without it."""
from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOPICS = {"/tf", "/joint_states", "/contacts", "/timing"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _listen(port: int, enough: int, seconds: float = 60.0) -> tuple[dict, dict]:
    """Connect (retrying while the run starts), subscribe to every channel, count messages per
    topic until every topic has `enough` (or `seconds` have passed: the plant and controller
    start after the live server, a few seconds on a loaded machine)."""
    import websockets

    deadline = time.monotonic() + 60
    while True:
        try:
            ws = await websockets.connect(f"ws://127.0.0.1:{port}", subprotocols=["foxglove.sdk.v1", "foxglove.websocket.v1"])
            break
        except OSError:
            assert time.monotonic() < deadline, "the live server never came up"
            await asyncio.sleep(0.2)
    topics, counts = {}, {}
    async with ws:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not (len(counts) == len(TOPICS) and min(counts.values()) >= enough):
            try:
                msg = await asyncio.wait_for(ws.recv(), 0.5)
            except asyncio.TimeoutError:
                continue
            if isinstance(msg, str):
                body = json.loads(msg)
                if body.get("op") == "advertise":
                    new = {c["id"]: c["topic"] for c in body["channels"]}
                    topics.update(new)
                    await ws.send(json.dumps({"op": "subscribe", "subscriptions": [
                        {"id": cid, "channelId": cid} for cid in new]}))
            elif msg[0] == 1:  # message data: opcode 1, subscription id (u32), log time (u64), payload
                topic = topics[int.from_bytes(msg[1:5], "little")]
                counts[topic] = counts.get(topic, 0) + 1
                if topic == "/timing":
                    json.loads(msg[13:])  # the payload is the JSON message
    return topics, counts


def test_live_run_streams_every_channel_to_foxglove(tmp_path):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "launch", "run", "hopper-pd", "--mode", "realtime", "--duration", "4",
                             "--live", "--live-port", str(port), "--no-animation", "--json"], cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        topics, counts = asyncio.run(_listen(port, enough=50))
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-2000:]
    assert set(topics.values()) == TOPICS
    assert counts.get("/timing", 0) >= 50 and all(counts.get(t, 0) > 0 for t in TOPICS), counts
    assert "ticks streamed" in err
    summary = json.loads(out)
    assert summary["fell"] is False and summary["ticks"] == 400
