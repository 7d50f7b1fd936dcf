"""The network guard of web_fetch: refused addresses, explicit allows, redirects, pinning."""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from executor.tools import ToolContext, ToolRegistry
from executor.tools.web import (
    FetchError,
    HostRule,
    address_refusal,
    fetch,
    parse_rule,
    parse_rules,
)
from multiverse.home import Home

from web_servers import Reply, Seen, html_reply, redirect, serve

pytestmark = pytest.mark.usefixtures("no_proxies")  # proxies off: loopback servers

RUN = "run-20260101-000000-001"
ARTICLE = (
    "<html><head><title>Guarded</title></head><body><main><h1>Guarded page</h1>"
    "<p>The guard let this page through because the test allowed its host explicitly, and "
    "nothing else on the loopback interface.</p></main></body></html>"
)
SLOW_RELEASE = threading.Event()  # /slow answers once the test sets it (after its time limit)


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """The (host, port) of every TCP connection made meanwhile (httpx connects through
    socket.create_connection): a refusal is seen as no connection, not as a short time."""
    made: list[tuple[str, int]] = []
    connect = socket.create_connection

    def recording(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
        made.append((address[0], address[1]))
        return connect(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", recording)
    return made


@pytest.fixture
def slow_release() -> Iterator[threading.Event]:
    """The event /slow waits for; set at the end whatever happened, so its server can stop."""
    SLOW_RELEASE.clear()
    try:
        yield SLOW_RELEASE
    finally:
        SLOW_RELEASE.set()


def pages(seen: Seen) -> Reply:
    """An article, and redirects named by their path: /to?url=TARGET, /loop."""
    if seen.route == "/to":
        return redirect(seen.query["url"][0])
    if seen.route == "/loop":
        return redirect("/loop")
    if seen.route == "/slow":
        SLOW_RELEASE.wait(60)  # slower than any limit a test sets: until the test releases it
    return html_reply(ARTICLE)


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.1", "private"),
        ("fd12:3456::1", "private"),
        ("169.254.169.254", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("169.254.10.1", "link-local"),
        ("fe80::1", "link-local"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.251", "multicast"),
        ("ff02::1", "multicast"),
        ("100.64.0.1", "shared"),
        ("240.0.0.1", "reserved"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "cloud metadata"),
        ("2002:a00:1::", "private"),
        ("64:ff9b::a9fe:a9fe", "cloud metadata"),
    ],
)
def test_non_public_addresses_are_refused(address: str, kind: str) -> None:
    """Loopback, private, link-local, metadata and other non-public addresses, in any form."""
    reason = address_refusal(ipaddress.ip_address(address))
    assert reason is not None and kind in reason


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_pass(address: str) -> None:
    """A public address has no refusal."""
    assert address_refusal(ipaddress.ip_address(address)) is None


def test_allow_rules_parse_names_ports_and_ipv6() -> None:
    """allow_hosts entries are host or host:port; anything else is a ValueError."""
    assert parse_rules(["127.0.0.1:8080", "LocalHost.", "[::1]:9"]) == (
        HostRule("127.0.0.1", 8080),
        HostRule("localhost", None),
        HostRule("::1", 9),
    )
    assert HostRule("localhost", None).matches("LOCALHOST", 1234)
    assert not HostRule("127.0.0.1", 8080).matches("127.0.0.1", 8081)
    for bad in ["", "http://x/", "x:99999", "x:port", "user@x"]:
        with pytest.raises(ValueError):
            parse_rule(bad)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://10.0.0.1/", "10.0.0.1 is a private address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata"),
        ("http://[::1]:9/", "::1 is a loopback address"),
        ("http://2130706433/", "resolves to 127.0.0.1 is a loopback address"),
    ],
)
def test_fetch_refuses_before_connecting(
    url: str, reason: str, connections: list[tuple[str, int]]
) -> None:
    """Private, metadata and loopback URLs (any spelling) are refused at once, no connection."""
    with pytest.raises(FetchError, match="refused") as caught:
        fetch(url, timeout=10, max_bytes=1000)
    assert reason in str(caught.value)
    assert connections == []  # refused, not timed out connecting


def test_fetch_refuses_loopback_by_address_and_by_name() -> None:
    """127.0.0.1 and `localhost` are refused, and the server there sees no request."""
    with serve(pages) as server:
        for host in ("127.0.0.1", "localhost"):
            with pytest.raises(FetchError, match="loopback address"):
                fetch(f"http://{host}:{server.port}/", timeout=5, max_bytes=10_000)
        assert server.seen == []


def test_an_explicit_allow_reaches_only_that_host_and_port() -> None:
    """Allowing 127.0.0.1:PORT lets that server through, not another port."""
    with serve(pages) as server, serve(pages) as other:
        rules = parse_rules([server.host])
        fetched = fetch(f"{server.base_url}/", timeout=5, max_bytes=10_000, allow=rules)
        assert fetched.status == 200 and b"Guarded page" in fetched.body
        with pytest.raises(FetchError, match="loopback"):
            fetch(f"{other.base_url}/", timeout=5, max_bytes=10_000, allow=rules)
        assert other.seen == []


def test_the_connection_goes_to_the_checked_address_with_the_host_name_kept() -> None:
    """An allowed name is resolved once; the request carries the name in its Host header."""
    with serve(pages) as server:
        rules = parse_rules([f"localhost:{server.port}"])
        fetched = fetch(
            f"http://localhost:{server.port}/a", timeout=5, max_bytes=10_000, allow=rules
        )
        assert fetched.status == 200 and fetched.url == f"http://localhost:{server.port}/a"
        assert server.seen[0].headers["Host"] == f"localhost:{server.port}"


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:{other}/",
        "http://localhost:{port}/",
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/iam/",
        "http://[::ffff:127.0.0.1]:{other}/",
    ],
)
def test_a_redirect_to_a_refused_address_is_refused(
    target: str, connections: list[tuple[str, int]]
) -> None:
    """The allowed server redirects to loopback, private or metadata: refused before connecting."""
    with serve(pages) as server, serve(pages) as other:
        where = target.format(port=server.port, other=other.port)
        with pytest.raises(FetchError, match="refused"):
            fetch(
                f"{server.base_url}/to?url={where}",
                timeout=10,
                max_bytes=10_000,
                allow=parse_rules([server.host]),
            )
        assert connections == [("127.0.0.1", server.port)]  # the allowed server only
        assert [seen.route for seen in server.seen] == ["/to"]
        assert other.seen == []


def test_a_redirect_to_another_scheme_is_refused() -> None:
    """A redirect to file:// (or any non-http scheme) is a FetchError, never followed."""
    with serve(pages) as server, pytest.raises(FetchError, match="only http and https"):
        fetch(
            f"{server.base_url}/to?url=file:///etc/passwd",
            timeout=5,
            max_bytes=10_000,
            allow=parse_rules([server.host]),
        )


def test_redirects_are_bounded_and_the_time_limit_holds(slow_release: threading.Event) -> None:
    """A redirect loop stops after 5 hops; a server slower than the limit is a FetchError."""
    with serve(pages) as server:
        rules = parse_rules([server.host])
        with pytest.raises(FetchError, match="redirected more than 5 times"):
            fetch(f"{server.base_url}/loop", timeout=10, max_bytes=10_000, allow=rules)
        assert len(server.seen) == 6
        with pytest.raises(FetchError, match="Timeout"):
            fetch(f"{server.base_url}/slow", timeout=0.5, max_bytes=10_000, allow=rules)
        assert not slow_release.is_set()  # given up while the server still held its answer
        slow_release.set()


def test_the_web_fetch_tool_reports_a_refusal_as_a_value(home: Home) -> None:
    """Through the registry, a refused redirect is a failed result naming the reason."""
    with serve(pages) as server:
        context = ToolContext(home=home.root, run_id=RUN, web_allow_hosts=(server.host,))
        registry = ToolRegistry(context, ["web_fetch"])
        ok = registry.call("web_fetch", {"url": f"{server.base_url}/"})
        assert ok.ok and "Guarded page" in ok.output
        refused = registry.call(
            "web_fetch", {"url": f"{server.base_url}/to?url=http://169.254.169.254/"}
        )
        assert not refused.ok and "cloud metadata" in str(refused.error)
