"""The web_search specialised agent (SPEC §12): search, fetch the top results, keep what they say,
and write the cited summary into the workspace.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import structlog
from pydantic import BaseModel, ConfigDict, Field
from rank_bm25 import BM25L

from executor.builtin import clean_inline, split_sentences, terms, unique
from executor.tools import (
    FetchError,
    HostRule,
    SearchError,
    SearchHit,
    ToolLimits,
    WebSearchProvider,
    fetch,
    to_text,
)
from multiverse.roles import ToolAssignment

MIN_CHARS = 40
MAX_CHARS = 600
_BLOCKS = re.compile(r"\n\s*\n")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def paragraphs(markdown: str, max_chars: int = MAX_CHARS) -> list[str]:
    """The page's prose paragraphs as plain text, long ones cut at sentence ends."""
    found: list[str] = []
    for block in _BLOCKS.split(markdown):
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines or all(line.lstrip().startswith(("#", "|", "---")) for line in lines):
            continue  # headings, tables and rules are not passages to quote
        text = clean_inline(" ".join(_LIST_MARK.sub("", line) for line in lines))
        if len(text) >= MIN_CHARS:
            found.extend(_cut(text, max_chars))
    return found


def _cut(text: str, max_chars: int) -> list[str]:
    pieces: list[str] = []
    current = ""
    for sentence in split_sentences(text):
        if current and len(current) + 1 + len(sentence) > max_chars:
            pieces.append(current)
            current = ""
        current = f"{current} {sentence}".strip()
    if current:
        pieces.append(current)
    return [piece if len(piece) <= max_chars else piece[: max_chars - 1] + "…" for piece in pieces]


def best_passages(markdown: str, query: str, limit: int = 2) -> list[str]:
    """At most `limit` paragraphs sharing a term with `query`, best first (none if none does)."""
    candidates = paragraphs(markdown)
    wanted = unique(terms(query))
    corpus = [terms(text) for text in candidates]
    if not wanted or not any(corpus) or limit < 1:
        return []
    # BM25L divides by the average length: a passage without terms gets a placeholder token.
    scores = BM25L([tokens or ["\x00"] for tokens in corpus]).get_scores(wanted)
    ranked = sorted(range(len(candidates)), key=lambda i: (-float(scores[i]), i))
    return [candidates[i] for i in ranked if float(scores[i]) > 0][:limit]


class Record(BaseModel):
    """Base of the records: strict and immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class QueryOutcome(Record):
    """One query sent to the provider and what came of it."""

    query: str
    hits: int = 0
    error: str | None = None


class Source(Record):
    """A page fetched in this run and the passages of it that are quoted."""

    title: str
    url: str  # the URL the page was read from (after redirects)
    fetched_at: str  # UTC, ISO 8601
    query: str
    passages: list[str] = Field(min_length=1)
    published: str | None = None


class Skipped(Record):
    """A result that was tried and not cited, and why."""

    url: str
    reason: str


class Findings(Record):
    """Everything a web_search tool task did: queries, cited sources, skipped results."""

    provider: str
    queries: list[QueryOutcome]
    sources: list[Source]
    skipped: list[Skipped] = Field(default_factory=list)
    searched_at: str


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
        outcomes, found = self.search_all(queries)
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

    def search_all(
        self, queries: Sequence[str]
    ) -> tuple[list[QueryOutcome], list[tuple[str, list[SearchHit]]]]:
        """Each query searched: its outcome (hits or error), and the hits of those that
        answered."""
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

    def page_text(self, hit: SearchHit, skipped: list[Skipped]) -> tuple[str, str, str] | None:
        """The page of a hit as (url, text, fetch time), through the guarded fetch and capped;
        None, recorded in `skipped` with why, when it cannot be read as text."""
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
        return fetched.url, text[: limits.web_max_output_chars], fetched_at

    def _read(
        self, query: str, hit: SearchHit, wanted: str, skipped: list[Skipped]
    ) -> Source | None:
        page = self.page_text(hit, skipped)
        if page is None:
            return None
        url, text, fetched_at = page
        # Relevance to everything the tool task searched for: a page found by one query may
        # answer another, and a query alone can be too narrow to judge it.
        passages = best_passages(text, wanted, PASSAGES_PER_SOURCE)
        if not passages:
            reason = "no passage of the page shares a term with the queries"
            skipped.append(Skipped(url=url, reason=reason))
            return None
        return Source(title=hit.title, url=url, fetched_at=fetched_at, query=query,
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


MARK = (
    "> Written by the multiverse web_search agent: every passage below is quoted from a page "
    "fetched in this run; no language model wrote or changed it."
)


# The summary a model's research wrote: its answers are the model's, its passages quoted.
MODEL_MARK = (
    "> Written by the multiverse web_search agent with a language model: the answers cite only "
    "passages quoted from pages fetched in this run, and code checked every citation."
)


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in text.splitlines() or [""])


def _source(number: int, source: Source) -> list[str]:
    lines = [
        f"### [{number}] {source.title}",
        "",
        f"- **URL:** <{source.url}>",
        f"- **Fetched:** {source.fetched_at}",
    ]
    if source.published:
        lines.append(f"- **Published (per the search provider):** {source.published}")
    lines += [f"- **Found by:** `{source.query}`", ""]
    for passage in source.passages:
        lines += [_quote(passage), ""]
    return lines


def render_brief(assignment: ToolAssignment, findings: Findings) -> str:
    """The summary: what was searched, each fetched source with its quoted passages, cited."""
    tool = assignment.tool_task
    lines = [
        MARK,
        "",
        f"# Web search: {tool.tool_task_name}",
        "",
        f"- **Run:** `{assignment.run_id}` · **Tool task:** `{tool.tool_task_id}` ({tool.timing})",
        f"- **For task:** `{assignment.task.task_id}` {assignment.task.task_name}",
        f"- **Purpose:** {' '.join(tool.tool_task_purpose.split()) or '(none given)'}",
        f"- **Provider:** {findings.provider} · **Searched:** {findings.searched_at}",
        "",
        "## Summary",
        "",
        "Extractive: the most relevant passage of each source, with its number in the list of "
        "sources below.",
        "",
        *(f"- {s.passages[0]} [{n}]" for n, s in enumerate(findings.sources, 1)),
        "",
        "## Sources",
        "",
    ]
    for number, source in enumerate(findings.sources, 1):
        lines += _source(number, source)
    lines += searched_lines(findings.queries, findings.skipped)
    return "\n".join(lines).rstrip() + "\n"


def searched_lines(queries: Sequence[QueryOutcome], skipped: Sequence[Skipped]) -> list[str]:
    """The end of a research file: every query with its outcome, and the results not used."""
    lines = ["## Queries", ""]
    for n, outcome in enumerate(queries, 1):
        result = f"failed: {outcome.error}" if outcome.error else f"{outcome.hits} results"
        lines.append(f"{n}. `{outcome.query}` — {result}")
    if skipped:
        lines += ["", "## Results not used", ""]
        lines += [f"- <{s.url}> — {s.reason}" for s in skipped]
    return lines


class Quoted(Record):
    """A passage of a summary read back: what a fetched page says, and where it is."""

    title: str
    url: str
    passage: str


_SOURCE_HEADING = re.compile(r"^### \[\d+\] (?P<title>.*)$")
_URL_LINE = re.compile(r"^- \*\*URL:\*\* <(?P<url>[^>]+)>$")


def is_summary(markdown: str) -> bool:
    """Whether a file is a summary this agent wrote (its mark opens it)."""
    return markdown.lstrip().startswith((MARK, MODEL_MARK))


def read_findings(markdown: str) -> list[Quoted]:
    """The quoted passages of a summary, each with its page: never its own bookkeeping lines
    (purpose, provider, queries, fetched, results not used)."""
    found: list[Quoted] = []
    title = url = ""
    block: list[str] = []
    inside = False

    def flush() -> None:
        if block and url:
            found.append(Quoted(title=title, url=url, passage="\n".join(block)))
        block.clear()

    for line in markdown.splitlines():
        if line.startswith("## "):
            flush()
            inside = line == "## Sources"
            continue
        heading = _SOURCE_HEADING.match(line)
        if inside and heading:
            flush()
            title, url = heading["title"], ""
        elif inside and (link := _URL_LINE.match(line)):
            url = link["url"]
        elif inside and line.startswith(">"):
            block.append(line[1:].strip())
        else:
            flush()
    flush()
    return found
