"""The web_search agent and provider built from the mapping (the composition root calls this).

A provider is named in `tool_mapping.web_search.options` (options.py). A keyed provider whose
key is not in the environment is not built: web_search then writes its honest "not performed"
note saying why, with one warning in the log, never a crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import structlog

from executor.search.brief import WebResearch
from executor.search.options import (
    WEB_FETCH,
    WEB_SEARCH,
    SearchOptions,
    SearxngOptions,
    fetch_options,
    search_options,
)
from executor.search.searxng import SearxngProvider
from executor.search.tavily import TavilyProvider
from executor.tools.base import WebSearchProvider
from executor.tools.netguard import parse_rules
from multiverse.config import RuntimeMapping, ToolBinding

log = structlog.get_logger(__name__)


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
