"""The web_search specialised agent and its providers (SPEC §12): SearXNG and Tavily."""

from __future__ import annotations

from executor.search.agent import (
    Quoted,
    ResearchFailed,
    WebResearch,
    is_summary,
    read_findings,
    render_brief,
)
from executor.search.providers import (
    SearxngProvider,
    TavilyProvider,
    WebSetup,
    fetch_allow_hosts,
    search_problem,
    web_setup,
)

__all__ = [
    "Quoted",
    "ResearchFailed",
    "SearxngProvider",
    "TavilyProvider",
    "WebResearch",
    "WebSetup",
    "fetch_allow_hosts",
    "is_summary",
    "read_findings",
    "render_brief",
    "search_problem",
    "web_setup",
]
