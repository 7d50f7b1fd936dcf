"""Serving the web view, and who may use it.

Serving: a socket bound as asked, the URL with its token, uvicorn until Ctrl-C. Who may use it:
the token on every request, CSRF-safe answers, strict headers. The URL `multiverse ui` prints
carries a random token; the first request with it sets a cookie (HttpOnly, SameSite=Strict) that
carries it on every later request, so a request without either gets 403. An answer (a POST) must
also name the token in its form and come from the page's own origin. Every response says that
only this server's own scripts may run.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlsplit

from multiverse.home import Home

COOKIE = "multiverse_ui"
FORM_FIELD = "csrf"
# Only the server's own scripts run: a script in a rendered asset or a model's text is inert.
PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
# A file of the home shown as it is (an SVG chart, report.html): a sandbox, nothing runs.
FILE_POLICY = "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'"
HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # the token never leaves in a Referer
    (b"cache-control", b"no-store"),
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def same(given: str | None, token: str) -> bool:
    """Whether `given` is the token (in constant time)."""
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


@dataclass(frozen=True)
class Entry:
    """What a request carries that says who sent it."""

    query_token: str | None
    cookie_token: str | None

    @property
    def presented(self) -> str | None:
        """The token the request shows: the URL's, else the cookie's."""
        return self.query_token or self.cookie_token


def entry_of(scope: Scope) -> Entry:
    """The tokens of a request's URL and cookie."""
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    cookies: SimpleCookie = SimpleCookie()
    for name, value in scope.get("headers", []):
        if name == b"cookie":
            try:
                cookies.load(value.decode("latin-1"))
            except Exception:  # a malformed cookie header is no token
                continue
    morsel = cookies.get(COOKIE)
    return Entry(query.get("token", [None])[0], morsel.value if morsel else None)


def same_origin(origin: str | None, referer: str | None, host: str | None) -> bool:
    """Whether a POST comes from a page of this server (its Origin, else its Referer)."""
    if host is None:
        return False
    source = origin if origin not in (None, "") else referer
    if not source or source == "null":
        return False
    parts = urlsplit(source)
    return parts.scheme in ("http", "https") and parts.netloc == host


def answer_allowed(token: str, form_token: str | None, origin: str | None,
                   referer: str | None, host: str | None) -> bool:  # fmt: skip
    """Whether an answer may be written: the token in its form, and sent from this origin."""
    return same(form_token, token) and same_origin(origin, referer, host)


class Guard:
    """ASGI middleware: 403 without the token; the cookie set; the security headers added."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a request without the token; pass the others on with strict headers."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        entry = entry_of(scope)
        if not same(entry.presented, self.token):
            await _forbidden(send)
            return
        set_cookie = entry.cookie_token is None or not same(entry.cookie_token, self.token)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                headers += [(name, value) for name, value in HEADERS if name not in names]
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", PAGE_POLICY.encode()))
                if set_cookie:
                    cookie = f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
                    headers.append((b"set-cookie", cookie.encode()))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _forbidden(send: Send) -> None:
    body = (
        b"403: this page needs the token of the URL that `multiverse ui` printed "
        b"(open that URL again)\n"
    )
    await send({
        "type": "http.response.start",
        "status": 403,
        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()), *HEADERS],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": body})


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
