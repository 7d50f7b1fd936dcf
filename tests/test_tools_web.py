"""web_fetch against a real loopback HTTP server (allowed explicitly), and web_search."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from executor.tools import SearchHit, ToolContext, ToolLimits, ToolRegistry
from multiverse.home import Home, init_home

RUN = "run-20260101-000000-001"
PAGE = """<!doctype html><html><head><title>T</title><style>body{color:red}</style></head>
<body><nav><a href="/">Home</a> | <a href="/about">About us</a></nav><main><h1>Market 시장</h1>
<p>Revenue is <b>up</b>, see <a href="/more">more</a>.</p>
<p>The widget market grew by twelve percent in 2025, driven by demand in Europe and Asia;
analysts expect the growth to continue through 2026 as supply catches up with orders.</p>
<script>steal()</script><ul><li>one</li><li>two</li></ul></main>
<footer>Copyright 2025 Example Corp. All rights reserved.</footer></body></html>"""
ROUTES: dict[str, tuple[int, str, bytes]] = {
    "/page.html": (200, "text/html; charset=utf-8", PAGE.encode("utf-8")),
    "/plain.txt": (200, "text/plain; charset=utf-8", "plain 텍스트\n".encode()),
    "/big.txt": (200, "text/plain", b"0123456789\n" * 100_000),
    "/logo.png": (200, "image/png", b"\x89PNG\r\n\x1a\n\x00\x00binary"),
}


class Handler(BaseHTTPRequestHandler):
    """Serves ROUTES, a redirect and 404s."""

    def do_GET(self) -> None:
        """Answer one GET."""
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/page.html")
            self.end_headers()
            return
        status, kind, body = ROUTES.get(self.path, (404, "text/plain", b"not found"))
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        # The client may stop reading at its size cap.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Stay quiet."""


@pytest.fixture
def server() -> Iterator[str]:
    """A loopback HTTP server; yields its base URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    """An initialised home; proxies off so loopback is reached directly."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    home = Home(tmp_path / "home")
    init_home(home)
    return home


class ListProvider:
    """A real search provider over a fixed list of hits."""

    def __init__(self, hits: list[SearchHit]) -> None:
        self.hits = hits
        self.queries: list[tuple[str, int]] = []

    def search(self, query: str, limit: int) -> list[SearchHit]:
        """Return the first `limit` hits."""
        self.queries.append((query, limit))
        return self.hits[:limit]


def web(
    home: Home,
    limits: ToolLimits | None = None,
    provider: ListProvider | None = None,
    allow: tuple[str, ...] = (),
) -> ToolRegistry:
    """A registry with the two web tools; `allow`: hosts exempt from the network guard."""
    context = ToolContext(
        home=home.root,
        run_id=RUN,
        limits=limits or ToolLimits(),
        web_search_provider=provider,
        web_allow_hosts=allow,
    )
    return ToolRegistry(context, ["web_fetch", "web_search"])


def allowed(server: str) -> tuple[str, ...]:
    """The allow list naming the loopback test server (host:port) and nothing else."""
    return (server.removeprefix("http://"),)


def test_fetch_html_becomes_markdown(home: Home, server: str) -> None:
    """An HTML page comes back as markdown of its main content: no nav, footer, script, style."""
    result = web(home, allow=allowed(server)).call("web_fetch", {"url": f"{server}/page.html"})
    assert result.ok, result.error
    assert "# Market 시장" in result.output
    assert f"Revenue is **up**, see [more]({server}/more)." in result.output
    assert "- one\n- two" in result.output
    assert "steal()" not in result.output and "color:red" not in result.output
    assert "About us" not in result.output and "All rights reserved" not in result.output
    assert result.data["status"] == 200 and result.data["truncated"] is False


def test_fetch_follows_redirects_and_returns_text_as_is(home: Home, server: str) -> None:
    """A redirect is followed; plain text is returned unchanged."""
    registry = web(home, allow=allowed(server))
    redirected = registry.call("web_fetch", {"url": f"{server}/redirect"})
    assert redirected.ok and redirected.data["url"].endswith("/page.html")
    plain = registry.call("web_fetch", {"url": f"{server}/plain.txt"})
    assert plain.ok and plain.output.endswith("plain 텍스트\n")


def test_fetch_respects_the_size_cap(home: Home, server: str) -> None:
    """A body over the cap is cut and marked truncated."""
    result = web(home, ToolLimits(web_max_bytes=1000), allow=allowed(server)).call(
        "web_fetch", {"url": f"{server}/big.txt"}
    )
    assert result.ok and result.data["truncated"] is True
    assert result.output.count("0123456789") <= 91
    assert result.output.endswith("[truncated at the size cap]")


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "ftp://example.com/x", "javascript:alert(1)", "assets/a.md", "http://"],
)
def test_fetch_refuses_other_schemes(home: Home, url: str) -> None:
    """Only http(s) URLs with a host are fetched; the rest are error values."""
    result = web(home).call("web_fetch", {"url": url})
    assert not result.ok and result.error


def test_fetch_errors_are_values(home: Home, server: str) -> None:
    """A 404, a binary body and a closed port are failed results."""
    registry = web(home, allow=(*allowed(server), "127.0.0.1"))
    missing = registry.call("web_fetch", {"url": f"{server}/missing"})
    assert not missing.ok and "404" in str(missing.error)
    binary = registry.call("web_fetch", {"url": f"{server}/logo.png"})
    assert not binary.ok and "binary" in str(binary.error)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    closed = registry.call("web_fetch", {"url": f"http://127.0.0.1:{port}/"})
    assert not closed.ok and "failed" in str(closed.error)


def test_search_without_provider_is_an_error_value(home: Home) -> None:
    """With no provider configured, web_search says so as a value."""
    result = web(home).call("web_search", {"query": "market size"})
    assert not result.ok and result.error == "no web_search provider is configured"


def test_search_through_a_provider(home: Home) -> None:
    """web_search lists the provider's hits, numbered, within the limit."""
    hits = [
        SearchHit(title=f"Hit {i}", url=f"https://e.com/{i}", snippet=f"s{i}") for i in range(5)
    ]
    provider = ListProvider(hits)
    result = web(home, provider=provider).call("web_search", {"query": "시장 규모", "limit": 2})
    assert result.ok
    assert result.output.splitlines() == [
        "1. [Hit 0](https://e.com/0)",
        "   s0",
        "2. [Hit 1](https://e.com/1)",
        "   s1",
    ]
    assert provider.queries == [("시장 규모", 2)]
    assert len(result.data["hits"]) == 2
