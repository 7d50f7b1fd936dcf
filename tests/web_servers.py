"""Loopback HTTP servers for the web tests: real sockets, answers scripted per request."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class Seen:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def query(self) -> dict[str, list[str]]:
        """The query string's parameters."""
        return parse_qs(urlsplit(self.path).query)

    @property
    def route(self) -> str:
        """The path without its query string."""
        return urlsplit(self.path).path


@dataclass(frozen=True)
class Reply:
    """What the server answers."""

    status: int = 200
    content_type: str = "text/plain; charset=utf-8"
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def json_reply(data: Any, status: int = 200) -> Reply:
    """A JSON answer."""
    return Reply(status, "application/json", json.dumps(data).encode("utf-8"))


def html_reply(html: str) -> Reply:
    """An HTML page."""
    return Reply(200, "text/html; charset=utf-8", html.encode("utf-8"))


def redirect(location: str, status: int = 302) -> Reply:
    """A redirect to `location`."""
    return Reply(status, "text/plain", b"", {"Location": location})


Responder = Callable[[Seen], Reply]


@dataclass
class Loopback:
    """A running server on 127.0.0.1 and every request it saw."""

    port: int
    seen: list[Seen] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT`."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def host(self) -> str:
        """`127.0.0.1:PORT`, as allow_hosts names it."""
        return f"127.0.0.1:{self.port}"


def _handler(respond: Responder, server: Loopback) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            seen = Seen(
                self.command, self.path, dict(self.headers.items()), self.rfile.read(length)
            )
            server.seen.append(seen)
            reply = respond(seen)
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            # The client may stop reading at its size cap.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(reply.body)

        do_GET = _answer
        do_POST = _answer

        def log_message(self, format: str, *args: object) -> None:
            """Stay quiet."""

    return Handler


@contextlib.contextmanager
def serve(respond: Responder) -> Iterator[Loopback]:
    """Run a loopback server answering with `respond` until the block ends."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    state = Loopback(port=int(httpd.server_address[1]))
    httpd.RequestHandlerClass = _handler(respond, state)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


def closed_port() -> int:
    """A loopback port nothing listens on."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def searxng_result(url: str, title: str, content: str, published: str | None = None) -> Any:
    """One entry of SearXNG's `results`, with the fields a real instance sends."""
    parts = urlsplit(url)
    return {
        "url": url,
        "title": title,
        "content": content,
        "publishedDate": published,
        "thumbnail": "",
        "engine": "duckduckgo",
        "template": "default.html",
        "parsed_url": [parts.scheme, parts.netloc, parts.path, "", parts.query, ""],
        "img_src": "",
        "priority": "",
        "engines": ["duckduckgo", "brave"],
        "positions": [1, 2],
        "score": 3.0,
        "category": "general",
    }


def searxng_api(results: Callable[[str], list[Any]], json_enabled: bool = True) -> Responder:
    """SearXNG's search API: `GET /search?q=…&format=json`, 403 while JSON is not enabled."""

    def respond(seen: Seen) -> Reply:
        if seen.method != "GET" or seen.route != "/search":
            return Reply(404, body=b"Not Found")
        if seen.query.get("format") != ["json"]:
            return html_reply("<html><body>results page</body></html>")
        if not json_enabled:
            return Reply(403, "text/html", b"<h1>403 Forbidden</h1>")
        query = seen.query.get("q", [""])[0]
        found = results(query)
        return json_reply({
            "query": query,
            "number_of_results": 0,
            "results": found,
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": [],
        })  # fmt: skip

    return respond


def tavily_api(key: str, results: Callable[[str, int], list[Any]]) -> Responder:
    """Tavily's search API: `POST /search`, `Authorization: Bearer KEY`, a JSON body."""

    def respond(seen: Seen) -> Reply:
        if seen.method != "POST" or seen.route != "/search":
            return json_reply({"detail": {"error": "Not Found"}}, 404)
        if seen.headers.get("Authorization") != f"Bearer {key}":
            return json_reply(
                {"detail": {"error": "Unauthorized: missing or invalid API key."}}, 401
            )
        body = json.loads(seen.body or b"{}")
        if not isinstance(body.get("query"), str):
            return json_reply({"detail": {"error": "query is required"}}, 400)
        found = results(body["query"], int(body.get("max_results", 5)))
        return json_reply({
            "query": body["query"],
            "follow_up_questions": None,
            "answer": None,
            "images": [],
            "results": found,
            "response_time": 0.42,
            "request_id": "9f1c2b7e-0000-4000-8000-000000000000",
        })  # fmt: skip

    return respond


def tavily_result(url: str, title: str, content: str) -> Any:
    """One entry of Tavily's `results`."""
    return {"url": url, "title": title, "content": content, "score": 0.87, "raw_content": None}
