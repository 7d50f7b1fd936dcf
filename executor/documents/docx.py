"""Word (.docx): paragraphs with their heading levels, lists and tables, read with python-docx."""

from __future__ import annotations

import itertools
import re
from typing import TYPE_CHECKING, BinaryIO

from executor.documents.converted import Converted, plural, unreadable
from executor.documents.markdown import heading, pipe_table, plain_line

if TYPE_CHECKING:
    from docx.text.paragraph import Paragraph

# A table longer than this is rarely prose: its first rows show what it holds.
MAX_TABLE_ROWS = 2_000
_HEADING_STYLE = re.compile(r"^heading (\d)$", re.IGNORECASE)
_WORD = re.compile(r"\w+")


def read_docx(handle: BinaryIO) -> Converted:
    """A Word document as markdown: `Heading N` styles become `#`×N, tables pipe tables."""
    import docx
    from docx.table import Table

    document = docx.Document(handle)
    blocks: list[str] = []
    title = ""
    cut_tables = 0
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            kept = itertools.islice(block.rows, MAX_TABLE_ROWS + 1)  # the header and the rows
            blocks.append(pipe_table([[cell.text for cell in row.cells] for row in kept]))
            cut_tables += len(block.rows) > MAX_TABLE_ROWS + 1
            continue
        line = _paragraph_line(block)
        if line:
            blocks.append(line)
        if not title and _style_name(block) == "title":
            title = block.text.strip()
    title = title or (document.core_properties.title or "").strip()
    words = sum(len(_WORD.findall(block)) for block in blocks)
    if not blocks:
        return unreadable("docx", "Word document with no text", plural(0, "word"))
    note = f"{plural(cut_tables, 'table')} cut to {MAX_TABLE_ROWS:,} rows" if cut_tables else ""
    markdown = "\n\n".join(block for block in blocks if block) + "\n"
    return Converted("docx", markdown, note=note, title=title, extent=plural(words, "word"))


def _style_name(paragraph: Paragraph) -> str:
    style = paragraph.style
    return (style.name or "").lower() if style is not None else ""


def _paragraph_line(paragraph: Paragraph) -> str:
    """A paragraph as one markdown block: a heading, a list item or plain text ("" if empty)."""
    text = paragraph.text.strip()
    if not text:
        return ""
    style = _style_name(paragraph)
    if style == "title":
        return heading(1, text)
    level = _HEADING_STYLE.match(style)
    if level:
        return heading(int(level.group(1)), text)
    lines = [plain_line(line) for line in text.splitlines()]
    if style.startswith("list"):
        return "- " + " ".join(line.strip() for line in lines)
    return "\n".join(lines)
