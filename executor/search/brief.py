"""The web_search specialised agent (SPEC §12): search, fetch the top results, keep what they say.

Deterministic and model-free, so the offline engine uses it as well: the provider is asked each
query, the hits are fetched through the guarded web_fetch path (a few, bounded), and the
passages of each page that share terms with the query are kept, quoted. Only pages fetched here
are cited, with the URL they were read from and the time they were fetched; a URL never comes
from anywhere else. With no usable source at all the tool task fails, saying what was tried.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import structlog

from executor.search.passages import best_passages
from executor.search.records import Findings, QueryOutcome, Skipped, Source
from executor.tools.base import SearchError, SearchHit, ToolLimits, WebSearchProvider
from executor.tools.httpget import FetchError, fetch
from executor.tools.netguard import HostRule
from executor.tools.pagetext import to_text

log = structlog.get_logger(__name__)
PASSAGES_PER_SOURCE = 2


class ResearchFailed(Exception):
    """No source could be used; the message says what was tried."""


def utc_now() -> str:
    """The current time, UTC, ISO 8601 to the second."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def candidates(found: list[tuple[str, list[SearchHit]]]) -> list[tuple[str, SearchHit]]:
    """Hits to fetch, each URL once, taking the queries' results in turn (pure)."""
    order: list[tuple[str, SearchHit]] = []
    seen: set[str] = set()
    depth = max((len(hits) for _, hits in found), default=0)
    for rank in range(depth):
        for query, hits in found:
            if rank < len(hits) and hits[rank].url not in seen:
                seen.add(hits[rank].url)
                order.append((query, hits[rank]))
    return order


@dataclass(frozen=True)
class WebResearch:
    """The agent, configured: a provider, how much to read, and web_fetch's allowed hosts."""

    provider: WebSearchProvider
    provider_label: str
    max_results: int = 5
    fetch_top: int = 3
    allow: tuple[HostRule, ...] = ()
    limits: ToolLimits = field(default_factory=ToolLimits)
    clock: Callable[[], str] = utc_now

    def research(self, queries: list[str]) -> Findings:
        """Search each query, fetch the top results, keep their passages; ResearchFailed if none."""
        if not queries:
            raise ResearchFailed("web search: no query could be derived from the tool task")
        searched_at = self.clock()
        outcomes, found = self._search(queries)
        sources: list[Source] = []
        skipped: list[Skipped] = []
        # A failed page costs one attempt; twice the wanted number bounds the time spent.
        for query, hit in candidates(found)[: self.fetch_top * 2]:
            if len(sources) == self.fetch_top:
                break
            source = self._read(query, hit, " ".join(queries), skipped)
            if source is not None:
                sources.append(source)
        findings = Findings(provider=self.provider_label, queries=outcomes, sources=sources,
                            skipped=skipped, searched_at=searched_at)  # fmt: skip
        log.info("web_research_done", provider=self.provider_label, queries=len(outcomes),
                 sources=len(sources), skipped=len(skipped))  # fmt: skip
        if not sources:
            raise ResearchFailed(failure_message(findings))
        return findings

    def _search(
        self, queries: list[str]
    ) -> tuple[list[QueryOutcome], list[tuple[str, list[SearchHit]]]]:
        outcomes: list[QueryOutcome] = []
        found: list[tuple[str, list[SearchHit]]] = []
        for query in queries:
            try:
                hits = self.provider.search(query, self.max_results)[: self.max_results]
            except SearchError as error:
                outcomes.append(QueryOutcome(query=query, error=str(error)))
                continue
            outcomes.append(QueryOutcome(query=query, hits=len(hits)))
            found.append((query, hits))
        return outcomes, found

    def _read(
        self, query: str, hit: SearchHit, wanted: str, skipped: list[Skipped]
    ) -> Source | None:
        limits = self.limits
        try:
            fetched = fetch(hit.url, limits.web_timeout_seconds, limits.web_max_bytes, self.allow)
        except FetchError as error:
            skipped.append(Skipped(url=hit.url, reason=str(error)))
            return None
        fetched_at = self.clock()
        if fetched.status >= 400:
            skipped.append(Skipped(url=hit.url, reason=f"HTTP {fetched.status}"))
            return None
        text = to_text(fetched)
        if text is None:
            reason = f"not text ({fetched.content_type or 'unknown type'})"
            skipped.append(Skipped(url=hit.url, reason=reason))
            return None
        # Relevance to everything the tool task searched for: a page found by one query may
        # answer another, and a query alone can be too narrow to judge it.
        passages = best_passages(text[: limits.web_max_output_chars], wanted, PASSAGES_PER_SOURCE)
        if not passages:
            reason = "no passage of the page shares a term with the queries"
            skipped.append(Skipped(url=fetched.url, reason=reason))
            return None
        return Source(title=hit.title, url=fetched.url, fetched_at=fetched_at, query=query,
                      passages=passages, published=hit.published)  # fmt: skip


def failure_message(findings: Findings) -> str:
    """Why no source could be used: every query and every page tried, with its outcome (pure)."""
    parts = [
        f"{q.query!r}: {q.error}" if q.error else f"{q.query!r}: {q.hits} results"
        for q in findings.queries
    ]
    message = f"web search through {findings.provider} found no usable source; searched "
    message += "; ".join(parts)
    if findings.skipped:
        message += "; fetched " + "; ".join(f"{s.url}: {s.reason}" for s in findings.skipped)
    elif not any(q.hits for q in findings.queries):
        message += "; nothing to fetch"
    return message
