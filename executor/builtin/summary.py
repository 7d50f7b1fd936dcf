"""One-line extractive summaries of files, for the knowledge catalog (at most 300 characters)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from executor.builtin.chart import svgs_in
from executor.builtin.evidence import is_builtin_document, ranked_points, read_document
from executor.builtin.sources import MAX_BYTES, decode, digest_content
from executor.builtin.text import shorten
from multiverse.unread import open_regular

LIMIT = 300
_H1 = re.compile(r"^# (.+)$", re.MULTILINE)
_HTML_H1 = re.compile(r"<h1>(.*?)</h1>", re.DOTALL)
_SVG_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)


def _line(text: str) -> str:
    return shorten(" ".join(text.split()), LIMIT)


def summarize_text(text: str, suffix: str, name: str) -> str:
    """The summary of decoded content: its title and one or two key sentences."""
    if suffix in (".html", ".htm", ".svg"):
        return _summarize_markup(text, name)
    if suffix not in (".csv", ".tsv") and is_builtin_document(text):
        title = _H1.search(text)
        points = ranked_points(read_document(text), 2)
        head = title.group(1) if title else name
        return _line(f"{head}. " + " ".join(p.text for p in points))
    digest = digest_content(name, suffix, text, Path(name).stem)[0]
    if digest.kind == "csv":
        lead = digest.points[0].text if digest.points else ""
        return _line(f"{digest.title}: {'; '.join(digest.facts)}. {lead}")
    if digest.note:
        return _line(f"{digest.title}: {digest.note}")
    sentences = " ".join(p.text for p in digest.points[:2])
    return _line(f"{digest.title}. {sentences}" if sentences else digest.title)


def _summarize_markup(text: str, name: str) -> str:
    heading = _HTML_H1.search(text)
    titles = [html.unescape(t) for svg in svgs_in(text) for t in _SVG_TITLE.findall(svg)[:1]]
    head = html.unescape(heading.group(1)) if heading else name
    if titles:
        return _line(f"{head}: {len(titles)} chart(s): " + "; ".join(titles))
    if "No figures were found" in text:
        return _line(f"{head}: no figures were found, no chart drawn")
    return _line(f"{head}: HTML document")


def summarize_path(path: Path) -> str:
    """The summary of a file on disk; binary or unreadable files are described, not read."""
    try:
        size = path.stat().st_size
        with open_regular(path) as handle:  # never blocks on a named pipe
            data = handle.read(MAX_BYTES)
    except OSError as error:
        return f"unreadable file ({error.strerror})"
    text = decode(data)
    if text is None:
        return f"binary file, {size:,} bytes"
    if not text.strip():
        return "empty file"
    return summarize_text(text, path.suffix.lower(), path.name)
