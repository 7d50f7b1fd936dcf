"""HTML: a page's main content as markdown, through the same extractor as fetched web pages."""

from __future__ import annotations

import html
import re
from typing import BinaryIO

from executor.documents.converted import Converted, plural, unreadable
from executor.documents.decoding import decode_cut

# A page past 5 MB is a data dump or an export with inline images, not an article; its start
# holds the article if there is one.
MAX_HTML_BYTES = 5_000_000
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_-]+)""", re.IGNORECASE)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_H1 = re.compile(r"^# (.+)$", re.MULTILINE)


def read_html(handle: BinaryIO) -> Converted:
    """An HTML file's main content (no navigation, footer or scripts) as markdown."""
    data = handle.read(MAX_HTML_BYTES + 1)
    text = _decoded(data[:MAX_HTML_BYTES])
    if text is None:
        return unreadable("html", "HTML file that is not text (binary data)")
    converted = html_document(text)
    if len(data) > MAX_HTML_BYTES and converted.markdown is not None:
        note = f"first {MAX_HTML_BYTES:,} bytes of the file"
        return Converted("html", converted.markdown, note, converted.title, converted.extent)
    return converted


def html_document(text: str) -> Converted:
    """An HTML text's main content as markdown, with the page's title."""
    from executor.tools.pagetext import html_to_markdown

    markdown = html_to_markdown(text)
    heading = _H1.search(markdown)
    tag = _TITLE.search(text)
    title = heading.group(1) if heading else html.unescape(tag.group(1)) if tag else ""
    title = " ".join(title.split())
    if not markdown:
        return unreadable("html", "HTML page with no readable text")
    extent = plural(len(markdown.split()), "word")
    return Converted("html", markdown + "\n", title=title, extent=extent)


def _decoded(data: bytes) -> str | None:
    """The page's text in the charset it declares, else as any text file is decoded."""
    declared = _CHARSET.search(data[:4096])
    if declared:
        # errors="replace": the cap may have split the last character.
        try:
            return data.decode(declared.group(1).decode("ascii"), errors="replace")
        except LookupError:
            pass
    return decode_cut(data)
