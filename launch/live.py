"""`launch run --live`: the run's channels streamed to Foxglove while it goes.

The plant server publishes every tick's record on a ZeroMQ PUB socket (bridge/server.py,
`ServerOptions.live`, an ipc:// endpoint; it sends after the tick's work and never blocks, so
a slow viewer drops records instead of delaying the loop). `LiveStream`, a thread of the
`launch run` process (neither the plant's nor the controller's), subscribes, turns each record
into the messages of run.mcap (`launch.mcap_log.tick_messages`: /tf, /joint_states, /contacts,
/timing, the same JSON schemas) and logs them through the Foxglove SDK to its WebSocket server:
open Foxglove and connect to ws://127.0.0.1:PORT (default 8765). The controller's timing is
not on the live /timing channel (it is in run.mcap after the run).
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

DEFAULT_PORT = 8765


def live_endpoint() -> str:
    """A fresh ipc:// endpoint for the plant's live records (a short path: ipc paths are limited
    to ~100 bytes, run folders can be deeper)."""
    folder = tempfile.mkdtemp(prefix="legmpc-live-")
    return f"ipc://{folder}/ticks"


class LiveStream:
    """Subscribe to the plant's live records and re-publish them to a Foxglove WebSocket server on
    `port` (module docstring). `start()`, then `stop()`; `messages` counts the ticks forwarded."""

    def __init__(self, model, endpoint: str, *, port: int = DEFAULT_PORT, host: str = "127.0.0.1") -> None:
        import foxglove
        import zmq

        from robots import numeric

        from .mcap_log import SCHEMAS

        self.model, self.endpoint = model, endpoint
        self.fns = numeric(model, verbose=False)
        self.server = foxglove.start_server(name="legmpc", host=host, port=port)
        self.channels = {topic: foxglove.Channel(topic, schema=foxglove.Schema(
                             name=name, encoding="jsonschema", data=json.dumps(schema).encode()), message_encoding="json")
                         for topic, (name, schema) in SCHEMAS.items()}
        self.sock = zmq.Context.instance().socket(zmq.SUB)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.SUBSCRIBE, b"")
        self.sock.connect(endpoint)
        self.messages = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="legmpc-live", daemon=True)
        m = model
        nf = 1 + m.n_tangent
        sizes = [5, m.nq, m.nv, m.nc * nf, m.nc, m.nu]
        self._slices = [slice(a, b) for a, b in zip(np.cumsum([0] + sizes[:-1]), np.cumsum(sizes))]
        self._width, self._nf = sum(sizes), nf

    def start(self) -> "LiveStream":
        """Begin forwarding in the background thread."""
        self._thread.start()
        return self

    def _run(self) -> None:
        from .mcap_log import tick_messages

        m = self.model
        while not self._stop.is_set():
            if not self.sock.poll(100):
                continue
            record = np.frombuffer(self.sock.recv(), dtype=np.float64)
            if record.size != self._width:
                continue  # not a record of this robot: never ours to crash on
            head, q, v, force, contact, tau = (record[s] for s in self._slices)
            tick, t, latency_us, jitter_us, missed = head
            timing = {"tick": int(tick), "latency_us": float(latency_us) if np.isfinite(latency_us) else None,
                      "jitter_us": float(jitter_us), "status": "", "missed": bool(missed),
                      "controller_tick_ms": None, "solve_ms": None}
            messages = tick_messages(m, self.fns, float(t), time.time_ns(), q, v, tau, contact > 0.5,
                                     force.reshape(m.nc, self._nf), timing)
            for topic, msg in messages.items():
                self.channels[topic].log(json.dumps(msg).encode())
            self.messages += 1

    def stop(self) -> None:
        """Stop forwarding and close the server and the socket (the endpoint's folder is removed)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.sock.close(linger=0)
        self.server.stop()
        path = Path(self.endpoint.removeprefix("ipc://"))
        for p in (path, path.parent):
            try:
                os.remove(p) if p.is_file() or p.is_socket() else os.rmdir(p)
            except OSError:
                pass
