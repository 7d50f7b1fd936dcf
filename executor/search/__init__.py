"""The web_search specialised agent and its providers (SPEC §12): SearXNG and Tavily."""

from __future__ import annotations

from executor.search.agent import (
    MODEL_MARK,
    Quoted,
    ResearchFailed,
    WebResearch,
    is_summary,
    read_findings,
    render_brief,
    searched_lines,
)
from executor.search.gather import Asked, Gathered, Passage, gather, render_research
from executor.search.providers import (
    SearxngProvider,
    TavilyProvider,
    WebSetup,
    fetch_allow_hosts,
    search_problem,
    web_setup,
)

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
