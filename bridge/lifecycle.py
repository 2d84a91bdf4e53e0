"""Process lifecycle shared by the plant server and the controller client: stop on SIGINT/SIGTERM."""
from __future__ import annotations

import signal
import threading


def install_stop_handlers(handler) -> dict:
    """Route SIGINT and SIGTERM to `handler` (main thread only: servers and clients also run in
    threads inside tests, where Python does not allow signal handlers). Returns the old ones."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}


def restore_handlers(old: dict) -> None:
    """Put back the handlers returned by install_stop_handlers."""
    for sig, handler in old.items():
        signal.signal(sig, handler)
