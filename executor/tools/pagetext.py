"""A fetched body as text: HTML pages through a main-content extractor, other text as it is.

trafilatura finds the page's main content (no navigation, footer, scripts or comments) and
writes it as markdown, links made absolute against the page's URL. It is imported on the first
HTML page, not with the tools: most runs fetch nothing.
"""

from __future__ import annotations

from executor.tools.httpget import Fetched
from executor.tools.textio import looks_binary

HTML_TYPES = ("text/html", "application/xhtml+xml")
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript")


def decoded(fetched: Fetched) -> str:
    """The body decoded with the response's charset (UTF-8 when unknown or unusable)."""
    try:
        return bytes(fetched.body).decode(fetched.encoding, errors="replace")
    except LookupError:
        return bytes(fetched.body).decode("utf-8", errors="replace")


def is_textual(fetched: Fetched) -> bool:
    """Whether the content type (or, without one, the bytes) say the body is text."""
    kind = fetched.content_type
    if kind:
        return kind.startswith(TEXT_TYPES + HTML_TYPES)
    return not looks_binary(bytes(fetched.body))


def html_to_markdown(html: str, url: str | None = None) -> str:
    """The main content of an HTML page as markdown ("" when the page has none)."""
    import trafilatura

    text = trafilatura.extract(
        html,
        url=url,
        output_format="markdown",
        include_links=True,
        include_formatting=True,
        include_tables=True,
        include_comments=False,
    )
    return (text or "").strip()


def to_text(fetched: Fetched) -> str | None:
    """The body as text (markdown of the main content for HTML), or None if it is binary."""
    if not is_textual(fetched):
        return None
    text = decoded(fetched)
    if fetched.content_type in HTML_TYPES:
        return html_to_markdown(text, fetched.url)
    return text
