"""Transport security: loopback by default; any other address needs CurveZMQ keys.

Key folder layout (make one with `python -m launch keys DIR`):
    DIR/server.key_secret, DIR/server.key      the plant's key pair
    DIR/clients/*.key                          public keys of controllers allowed in
    DIR/client.key_secret, DIR/client.key      a controller key pair
"""
from __future__ import annotations

import ipaddress
from pathlib import Path
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


def secure_server(sock: zmq.Socket, endpoint: str, keys: str | Path | None) -> ThreadAuthenticator | None:
    """Configure `sock` before binding `endpoint`: refuse non-loopback without keys; with keys,
    enable CurveZMQ and admit only the public keys in keys/clients. Returns the authenticator
    (stop it when done) or None."""
    if keys is None:
        if not is_loopback(endpoint):
            raise ValueError(
                f"refusing to bind {endpoint} without CurveZMQ keys: anyone on that network could drive "
                "the robot. Bind tcp://127.0.0.1:PORT or ipc://PATH, or pass --curve-keys DIR "
                "(create one with: python -m launch keys DIR)")
        return None
    keys = Path(keys)
    public, secret = zmq.auth.load_certificate(str(keys / "server.key_secret"))
    auth = ThreadAuthenticator(zmq.Context.instance())
    auth.start()
    auth.configure_curve(domain="*", location=str(keys / "clients"))
    sock.curve_secretkey = secret
    sock.curve_publickey = public
    sock.curve_server = True
    return auth


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
