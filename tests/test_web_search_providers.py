"""The search providers against loopback servers speaking their real HTTP APIs, and the mapping."""

from __future__ import annotations

import json
from typing import Any

import pytest

from executor.search import SearxngProvider, TavilyProvider, web_setup
from executor.tools import SearchError, ToolContext, ToolRegistry
from multiverse.config.mapping import parse_runtime_mapping
from multiverse.errors import ConfigError
from multiverse.home import Home

from web_servers import (
    Reply,
    closed_port,
    searxng_api,
    searxng_result,
    serve,
    tavily_api,
    tavily_result,
)

pytestmark = pytest.mark.usefixtures("no_proxies")  # proxies off: loopback servers

KEY = "tvly-test-0123456789abcdef"
RUN = "run-20260101-000000-001"


@pytest.fixture(autouse=True)
def _no_tavily_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """No Tavily settings from outside (the proxies are off too: `no_proxies`)."""
    for name in ("TAVILY_API_KEY", "TAVILY_HTTP_PROXY", "TAVILY_HTTPS_PROXY", "TAVILY_PROJECT"):
        monkeypatch.delenv(name, raising=False)


def searxng_results(query: str) -> list[Any]:
    """Results as an instance gives them, with a duplicate and a non-web URL among them."""
    return [
        searxng_result(
            "https://example.com/market",
            f"Market {query}",
            "Market  size\ngrew.",
            "2025-03-01T00:00:00",
        ),
        searxng_result("https://example.com/market", "Duplicate", "again"),
        searxng_result("ftp://example.com/file", "Not a web page", "skip me"),
        searxng_result("https://example.org/trends", "Trends", "Recent trends."),
        searxng_result("https://example.net/third", "Third", "Third result."),
    ]


def test_searxng_speaks_its_json_api() -> None:
    """GET /search?q=…&format=json; hits keep title, URL, snippet and date, each URL once."""
    with serve(searxng_api(searxng_results)) as server:
        provider = SearxngProvider(server.base_url, language="en")
        hits = provider.search("widget market", 2)
    assert [(hit.title, hit.url) for hit in hits] == [
        ("Market widget market", "https://example.com/market"),
        ("Trends", "https://example.org/trends"),
    ]
    assert hits[0].snippet == "Market size grew." and hits[0].published == "2025-03-01T00:00:00"
    assert hits[1].published is None
    request = server.seen[0]
    assert (request.method, request.route) == ("GET", "/search")
    assert request.query == {"q": ["widget market"], "format": ["json"], "language": ["en"]}


def test_searxng_failures_are_search_errors() -> None:
    """JSON not enabled (403), a closed port and a non-JSON answer each raise SearchError."""
    forbidden = searxng_api(searxng_results, json_enabled=False)
    with serve(forbidden) as server, pytest.raises(SearchError, match=r"search\.formats"):
        SearxngProvider(server.base_url).search("q", 3)
    with pytest.raises(SearchError, match="unreachable"):
        SearxngProvider(f"http://127.0.0.1:{closed_port()}", timeout_seconds=2).search("q", 3)
    html = serve(lambda seen: Reply(200, "text/html", b"<html>not json</html>"))
    with html as server, pytest.raises(SearchError, match="did not answer JSON"):
        SearxngProvider(server.base_url).search("q", 3)


def tavily_results(query: str, limit: int) -> list[Any]:
    """Tavily results for `query`, as many as asked."""
    rows = [
        tavily_result(f"https://news.example.com/{n}", f"{query} story {n}", f"Story {n}.")
        for n in range(1, 8)
    ]
    return rows[:limit]


def test_tavily_through_its_client_speaks_the_real_api() -> None:
    """tavily-python posts /search with the Bearer key and a JSON body; hits come back."""
    with serve(tavily_api(KEY, tavily_results)) as server:
        provider = TavilyProvider(KEY, base_url=server.base_url, search_depth="basic")
        hits = provider.search("battery recycling", 3)
    assert [hit.url for hit in hits] == [f"https://news.example.com/{n}" for n in (1, 2, 3)]
    assert hits[0].title == "battery recycling story 1" and hits[0].snippet == "Story 1."
    request = server.seen[0]
    assert (request.method, request.route) == ("POST", "/search")
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    body = json.loads(request.body)
    assert body["query"] == "battery recycling" and body["max_results"] == 3
    assert body["search_depth"] == "basic"


def test_a_wrong_tavily_key_is_a_search_error_that_never_shows_the_key() -> None:
    """A 401 becomes a SearchError; neither it nor the provider's repr holds the key."""
    wrong = "tvly-wrong-key-should-not-leak"
    with serve(tavily_api(KEY, tavily_results)) as server:
        provider = TavilyProvider(wrong, base_url=server.base_url)
        with pytest.raises(SearchError, match="InvalidAPIKeyError") as caught:
            provider.search("q", 3)
    assert wrong not in str(caught.value) and wrong not in repr(provider)


def mapping(tools: str) -> Any:
    """A runtime mapping whose tool_mapping is the given YAML lines."""
    return parse_runtime_mapping(f"tool_mapping:\n{tools}", "runtime-mapping.yaml")


def test_the_mapping_chooses_the_provider() -> None:
    """searxng and tavily options build their providers; web_fetch's allow list is kept."""
    searx = web_setup(
        mapping(
            "  web_search: {tool: web_search, options: {provider: searxng, "
            "base_url: 'http://127.0.0.1:8888/', fetch_top: 2}}\n"
            "  web_fetch: {tool: web_fetch, options: {allow_hosts: ['127.0.0.1:8888']}}\n"
        ),
        {},
    )
    assert searx.research is not None and searx.research.fetch_top == 2
    assert isinstance(searx.provider, SearxngProvider)
    assert searx.provider.base_url == "http://127.0.0.1:8888"
    assert searx.allow_hosts == ("127.0.0.1:8888",)
    tavily = "  web_search: {tool: web_search, options: {provider: tavily, api_key_env: MY_KEY}}\n"
    keyed = web_setup(mapping(tavily), {"MY_KEY": KEY})
    assert isinstance(keyed.provider, TavilyProvider) and keyed.unavailable is None
    unset = web_setup(mapping(tavily), {})
    assert unset.research is None and unset.unavailable is not None
    assert "MY_KEY is not set" in unset.unavailable
    plain = web_setup(mapping("  web_search: web_search\n"), {})
    assert plain.research is None and plain.unavailable is None


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ("  web_search: {tool: web_search, options: {provider: bing}}\n",
         "tool_mapping.web_search.options: provider: 'bing' is not a known provider"),
        ("  web_search: {tool: web_search, options: {base_url: 'http://x'}}\n",
         "tool_mapping.web_search.options: provider: is required"),
        ("  web_search: {tool: web_search, options: {provider: searxng}}\n",
         "tool_mapping.web_search.options: base_url: is required"),
        ("  web_search: {tool: web_search, options: {provider: searxng, base_url: 'file:///x'}}\n",
         "tool_mapping.web_search.options: base_url: 'file:///x' is not an http(s) URL"),
        ("  web_search: {tool: web_search, options: {provider: tavily, api_key: 'k'}}\n",
         "tool_mapping.web_search.options: api_key: unknown key"),
        ("  web_fetch: {tool: web_fetch, options: {allow_hosts: ['http://x/']}}\n",
         "tool_mapping.web_fetch.options: allow_hosts: 'http://x/' is not a host or host:port"),
    ],
)  # fmt: skip
def test_a_wrong_option_is_a_config_error_naming_the_key(tools: str, message: str) -> None:
    """Each wrong web option is one clear ConfigError line naming its key."""
    with pytest.raises(ConfigError) as caught:
        web_setup(mapping(tools), {})
    assert message in str(caught.value)


def test_the_web_search_tool_reports_a_provider_failure_as_a_value(home: Home) -> None:
    """The model's web_search tool turns a provider's SearchError into a failed result."""
    with serve(searxng_api(searxng_results, json_enabled=False)) as server:
        context = ToolContext(
            home=home.root, run_id=RUN, web_search_provider=SearxngProvider(server.base_url)
        )
        result = ToolRegistry(context, ["web_search"]).call("web_search", {"query": "market"})
    assert not result.ok and "web search failed" in str(result.error)
