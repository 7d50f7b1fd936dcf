"""The web_search specialised agent and its providers (SPEC §12): SearXNG and Tavily.

Passages for a research plan (issue 26): each sub-question's queries searched with the
configured provider, the top pages fetched once through the guarded fetch, and the paragraphs
that bear on the sub-question kept, each with its page, fetch time and sub-question; and the
research file that lists them for a person to read.

Search providers (SPEC §12): SearXNG (self-hosted, keyless) and Tavily, their hits, and the agent
and provider built from the mapping.

Also here: the options of the web tools in runtime-mapping.yaml, validated (SPEC §10.2, §12).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx
import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from executor.search.agent import (
    MODEL_MARK,
    PASSAGES_PER_SOURCE,
    QueryOutcome,
    Quoted,
    Record,
    ResearchFailed,
    Skipped,
    WebResearch,
    best_passages,
    candidates,
    is_summary,
    read_findings,
    render_brief,
    searched_lines,
)
from executor.tools import (
    SearchError,
    SearchHit,
    WebSearchProvider,
    check_url,
    parse_rule,
    parse_rules,
)
from multiverse.config import RuntimeMapping, ToolBinding, describe_validation_error
from multiverse.errors import ConfigError

log = structlog.get_logger(__name__)

SOURCE = "runtime-mapping.yaml tool_mapping"
WEB_SEARCH = "web_search"
WEB_FETCH = "web_fetch"
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


def _base_url(value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{value!r} is not an http(s) URL with a host")
    return value.strip().rstrip("/")


class Options(BaseModel):
    """Base of the options: strict, immutable, trimmed strings."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class ProviderOptions(Options):
    """What every provider shares: its time limit and how much a web_search tool task reads."""

    timeout_seconds: float = Field(default=15.0, gt=0, le=120)
    max_results: int = Field(default=5, ge=1, le=20)  # hits asked for per query
    fetch_top: int = Field(default=3, ge=1, le=10)  # pages fetched and cited per tool task


class SearxngOptions(ProviderOptions):
    """A self-hosted SearXNG instance (keyless; its JSON format must be enabled)."""

    provider: Literal["searxng"]
    base_url: str
    language: str | None = None
    categories: str | None = None

    _check_url = field_validator("base_url")(_base_url)


class TavilyOptions(ProviderOptions):
    """Tavily's search API; the key is read from the environment variable named here."""

    provider: Literal["tavily"]
    api_key_env: str = Field(default="TAVILY_API_KEY", pattern=_ENV_NAME)
    base_url: str | None = None  # the API's own endpoint unless given (tests, a gateway)
    search_depth: Literal["basic", "advanced"] = "basic"

    _check_url = field_validator("base_url")(_base_url)


SearchOptions = SearxngOptions | TavilyOptions
PROVIDERS: dict[str, type[SearchOptions]] = {"searxng": SearxngOptions, "tavily": TavilyOptions}


class FetchOptions(Options):
    """web_fetch's exemptions from the network guard."""

    allow_hosts: tuple[str, ...] = ()

    @field_validator("allow_hosts", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("allow_hosts")
    @classmethod
    def _hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            parse_rule(entry)
        return tuple(entry.strip() for entry in value)


def search_options(binding: ToolBinding | None) -> SearchOptions | None:
    """The provider the web_search binding configures; None when it names none."""
    if binding is None or binding.tool != WEB_SEARCH or not binding.options:
        return None
    where = f"{SOURCE}.{WEB_SEARCH}.options"
    name = binding.options.get("provider")
    known = ", ".join(PROVIDERS)
    if name is None:
        raise ConfigError(f"{where}: provider: is required (one of {known})")
    if not isinstance(name, str) or name not in PROVIDERS:
        raise ConfigError(f"{where}: provider: {name!r} is not a known provider (one of {known})")
    try:
        return PROVIDERS[name].model_validate(binding.options)
    except ValidationError as error:
        raise ConfigError(describe_validation_error(where, error)) from None


def fetch_options(binding: ToolBinding | None) -> FetchOptions:
    """The web_fetch binding's options (none when it is not mapped)."""
    if binding is None or binding.tool != WEB_FETCH:
        return FetchOptions()
    try:
        return FetchOptions.model_validate(binding.options)
    except ValidationError as error:
        raise ConfigError(
            describe_validation_error(f"{SOURCE}.{WEB_FETCH}.options", error)
        ) from None


def hits_from(results: list[Any], snippet_key: str, date_key: str) -> list[SearchHit]:
    """The results with an http(s) URL as hits, in order, each URL once (pure)."""
    hits: list[SearchHit] = []
    seen: set[str] = set()
    for item in results:
        if not isinstance(item, dict):
            continue
        url = str(item.get("url") or "").strip()
        if not url or check_url(url) is not None or url in seen:
            continue
        seen.add(url)
        date = item.get(date_key)
        hits.append(
            SearchHit(
                title=" ".join(str(item.get("title") or url).split()),
                url=url,
                snippet=" ".join(str(item.get(snippet_key) or "").split()),
                published=str(date) if date else None,
            )
        )
    return hits


USER_AGENT = "multiverse-executor/0.1"


@dataclass(frozen=True)
class SearxngProvider:
    """A SearXNG instance at `base_url`."""

    base_url: str
    timeout_seconds: float = 15.0
    language: str | None = None
    categories: str | None = None
    name: str = "searxng"

    def search(self, query: str, limit: int) -> list[SearchHit]:
        """The instance's best `limit` results for `query`; SearchError when it cannot answer."""
        params = {"q": query, "format": "json"}
        if self.language:
            params["language"] = self.language
        if self.categories:
            params["categories"] = self.categories
        where = f"SearXNG at {self.base_url}"
        try:
            response = httpx.get(
                f"{self.base_url}/search",
                params=params,
                headers={"Accept": "application/json", "User-Agent": USER_AGENT},
                timeout=self.timeout_seconds,
            )
        except httpx.HTTPError as error:
            raise SearchError(f"{where} is unreachable: {type(error).__name__}: {error}") from None
        if response.status_code == 403:
            raise SearchError(
                f"{where} refused format=json (HTTP 403): list `json` under search.formats "
                "in its settings.yml"
            )
        if response.is_error:
            raise SearchError(f"{where} answered HTTP {response.status_code}")
        return hits_from(_results(response, where), "content", "publishedDate")[:limit]


def _results(response: httpx.Response, where: str) -> list[Any]:
    try:
        data = response.json()
    except ValueError:
        raise SearchError(f"{where} did not answer JSON") from None
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        raise SearchError(f"{where} answered JSON without a results list")
    return results


@dataclass(frozen=True)
class TavilyProvider:
    """Tavily search with one API key."""

    api_key: str = field(repr=False)
    base_url: str | None = None
    timeout_seconds: float = 15.0
    search_depth: str = "basic"
    name: str = "tavily"

    def search(self, query: str, limit: int) -> list[SearchHit]:
        """Tavily's best `limit` results for `query`; SearchError when it cannot answer."""
        from tavily import TavilyClient

        try:
            with TavilyClient(api_key=self.api_key, api_base_url=self.base_url) as client:
                answer: Any = client.search(
                    query,
                    max_results=limit,
                    search_depth=self.search_depth,
                    timeout=self.timeout_seconds,
                )
        # The client raises its own classes, requests' and, on odd statuses, others: whatever
        # it raises is the provider's failure, reported as a value with its class name.
        except Exception as error:
            raise SearchError(f"Tavily search failed: {type(error).__name__}: {error}") from None
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list):
            raise SearchError("Tavily answered without a results list")
        return hits_from(results, "content", "published_date")[:limit]




@dataclass(frozen=True)
class WebSetup:
    """What the mapping gives the web tools: the agent (None: no search) and why not."""

    research: WebResearch | None = None
    unavailable: str | None = None
    allow_hosts: tuple[str, ...] = ()

    @property
    def provider(self) -> WebSearchProvider | None:
        """The search provider, for the model's own web_search tool."""
        return self.research.provider if self.research is not None else None


def fetch_allow_hosts(bindings: Mapping[str, ToolBinding]) -> tuple[str, ...]:
    """web_fetch's allowed hosts from its binding's `options.allow_hosts` (ConfigError if bad)."""
    binding = next((b for b in bindings.values() if b.tool == WEB_FETCH), None)
    return fetch_options(binding).allow_hosts


def _provider(options: SearchOptions, environ: Mapping[str, str]) -> WebSearchProvider | str:
    if isinstance(options, SearxngOptions):
        return SearxngProvider(options.base_url, options.timeout_seconds, options.language,
                               options.categories)  # fmt: skip
    key = environ.get(options.api_key_env, "").strip()
    if not key:
        return f"web_search is mapped to tavily, but {options.api_key_env} is not set"
    return TavilyProvider(key, options.base_url, options.timeout_seconds, options.search_depth)


def _label(options: SearchOptions) -> str:
    where = options.base_url if options.base_url else "its API"
    return f"{options.provider} ({where})"


def search_problem(mapping: RuntimeMapping, environ: Mapping[str, str]) -> str | None:
    """Why the web search the mapping configures cannot search here (its key unset), or None
    (it can, or none is configured); ConfigError names a wrong option."""
    options = search_options(mapping.tool_mapping.get(WEB_SEARCH))
    provider = _provider(options, environ) if options is not None else None
    return provider if isinstance(provider, str) else None


def web_setup(mapping: RuntimeMapping, environ: Mapping[str, str]) -> WebSetup:
    """The web_search agent the mapping configures; ConfigError names a wrong option."""
    allow = fetch_allow_hosts(mapping.tool_mapping)
    options = search_options(mapping.tool_mapping.get(WEB_SEARCH))
    if options is None:
        return WebSetup(allow_hosts=allow)
    provider = _provider(options, environ)
    if isinstance(provider, str):
        log.warning("web_search_unavailable", reason=provider)
        return WebSetup(unavailable=provider, allow_hosts=allow)
    research = WebResearch(
        provider=provider,
        provider_label=_label(options),
        max_results=options.max_results,
        fetch_top=options.fetch_top,
        allow=parse_rules(allow),
    )
    return WebSetup(research=research, allow_hosts=allow)




@dataclass(frozen=True)
class Asked:
    """One sub-question of a research plan and the queries searched for it."""

    question: str
    queries: tuple[str, ...]


class Passage(Record):
    """A paragraph of a page fetched in this run, kept because it bears on a sub-question."""

    number: int  # what the synthesis cites it as: [number]
    question: int  # the sub-question it was kept for (1-based)
    url: str  # the URL the page was read from (after redirects)
    title: str
    fetched_at: str  # UTC, ISO 8601
    query: str  # the query whose result led to the page
    text: str


class Gathered(Record):
    """What a research plan's searches gave: the queries, the passages kept, the pages not used."""

    provider: str
    searched_at: str
    questions: list[str]
    queries: list[QueryOutcome]
    passages: list[Passage]
    skipped: list[Skipped]

    def fetched_urls(self) -> set[str]:
        """The URLs of the pages passages were kept from."""
        return {passage.url for passage in self.passages}


@dataclass(frozen=True)
class _Page:
    url: str
    title: str
    fetched_at: str
    text: str


def _fetched(research: WebResearch, hit: SearchHit, skipped: list[Skipped]) -> _Page | None:
    """The page of a hit as text, or None (recorded in `skipped` with why)."""
    page = research.page_text(hit, skipped)
    if page is None:
        return None
    url, text, fetched_at = page
    return _Page(url, hit.title, fetched_at, text)


def gather(research: WebResearch, plan: Sequence[Asked]) -> Gathered:
    """Search every sub-question's queries, fetch up to `fetch_top` pages for each (a page found
    twice is fetched once) and keep the paragraphs that bear on the sub-question."""
    searched_at = research.clock()
    pages: dict[str, _Page | None] = {}  # by the hit's URL: None when it could not be read
    outcomes: list[QueryOutcome] = []
    passages: list[Passage] = []
    skipped: list[Skipped] = []
    kept: set[tuple[str, str]] = set()
    for index, asked in enumerate(plan, 1):
        searched, found = research.search_all(asked.queries)
        outcomes += searched
        # Relevance to the sub-question in its own words and its queries': a query alone can
        # be too narrow to judge a page by.
        wanted = " ".join([asked.question, *asked.queries])
        used = 0
        # A failed page costs one attempt; twice the wanted number bounds the time spent.
        for query, hit in candidates(found)[: research.fetch_top * 2]:
            if used == research.fetch_top:
                break
            if hit.url not in pages:
                pages[hit.url] = _fetched(research, hit, skipped)
            page = pages[hit.url]
            if page is None:
                continue
            fresh = [text for text in best_passages(page.text, wanted, PASSAGES_PER_SOURCE)
                     if (page.url, text) not in kept]  # fmt: skip
            used += bool(fresh)
            for text in fresh:
                kept.add((page.url, text))
                passages.append(Passage(number=len(passages) + 1, question=index, url=page.url,
                                        title=page.title, fetched_at=page.fetched_at,
                                        query=query, text=text))  # fmt: skip
    cited = {passage.url for passage in passages}
    unused = dict.fromkeys(p.url for p in pages.values() if p is not None and p.url not in cited)
    skipped += [Skipped(url=url, reason="no paragraph bears on any sub-question") for url in unused]
    log.info("web_research_gathered", provider=research.provider_label, questions=len(plan),
             queries=len(outcomes), passages=len(passages), skipped=len(skipped))  # fmt: skip
    return Gathered(provider=research.provider_label, searched_at=searched_at,
                    questions=[asked.question for asked in plan], queries=outcomes,
                    passages=passages, skipped=skipped)  # fmt: skip


RESEARCH_MARK = (
    "> The research record of a web_search tool task: every passage below is quoted from a page "
    "fetched in this run, with its URL and fetch time; no language model wrote or changed it."
)


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in text.splitlines() or [""])


def render_research(title: str, gathered: Gathered) -> str:
    """The research file: the sub-questions, each with the passages kept for it, then the
    queries and the pages not used (pure)."""
    lines = [RESEARCH_MARK, "", f"# Research: {title}", "",
             f"- **Provider:** {gathered.provider} · **Searched:** {gathered.searched_at}",
             f"- **Passages kept:** {len(gathered.passages)} from "
             f"{len(gathered.fetched_urls())} pages", ""]  # fmt: skip
    for index, question in enumerate(gathered.questions, 1):
        lines += [f"## {index}. {question}", ""]
        mine = [p for p in gathered.passages if p.question == index]
        if not mine:
            lines += ["No fetched page had a paragraph bearing on this sub-question.", ""]
        for passage in mine:
            lines += [
                f"### [{passage.number}] {passage.title}", "", f"- **URL:** <{passage.url}>",
                f"- **Fetched:** {passage.fetched_at}", f"- **Found by:** `{passage.query}`", "",
                _quote(passage.text), "",
            ]  # fmt: skip
    lines += searched_lines(gathered.queries, gathered.skipped)
    return "\n".join(lines).rstrip() + "\n"


__all__ = [
    "MODEL_MARK",
    "Asked",
    "Gathered",
    "Passage",
    "Quoted",
    "ResearchFailed",
    "SearxngProvider",
    "TavilyProvider",
    "WebResearch",
    "WebSetup",
    "fetch_allow_hosts",
    "gather",
    "is_summary",
    "read_findings",
    "render_brief",
    "render_research",
    "search_problem",
    "searched_lines",
    "web_setup",
]
