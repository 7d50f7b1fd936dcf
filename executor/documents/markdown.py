"""Markdown building blocks shared by the readers: pipe tables and clean one-line cells."""

from __future__ import annotations

from collections.abc import Sequence


def cell_text(value: str) -> str:
    """A value safe inside a pipe-table cell: one line, pipes escaped."""
    return " ".join(value.split()).replace("|", "\\|")


def pipe_table(rows: Sequence[Sequence[str]]) -> str:
    """Rows as a markdown pipe table, the first row as header ("" for no rows).

    Rows are padded to the widest; cells are not aligned with spaces, since a sheet of
    thousands of rows would pay for padding nobody reads.
    """
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    if width == 0:
        return ""
    lines = []
    for index, row in enumerate(rows):
        cells = [cell_text(cell) for cell in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
        if index == 0:
            lines.append("|" + " --- |" * width)
    return "\n".join(lines)


def trim_grid(rows: list[list[str]]) -> list[list[str]]:
    """A grid without its empty rows and without columns empty in every row."""
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    width = max((len(row) for row in rows), default=0)
    used = [i for i in range(width) if any(i < len(r) and r[i].strip() for r in rows)]
    return [[row[i] if i < len(row) else "" for i in used] for row in rows]


_MARKUP_START = ("#", "|", "```", "~~~")


def plain_line(text: str) -> str:
    """A line of a document's text that markdown reads as text: a leading `#`, `|` or fence, or a
    line of only `-`/`=` (which would make the line above a heading), is escaped."""
    line = text.rstrip()
    stripped = line.lstrip()
    if stripped.startswith(_MARKUP_START) or (stripped and set(stripped) <= {"-", "=", " "}):
        return "\\" + stripped
    return line


def heading(level: int, text: str) -> str:
    """A markdown heading of one line (levels past 6 stay at 6)."""
    return "#" * min(max(level, 1), 6) + " " + " ".join(text.split())
