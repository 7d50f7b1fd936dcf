"""Web tools (SPEC §12): web_fetch (bounded HTTP GET, HTML → markdown) and web_search."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import ClassVar
from urllib.parse import urlsplit

import httpx
from markdownify import markdownify
from pydantic import Field

from executor.tools.base import Arguments, ModelTool, ToolContext, ToolResult
from executor.tools.textio import looks_binary

USER_AGENT = "multiverse-executor/0.1"
_CHUNK = 65536
_MAX_REDIRECTS = 5
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript")


@dataclass
class Fetched:
    """The bounded body of one HTTP response (filled while it streams)."""

    url: str
    status: int
    content_type: str
    encoding: str = "utf-8"
    body: bytearray = field(default_factory=bytearray)
    truncated: bool = False


def check_url(url: str) -> str | None:
    """Why `url` may not be fetched, or None: only http and https with a host."""
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https"):
        return f"only http and https URLs are fetched, not {parts.scheme or 'a bare path'!r}"
    if not parts.hostname:
        return f"{url!r} names no host"
    return None


def fetch(url: str, timeout: float, max_bytes: int) -> Fetched:
    """GET `url`, keeping at most `max_bytes` of the body and stopping at `timeout` in total."""
    deadline = time.monotonic() + timeout
    with (
        httpx.Client(
            timeout=timeout, follow_redirects=True, max_redirects=_MAX_REDIRECTS
        ) as client,
        client.stream("GET", url, headers={"User-Agent": USER_AGENT}) as response,
    ):
        fetched = Fetched(str(response.url), response.status_code, _media_type(response))
        fetched.encoding = response.charset_encoding or "utf-8"
        if response.is_error:
            return fetched
        for chunk in response.iter_bytes(_CHUNK):
            room = max_bytes - len(fetched.body)
            fetched.body += chunk[:room]
            if len(chunk) > room or time.monotonic() > deadline:
                # Stop reading: a body past the cap or a server that drips past the deadline.
                fetched.truncated = True
                break
    return fetched


def _media_type(response: httpx.Response) -> str:
    header = str(response.headers.get("content-type", ""))
    return header.split(";")[0].strip().lower()


def to_text(fetched: Fetched) -> str | None:
    """The body as text (markdown for HTML), or None if it is binary."""
    kind = fetched.content_type
    textual = kind.startswith(_TEXT_TYPES + _HTML_TYPES)
    if not textual and (kind or looks_binary(bytes(fetched.body))):
        return None
    try:
        text = bytes(fetched.body).decode(fetched.encoding, errors="replace")
    except LookupError:
        text = bytes(fetched.body).decode("utf-8", errors="replace")
    if kind in _HTML_TYPES:
        return markdownify(text, heading_style="ATX").strip()
    return text


class WebFetchArgs(Arguments):
    """Arguments of web_fetch."""

    url: str = Field(description="An http:// or https:// URL.")


class WebFetch(ModelTool[WebFetchArgs]):
    """Fetches a web page with size and time limits; HTML comes back as markdown."""

    name: ClassVar[str] = "web_fetch"
    description: ClassVar[str] = (
        "Fetch an http(s) URL with a time limit and a size cap. HTML pages come back as "
        "markdown, other text as is; binary content is refused."
    )
    arguments_model: ClassVar[type[Arguments]] = WebFetchArgs

    def execute(self, context: ToolContext, args: WebFetchArgs) -> ToolResult:
        """Fetch the page."""
        refusal = check_url(args.url)
        if refusal is not None:
            return ToolResult.failure(refusal)
        limits = context.limits
        try:
            fetched = fetch(args.url.strip(), limits.web_timeout_seconds, limits.web_max_bytes)
        except httpx.HTTPError as error:
            reason = f"{type(error).__name__}: {error}"
            return ToolResult.failure(f"fetching {args.url} failed: {reason}")
        data = {"url": fetched.url, "status": fetched.status, "content_type": fetched.content_type}
        if fetched.status >= 400:
            return ToolResult.failure(f"{fetched.url} answered HTTP {fetched.status}", **data)
        text = to_text(fetched)
        if text is None:
            return ToolResult.failure(f"{fetched.url} is binary ({fetched.content_type})", **data)
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
        hits = provider.search(args.query, limit)[:limit]
        if not hits:
            return ToolResult.success(f"no results for {args.query!r}", hits=[])
        lines = [
            f"{number}. [{hit.title}]({hit.url})\n   {hit.snippet}".rstrip()
            for number, hit in enumerate(hits, start=1)
        ]
        return ToolResult.success("\n".join(lines), hits=[hit.model_dump() for hit in hits])
