"""One-line extractive summaries of files, for the knowledge catalog (at most 300 characters)."""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

from executor.builtin.chart import svgs_in
from executor.builtin.digest import digest_document
from executor.builtin.evidence import Digest, is_builtin_document, ranked_points, read_document
from executor.builtin.sources import (
    MAX_BYTES,
    TABLE_SUFFIXES,
    decode,
    digest_content,
    is_chart_page,
    read_table,
)
from executor.builtin.text import shorten
from executor.documents import Converted, convert, html_document, sniff
from executor.documents.source import document_note
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
        return _summarize_html(text, suffix, name, in_run_folders=False)
    if suffix not in TABLE_SUFFIXES and is_builtin_document(text):
        title = _H1.search(text)
        points = ranked_points(read_document(text), 2)
        head = title.group(1) if title else name
        return _line(f"{head}. " + " ".join(p.text for p in points))
    digest = digest_content(name, suffix, text, Path(name).stem)[0]
    if digest.kind == "csv":
        return _table_line(digest)
    if digest.note:
        return _line(f"{digest.title}: {digest.note}")
    sentences = " ".join(p.text for p in digest.points[:2])
    return _line(f"{digest.title}. {sentences}" if sentences else digest.title)


def _table_line(digest: Digest) -> str:
    if digest.kind != "csv":  # the file could not be read as a table: say why
        return _line(digest.note)
    if digest.table is not None and not digest.table.columns:
        return "empty file"
    lead = digest.points[0].text if digest.points else ""
    shape = "; ".join(fact for fact in digest.facts if not fact.startswith("labels: "))
    return _line(f"{digest.title}: {shape}. {lead}")


def summarize_document(converted: Converted, name: str) -> str:
    """A document's summary: its kind and size, title and key sentences ("PDF, 3 pages: …"),
    or, when it cannot be read, why."""
    if converted.markdown is None:
        return _line(document_note(converted))
    digest = digest_document(name, converted, Path(name).stem)
    head = converted.label
    if converted.note:
        head += f" ({shorten(converted.note, 80)})"
    sentences = [p.text for p in digest.points[:2]]
    if converted.kind == "xlsx":  # a workbook has no prose: its sheets, then its first column
        sheets = [h.text.removeprefix("Sheet: ") for h in digest.headings if h.level == 2]
        sentences = [f"Sheets: {', '.join(sheets)}.", *sentences[:1]]
    return _line(f"{head}: {digest.title}. " + " ".join(sentences))


def _summarize_html(text: str, suffix: str, name: str, in_run_folders: bool) -> str:
    """A page by its main text; a chart page (`sources.is_chart_page`) by its charts."""
    if suffix == ".svg" or is_chart_page(text, in_run_folders):
        return _summarize_markup(text, name)
    page = html_document(text)
    if page.markdown is None and svgs_in(text):  # charts and no prose: a chart page after all
        return _summarize_markup(text, name)
    return summarize_document(page, name)


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
    suffix = path.suffix.lower()
    if suffix in TABLE_SUFFIXES:
        return _table_line(read_table(path.name, path))
    if suffix not in (".html", ".htm") and sniff(path) is not None:
        return summarize_document(convert(path), path.name)
    try:
        with open_regular(path) as handle:  # never blocks on a named pipe
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(MAX_BYTES)
    except OSError as error:
        return f"unreadable file ({error.strerror})"
    text = decode(data)
    if text is None:
        return f"binary file, {size:,} bytes"
    if not text.strip():
        return "empty file"
    if suffix in (".html", ".htm"):
        # No home is known here: a run's folders are told by their names.
        in_run_folders = bool({"runs", "outputs"}.intersection(path.parent.parts))
        return _summarize_html(text, suffix, path.name, in_run_folders)
    return summarize_text(text, suffix, path.name)
