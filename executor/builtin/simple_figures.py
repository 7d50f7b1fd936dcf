"""A figure asked for by name ("What was Norway's revenue in 2023?"), quoted where it stands.

The answer is the sentences and table rows of the assets that hold every word the question
names and a number, quoted verbatim with their file and line. Nothing is computed, converted
or guessed: no such sentence or row, no answer (the request becomes a run).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from executor.builtin.paths import TaskError, relative
from executor.builtin.simple_tables import TABLE_SUFFIXES, read_text
from executor.builtin.simple_terms import holds
from executor.builtin.text import clean_inline, split_sentences

MAX_QUOTES = 12
_DIGIT = re.compile(r"\d")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


@dataclass(frozen=True)
class Quote:
    """A sentence or table row as written, and where: file and line (1-based)."""

    source: str
    line: int
    text: str
    row: bool = False

    def markdown(self) -> str:
        """The quote as a bullet naming its file and line."""
        where = f"`{self.source}`, line {self.line}"
        return f"- {where}: {self.text}" if self.row else f'- "{self.text}" — {where}'


def paragraphs(text: str) -> list[tuple[list[int], str]]:
    """The text's paragraphs and list items, each with the line each character came from (pure).

    Wrapped lines join their paragraph; a heading, a blank line or a new list item ends it.
    """
    found: list[tuple[list[int], str]] = []
    lines: list[int] = []
    joined = ""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        starts = not stripped or stripped.startswith(("#", "|")) or _BULLET.match(stripped)
        if starts and joined:
            found.append((lines, joined))
            lines, joined = [], ""
        if not stripped or stripped.startswith("#"):
            continue
        piece = _BULLET.sub("", stripped) if not joined else stripped
        if joined:
            joined += " "
            lines.append(number)
        joined += piece
        lines += [number] * len(piece)
    if joined:
        found.append((lines, joined))
    return found


def text_quotes(terms: list[str], source: str, text: str) -> list[Quote]:
    """The sentences of a text holding every term and a number, with their first line (pure)."""
    found: list[Quote] = []
    for lines, paragraph in paragraphs(text):
        if not _DIGIT.search(paragraph):
            continue
        start = 0
        for sentence in split_sentences(paragraph):
            at = paragraph.find(sentence, start)
            start = at + len(sentence) if at >= 0 else start
            if _DIGIT.search(sentence) and all(holds(term, sentence) for term in terms):
                found.append(Quote(source, lines[max(at, 0)], clean_inline(sentence)))
    return found


def csv_quotes(terms: list[str], source: str, text: str) -> list[Quote]:
    """The rows of a CSV whose cells hold the terms its header does not (pure).

    At least one term must be a cell's: a term only in the header ("revenue") picks a column,
    not a row.
    """
    first = text.split("\n", 1)[0]
    reader = csv.reader(io.StringIO(text), delimiter=max((",", ";", "\t"), key=first.count))
    header = next(reader, [])
    in_header = [t for t in terms if any(holds(t, cell) for cell in header)]
    in_cells = [t for t in terms if t not in in_header]
    if not in_cells:
        return []
    found: list[Quote] = []
    for row in reader:
        cells = " ".join(row)
        if _DIGIT.search(cells) and all(holds(term, cells) for term in in_cells):
            shown = " · ".join(f"{name} {cell}" for name, cell in zip(header, row, strict=False))
            found.append(Quote(source, reader.line_num, shown, row=True))
    return found


def quote_figures(home: Path, terms: list[str], files: list[Path]) -> str | None:
    """The sentences and rows of `files` stating what the terms name, or None if none does."""
    if not terms:
        return None
    quotes: list[Quote] = []
    for path in files:
        try:
            text = read_text(path)
        except TaskError:
            continue
        source = relative(home, path)
        is_table = path.suffix.lower() in TABLE_SUFFIXES
        quotes += (csv_quotes if is_table else text_quotes)(terms, source, text)
    if not quotes:
        return None
    named = ", ".join(f'"{term}"' for term in terms)
    lines = [f"Where the assets state {named} (quoted as written; nothing is computed):", ""]
    lines += [quote.markdown() for quote in quotes[:MAX_QUOTES]]
    if len(quotes) > MAX_QUOTES:
        lines += ["", f"_{len(quotes) - MAX_QUOTES} more sentences or rows hold these words._"]
    return "\n".join(lines)
