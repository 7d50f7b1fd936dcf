"""One markdown file holding one pipe table: find it, read its cells, render it back.

mistletoe finds the table block (so a table inside a code fence or a list is not taken for
ours); the cells of each row are split and decoded by `tablecodec`, because mistletoe's own
cell splitting drops empty cells and loses escaped backslashes. Rendering uses tabulate in pipe
format with number parsing off; a single row can be re-rendered alone at the table's current
column widths, which is what keeps a one-row update from re-rendering ten thousand rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from multiverse.errors import TableError
from multiverse.tablecodec import decode_cell, encode_cell, split_row
from multiverse.tablelocate import find_table


@dataclass
class TableText:
    """A parsed table file: every line of it, where the table sits, and the decoded cells."""

    lines: list[str]
    start: int
    end: int
    columns: list[str]
    rows: list[list[str]]
    widths: list[int]

    def row_line_number(self, row_index: int) -> int:
        """The 1-based line number of a data row in the file."""
        return self.start + 3 + row_index


def _split_lines(text: str) -> list[str]:
    # Only "\n" ends a line: cells never hold other line breakers (the codec escapes them).
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
        return [line + "\n" for line in lines]
    return [line + "\n" for line in lines[:-1]] + lines[-1:]


def _content(line: str) -> str:
    return line.rstrip("\n").rstrip("\r")


def widths_from_delimiter(line: str) -> list[int]:
    """Column widths implied by a delimiter row like ``|:-----|:--|``."""
    return [max(len(segment) - 2, 0) for segment in split_row(_content(line))]


def parse_table_text(text: str, path: Path, columns: Sequence[str]) -> TableText:
    """Parse a whole file's text; raise TableError naming the line on any defect."""
    lines = _split_lines(text)
    for_mistletoe = [_content(line).lstrip("\ufeff") + "\n" for line in lines]
    found = find_table(for_mistletoe)
    if found is None:
        raise TableError(
            path, None, f"no pipe table found (expected columns: {', '.join(columns)})"
        )
    start, count = found
    # A byte-order mark can only open the file, so it sits on the header when the table does.
    header = [decode_cell(cell) for cell in split_row(_content(lines[start]).lstrip("\ufeff"))]
    if header != list(columns):
        raise TableError(path, start + 1, _column_problem(header, list(columns)))
    rows: list[list[str]] = []
    for offset in range(2, count):
        cells = split_row(_content(lines[start + offset]))
        if len(cells) != len(columns):
            raise TableError(
                path,
                start + offset + 1,
                f"row has {len(cells)} cells, expected {len(columns)} ({', '.join(columns)})",
            )
        rows.append([decode_cell(cell) for cell in cells])
    widths = widths_from_delimiter(lines[start + 1])
    return TableText(lines, start, start + count, list(columns), rows, widths)


def _column_problem(found: list[str], expected: list[str]) -> str:
    missing = [name for name in expected if name not in found]
    unexpected = [name for name in found if name not in expected]
    parts = []
    if missing:
        parts.append("missing column(s): " + ", ".join(missing))
    if unexpected:
        parts.append("unexpected column(s): " + ", ".join(unexpected))
    if not parts:
        parts.append("columns out of order")
    return "; ".join(parts) + f" (expected: {', '.join(expected)})"


def cell_width(text: str) -> int:
    """Display width of an encoded cell, the way tabulate measures it."""
    if text.isascii():  # encoded cells hold no control characters: one column per character
        return len(text)
    from wcwidth import wcswidth  # imported on first use: reading a table never needs it

    width = wcswidth(text)
    return width if width >= 0 else len(text)


def render_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Render a whole table as tabulate does; returns its lines with line endings.

    tabulate renders the header and the delimiter row from one sample row holding the widest
    cell of each column, which gives the widths it would give the whole table; each row is then
    rendered at those widths by `render_row`, whose lines are tabulate's (a property test holds
    both to tabulate's rendering of the whole table). tabulate spends ~40 µs a row inferring
    types we never use, which made a 44-row table cost ~2 ms to write.
    """
    from tabulate import tabulate  # imported on first use: `status` only reads tables

    encoded = [[encode_cell(value) for value in row] for row in rows]
    sizes = [[cell_width(cell) for cell in cells] for cells in encoded]
    sample = [_widest_cells(encoded, sizes)] if encoded else []
    text = tabulate(sample, headers=list(columns), tablefmt="pipe", disable_numparse=True)
    header, delimiter = text.split("\n")[:2]
    widths = widths_from_delimiter(delimiter)
    body = [_padded_row(cells, size, widths) for cells, size in zip(encoded, sizes, strict=True)]
    return [header + "\n", delimiter + "\n", *body]


def _widest_cells(rows: list[list[str]], sizes: list[list[int]]) -> list[str]:
    """The widest cell of each column (the first of equals)."""
    widest, most = list(rows[0]), list(sizes[0])
    for cells, size in zip(rows, sizes, strict=True):
        for column, width in enumerate(size):
            if width > most[column]:
                widest[column], most[column] = cells[column], width
    return widest


def render_row(row: Sequence[str], widths: Sequence[int], ragged: bool = False) -> str | None:
    """Render one row at the given column widths, as tabulate would.

    Returns None if a cell does not fit, unless `ragged`, when it overflows its column.
    """
    if len(row) != len(widths):
        return None
    cells = [encode_cell(value) for value in row]
    sizes = [cell_width(cell) for cell in cells]
    if not ragged and any(size > width for size, width in zip(sizes, widths, strict=True)):
        return None
    return _padded_row(cells, sizes, widths)


def _padded_row(cells: Sequence[str], sizes: Sequence[int], widths: Sequence[int]) -> str:
    """One row of encoded cells of display widths `sizes`, each padded to its column's width."""
    parts = [
        cell + " " * max(width - size, 0)
        for cell, size, width in zip(cells, sizes, widths, strict=True)
    ]
    return "| " + " | ".join(parts) + " |\n"


def new_file_lines(title: str, description: str) -> list[str]:
    """The lines before the table in a freshly created table file."""
    lines = [f"# {title}\n", "\n"]
    if description:
        lines += [description + "\n", "\n"]
    return lines
