"""One parsed state of a table file, and the lines of a new state rendered from it.

A write re-renders only the rows it changed when they fit the table's column widths; otherwise
the table is re-rendered whole with tabulate (large tables instead get a ragged row, see
`FULL_RENDER_LIMIT`). Everything in the file outside the table is kept byte for byte.
"""

from __future__ import annotations

from bisect import insort
from dataclasses import dataclass, field
from itertools import chain, compress
from operator import is_not
from pathlib import Path
from typing import Any, Generic

from multiverse.errors import TableError
from multiverse.schemas import R, TableSpec
from multiverse.tablefile import new_file_lines, render_row, render_table, widths_from_delimiter

# Above this many rows a row that outgrows its column is written ragged (still a valid row)
# instead of re-rendering the whole table: a 10,000-row render costs ~0.3 s.
FULL_RENDER_LIMIT = 2000


@dataclass
class Snapshot(Generic[R]):
    """One parsed state of a table file."""

    data: bytes
    lines: list[str]
    start: int
    end: int
    widths: list[int]
    rows: list[R]
    index: dict[str, int] = field(default_factory=dict)
    # Secondary indexes built on demand: field name → value → positions of its rows, in order.
    groups: dict[str, dict[Any, tuple[int, ...]]] = field(default_factory=dict)

    # Bytes someone else wrote, not yet merged with what this process wrote (`journal.py`).
    foreign: bool = False

    @property
    def exists(self) -> bool:
        """Whether the file existed (an absent file is an empty snapshot)."""
        return bool(self.lines)


def group_rows(rows: list[Any], by: str) -> dict[Any, tuple[int, ...]]:
    """Positions of the rows by the value of their field `by`."""
    groups: dict[Any, list[int]] = {}
    for position, row in enumerate(rows):
        groups.setdefault(getattr(row, by), []).append(position)
    return {value: tuple(positions) for value, positions in groups.items()}


def regroup(
    groups: dict[Any, tuple[int, ...]],
    old: list[Any],
    new: list[Any],
    touched: list[int],
    by: str,
) -> dict[Any, tuple[int, ...]]:
    """`groups` of `old` updated for the positions a patch changed or appended."""
    groups = dict(groups)
    for position in touched:
        value = getattr(new[position], by)
        if position < len(old):
            previous = getattr(old[position], by)
            if previous == value:
                continue
            groups[previous] = tuple(p for p in groups[previous] if p != position)
            if not groups[previous]:
                del groups[previous]
        members = list(groups.get(value, ()))
        insort(members, position)
        groups[value] = tuple(members)
    return groups


def index_of(path: Path, rows: list[Any]) -> dict[str, int]:
    """Key → position of `rows`; a duplicate key is a TableError."""
    index: dict[str, int] = {}
    for position, row in enumerate(rows):
        if row.key in index:
            raise TableError(path, None, f"duplicate key {row.key!r} in the rows to write")
        index[row.key] = position
    return index


# New file lines, table start and end, column widths, key index, and the positions a patch
# changed or appended (None after a full render).
Rendered = tuple[list[str], int, int, list[int], dict[str, int], list[int] | None]


def render(path: Path, spec: TableSpec[R], before: Snapshot[R], rows: list[R]) -> Rendered:
    """New file lines (and the key index) for `rows`, touching as few lines as possible."""
    old = before.rows
    if before.exists and old and len(rows) >= len(old):
        patched = _patch_rows(path, spec, before, rows)
        if patched is not None:
            return patched
    cells = [spec.to_cells(row) for row in rows]
    newline = _newline(before)
    table = [_ending(line, newline) for line in render_table(spec.columns, cells)]
    if before.exists:
        prefix, suffix = before.lines[: before.start], before.lines[before.end :]
        if not prefix and before.lines[0].startswith("\ufeff"):
            table[0] = "\ufeff" + table[0]  # keep the byte-order mark the file opened with
    else:
        prefix, suffix = new_file_lines(spec.title, spec.description), []
    lines = prefix + table + suffix
    widths = widths_from_delimiter(table[1])
    return lines, len(prefix), len(prefix) + len(table), widths, index_of(path, rows), None


def _patch_rows(
    path: Path, spec: TableSpec[R], before: Snapshot[R], rows: list[R]
) -> Rendered | None:
    """Re-render only changed and appended rows; None when a full render is wanted."""
    old = before.rows
    index = dict(before.index)
    ragged = len(rows) > FULL_RENDER_LIMIT
    newline = _newline(before)
    lines = list(before.lines)
    first_row = before.start + 2
    # Which rows are not the very objects of the snapshot, found at C speed: a write of one row
    # into ten thousand must not walk them all in Python.
    changed = compress(range(len(old)), map(is_not, old, rows))
    touched = list(chain(changed, range(len(old), len(rows))))
    for position in touched:
        row = rows[position]
        if position < len(old) and old[position].key != row.key:
            return None  # rows were removed or reordered
        if position >= len(old):
            if row.key in index:
                raise TableError(path, None, f"duplicate key {row.key!r} in the rows to write")
            index[row.key] = position
        line = render_row(spec.to_cells(row), before.widths, ragged=ragged)
        if line is None:
            return None
        line = _ending(line, newline)
        if position < len(old):
            lines[first_row + position] = line
        else:
            lines.insert(first_row + position, line)
    end = first_row + len(rows)
    if end > before.end and not lines[before.end - 1].endswith("\n"):
        lines[before.end - 1] += newline
    return lines, before.start, end, before.widths, index, touched


def _newline(before: Snapshot[Any]) -> str:
    """The line ending the table is written with: its header's (CRLF files stay CRLF)."""
    if before.exists and before.lines[before.start].endswith("\r\n"):
        return "\r\n"
    return "\n"


def _ending(line: str, newline: str) -> str:
    """`line` (ending in a line feed) with the table's line ending."""
    return line if newline == "\n" else line[:-1] + newline
