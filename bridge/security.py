"""Transport security: loopback by default; any other address needs CurveZMQ keys.

Key folder layout (make one with `python -m launch keys DIR`):
    DIR/server.key_secret, DIR/server.key      the plant's key pair
    DIR/clients/*.key                          public keys of controllers allowed in
    DIR/client.key_secret, DIR/client.key      a controller key pair
"""
from __future__ import annotations

import ipaddress
import threading
from pathlib import Path
from typing import Callable
from urllib.parse import urlparse

import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator


def is_loopback(endpoint: str) -> bool:
    """True for ipc:// and inproc:// endpoints and tcp:// on 127.0.0.0/8, ::1 or localhost."""
    if endpoint.startswith(("ipc://", "inproc://")):
        return True
    host = urlparse(endpoint.replace("tcp://", "tcp://", 1)).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # "*", interface names, DNS names: not provably loopback


def make_keys(folder: str | Path) -> Path:
    """Create a server and a client CurveZMQ key pair in `folder` (the client is allowed in)."""
    folder = Path(folder)
    (folder / "clients").mkdir(parents=True, exist_ok=True)
    zmq.auth.create_certificates(str(folder), "server")
    pub, _ = zmq.auth.create_certificates(str(folder), "client")
    (folder / "clients" / "client.key").write_bytes(Path(pub).read_bytes())  # admit this controller
    return folder


def check_endpoint(endpoint: str, keys) -> None:
    """Raise ValueError naming the fix for an endpoint a plant may not bind: one without a
    transport (tcp://, ipc://, inproc://), or one off loopback without CurveZMQ keys."""
    if not isinstance(endpoint, str) or not endpoint.startswith(("tcp://", "ipc://", "inproc://")):
        raise ValueError(f"endpoint {endpoint!r} names no transport: write tcp://{endpoint} (or ipc://PATH)")
    if keys is None and not is_loopback(endpoint):
        raise ValueError(
            f"refusing to bind {endpoint} without CurveZMQ keys: anyone on that network could drive "
            "the robot. Bind tcp://127.0.0.1:PORT or ipc://PATH, or pass --curve-keys DIR "
            "(create one with: python -m launch keys DIR)")


ZAP_DOMAIN = "legmpc"

# One ZAP handler serves every plant socket of the process (libzmq allows one per context);
# each socket gets a domain of its own, so CurveZMQ key folders never mix.
_auth_lock = threading.Lock()
_auth: dict = {"handler": None, "users": 0, "sockets": 0}


def secure_server(sock: zmq.Socket, endpoint: str, keys: str | Path | None) -> Callable[[], None]:
    """Configure `sock` before binding `endpoint`; return the function to call once the
    socket is closed (it stops the process's ZAP handler after its last user).

    `check_endpoint` first (a missing transport, or off loopback without keys, is refused).
    Without keys the NULL mechanism the NULL mechanism goes through ZAP
    (every address allowed). ZAP being on makes libzmq refuse ZMTP/1.0 and 2.0 peers, whose
    legacy framing would otherwise turn raw bytes from any local process into messages.
    With keys: CurveZMQ, admitting only the public keys in keys/clients."""
    check_endpoint(endpoint, keys)
    if keys is not None:
        public, secret = zmq.auth.load_certificate(str(Path(keys) / "server.key_secret"))
    with _auth_lock:
        if _auth["handler"] is None:
            _auth["handler"] = ThreadAuthenticator(zmq.Context.instance())
            _auth["handler"].start()
        _auth["users"] += 1
        _auth["sockets"] += 1
        domain = f"{ZAP_DOMAIN}-{_auth['sockets']}"
        if keys is not None:
            _auth["handler"].configure_curve(domain=domain, location=str(Path(keys) / "clients"))
    sock.zap_domain = domain.encode()
    if keys is not None:
        sock.curve_secretkey = secret
        sock.curve_publickey = public
        sock.curve_server = True
    return _release_auth


def _release_auth() -> None:
    with _auth_lock:
        _auth["users"] -= 1
        if _auth["users"] == 0 and _auth["handler"] is not None:
            _auth["handler"].stop()
            _auth["handler"] = None


def secure_client(sock: zmq.Socket, keys: str | Path | None) -> None:
    """Configure a controller socket with the client key pair and the server's public key."""
    if keys is None:
        return
    keys = Path(keys)
    public, secret = zmq.auth.load_certificate(str(keys / "client.key_secret"))
    server_public, _ = zmq.auth.load_certificate(str(keys / "server.key"))
    sock.curve_secretkey = secret
    sock.curve_publickey = public
    sock.curve_serverkey = server_public
