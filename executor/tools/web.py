"""Web tools (SPEC §12): web_fetch (guarded, bounded GET; HTML → markdown) and web_search."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from executor.tools.base import Arguments, ModelTool, SearchError, ToolContext, ToolResult
from executor.tools.httpget import FetchError, check_url, fetch
from executor.tools.netguard import parse_rules
from executor.tools.pagetext import to_text


class WebFetchArgs(Arguments):
    """Arguments of web_fetch."""

    url: str = Field(description="An http:// or https:// URL.")


class WebFetch(ModelTool[WebFetchArgs]):
    """Fetches a web page with size and time limits; HTML comes back as markdown."""

    name: ClassVar[str] = "web_fetch"
    description: ClassVar[str] = (
        "Fetch an http(s) URL with a time limit and a size cap. HTML pages come back as "
        "markdown (its main content), other text as is; binary content is refused, and so "
        "are loopback, private and link-local addresses."
    )
    arguments_model: ClassVar[type[Arguments]] = WebFetchArgs

    def execute(self, context: ToolContext, args: WebFetchArgs) -> ToolResult:
        """Fetch the page."""
        refusal = check_url(args.url)
        if refusal is not None:
            return ToolResult.failure(refusal)
        limits = context.limits
        try:
            rules = parse_rules(context.web_allow_hosts)
        except ValueError as error:
            return ToolResult.failure(f"web_fetch options.allow_hosts: {error}")
        try:
            fetched = fetch(
                args.url.strip(), limits.web_timeout_seconds, limits.web_max_bytes, rules
            )
        except FetchError as error:
            return ToolResult.failure(str(error))
        data = {"url": fetched.url, "status": fetched.status, "content_type": fetched.content_type}
        if fetched.status >= 400:
            return ToolResult.failure(f"{fetched.url} answered HTTP {fetched.status}", **data)
        text = to_text(fetched)
        if text is None:
            return ToolResult.failure(f"{fetched.url} is binary ({fetched.content_type})", **data)
        if not text.strip():
            return ToolResult.failure(f"{fetched.url} has no readable main content", **data)
        truncated = fetched.truncated or len(text) > limits.web_max_output_chars
        text = text[: limits.web_max_output_chars]
        if truncated:
            text += "\n\n[truncated at the size cap]"
        return ToolResult.success(f"Source: {fetched.url}\n\n{text}", truncated=truncated, **data)


class WebSearchArgs(Arguments):
    """Arguments of web_search."""

    query: str = Field(min_length=1, description="What to search the web for.")
    limit: int = Field(default=5, ge=1, description="How many results at most.")


class WebSearch(ModelTool[WebSearchArgs]):
    """Searches the web through the configured provider."""

    name: ClassVar[str] = "web_search"
    description: ClassVar[str] = (
        "Search the web; answers a numbered list of results (title, URL, snippet). "
        "Use web_fetch to read a result."
    )
    arguments_model: ClassVar[type[Arguments]] = WebSearchArgs

    def execute(self, context: ToolContext, args: WebSearchArgs) -> ToolResult:
        """Ask the provider."""
        provider = context.web_search_provider
        if provider is None:
            return ToolResult.failure("no web_search provider is configured")
        limit = min(args.limit, context.limits.web_search_max_hits)
        try:
            hits = provider.search(args.query, limit)[:limit]
        except SearchError as error:
            return ToolResult.failure(f"web search failed: {error}")
        if not hits:
            return ToolResult.success(f"no results for {args.query!r}", hits=[])
        lines = [
            f"{number}. [{hit.title}]({hit.url})\n   {hit.snippet}".rstrip()
            for number, hit in enumerate(hits, start=1)
        ]
        return ToolResult.success("\n".join(lines), hits=[hit.model_dump() for hit in hits])
