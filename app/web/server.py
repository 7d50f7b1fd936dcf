"""Serving the web view: a socket bound as asked, the URL with its token, uvicorn until Ctrl-C."""

from __future__ import annotations

import ipaddress
import secrets
import socket
from collections.abc import Callable

from multiverse.home import Home


def new_token() -> str:
    """A fresh random token for the URL (never stored: each `multiverse ui` has its own)."""
    return secrets.token_urlsafe(24)


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine only (127.0.0.1, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_of(host: str, port: int, token: str) -> str:
    """The URL to open: the host (bracketed if IPv6), the port and the token."""
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = socket.gethostname()
    return f"http://{shown}:{port}/?token={token}"


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def serve(home: Home, host: str, port: int, token: str, ready: Callable[[str], None]) -> None:
    """Serve the home's web view until interrupted; `ready` is told its URL once it listens."""
    import uvicorn

    from app.web.routes import create_app

    sock = bind(host, port)
    try:
        config = uvicorn.Config(
            create_app(home, token), log_level="warning", access_log=False, lifespan="off"
        )
        server = uvicorn.Server(config)
        ready(url_of(host, sock.getsockname()[1], token))
        server.run(sockets=[sock])
    finally:
        sock.close()
