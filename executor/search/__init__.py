"""The web_search specialised agent and its providers (SPEC §12): SearXNG and Tavily.

Passages for a research plan (issue 26): each sub-question's queries searched with the
configured provider, the top pages fetched once through the guarded fetch, and the paragraphs
that bear on the sub-question kept, each with its page, fetch time and sub-question; and the
research file that lists them for a person to read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import structlog

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
from executor.search.providers import (
    SearxngProvider,
    TavilyProvider,
    WebSetup,
    fetch_allow_hosts,
    search_problem,
    web_setup,
)
from executor.tools import SearchHit

log = structlog.get_logger(__name__)


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
