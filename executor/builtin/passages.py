"""Passages: the statements of a source text, each with where it stands (section and line).

Pure functions over markdown (documents in other formats arrive converted to markdown, with a
heading per page, slide or sheet). A passage is a sentence of prose, a list item, or a table
row read as "column: value" pairs, so a fact can be quoted exactly and found again.
"""

from __future__ import annotations

import re

from executor.builtin.extract import Frozen, strip_front_matter
from executor.builtin.tabular import parse_markdown_table
from executor.builtin.text import clean_inline, split_sentences

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_RULE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,})\s*$")
MIN_CHARS = 12  # shorter pieces are labels, not statements
MAX_CHARS = 600  # a longer "sentence" is a run-on block; it is cut at a word boundary


class Passage(Frozen):
    """One statement of a source: its text, file, section heading and first line (1-based)."""

    text: str
    source: str
    section: str
    line: int
    depth: int = 0  # the level of the section's heading (1: the document's title)

    @property
    def location(self) -> str:
        """Where the passage stands, as a person finds it: the section, else the line."""
        return f"§ {self.section}, line {self.line}" if self.section else f"line {self.line}"


def _table_passages(block: list[str], start: int, source: str, section: str) -> list[Passage]:
    table = parse_markdown_table(block)
    if table is None:
        return []
    found = []
    for offset, row in enumerate(table.rows):
        pairs = [f"{name}: {cell}" for name, cell in zip(table.header, row, strict=True) if cell]
        if pairs:
            found.append(Passage(text="; ".join(pairs), source=source, section=section,
                                 line=start + 2 + offset))  # fmt: skip
    return found


def _cut(text: str) -> str:
    if len(text) <= MAX_CHARS:
        return text
    cut = text[:MAX_CHARS]
    return cut[: cut.rfind(" ")] + "…" if " " in cut else cut + "…"


def split_passages(source: str, text: str) -> list[Passage]:
    """The passages of a markdown or plain text, in order, with their section and line."""
    lines = strip_front_matter(text).splitlines()
    offset = len(text.splitlines()) - len(lines)  # front matter lines keep the numbering true
    found: list[Passage] = []
    section = ""
    depth = 0
    paragraph: list[str] = []
    paragraph_start = 0
    table: list[str] = []
    table_start = 0

    def flush() -> None:
        if not paragraph:
            return
        # Each sentence keeps the line it starts on: the offsets of the joined lines map back.
        pieces = [clean_inline(piece) for piece in paragraph]
        starts, position = [], 0
        for piece in pieces:
            starts.append(position)
            position += len(piece) + 1
        joined = " ".join(pieces)
        cursor = 0
        for sentence in split_sentences(joined):
            at = joined.find(sentence, cursor)
            cursor = max(at, cursor)
            row = max((i for i, start in enumerate(starts) if start <= cursor), default=0)
            if len(sentence) >= MIN_CHARS:
                found.append(Passage(text=_cut(sentence), source=source, section=section,
                                     line=paragraph_start + row, depth=depth))  # fmt: skip
        paragraph.clear()

    for index, raw in enumerate(lines, start=offset + 1):
        line = raw.rstrip()
        if line.lstrip().startswith("|"):
            flush()
            if not table:
                table_start = index
            table.append(line)
            continue
        if table:
            found += _table_passages(table, table_start, source, section)
            table = []
        heading = _HEADING.match(line)
        if heading:
            flush()
            section = clean_inline(heading.group(2))
            depth = len(heading.group(1))
            continue
        item = _ITEM.match(line)
        if not line.strip() or _RULE.match(line) or line.lstrip().startswith("<!--"):
            flush()
            continue
        if item:
            flush()
            paragraph_start = index
            paragraph.append(item.group(1))
            continue
        if raw.startswith(("  ", "\t")) and paragraph:
            paragraph.append(line.strip())  # a list item's continuation line
            continue
        if not paragraph:
            paragraph_start = index
        paragraph.append(line.strip().lstrip("> "))
    flush()
    if table:
        found += _table_passages(table, table_start, source, section)
    return found
