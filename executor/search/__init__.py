"""The web_search specialised agent and its providers (SPEC §12): SearXNG and Tavily."""

from __future__ import annotations

from executor.search.brief import ResearchFailed, WebResearch
from executor.search.factory import WebSetup, fetch_allow_hosts, web_setup
from executor.search.render import render_brief
from executor.search.searxng import SearxngProvider
from executor.search.tavily import TavilyProvider

__all__ = [
    "ResearchFailed",
    "SearxngProvider",
    "TavilyProvider",
    "WebResearch",
    "WebSetup",
    "fetch_allow_hosts",
    "render_brief",
    "web_setup",
]
