"""One markdown file holding one pipe table: find it, read its cells, render it back; and one
parsed state of such a file, with the lines of a new state rendered from it.

Also here: reading a file that someone else may be writing: trust it only once it has settled.

Most editors save by truncating the file and writing it again, some in several pieces; a read
in the middle gets an empty file, half a row, or a table that ends early. So a file that
changed in the last `QUIET_NS` is trusted only when (1) it did not change while it was being
read, (2) no process holds it open for writing (`atomic.open_for_writing`), and (3) it parses.
Otherwise it is read again every `POLL_SECONDS` until all three hold, or until it has been quiet
for `QUIET_NS`, when it is what its writer meant (a file that is still broken then is really
broken). An older file is read once. The cost: one scan of /proc (~0.5 ms) for a file changed
in the last second by someone else; bytes this process placed itself (`PLACED`, whichever of
its stores wrote them) never come here.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from bisect import insort
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress
from operator import is_not
from pathlib import Path
from typing import Any, Generic, TypeVar

from multiverse.atomic import open_for_writing
from multiverse.errors import TableError
from multiverse.store.schemas import R, TableSpec, decode_cell, encode_cell, find_table, split_row


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


def clip(text: str, columns: int, mark: str = "") -> str:
    """The text on one line, cut to `columns` terminal columns (`mark` ends a cut line): a
    Korean, Chinese or Japanese character or an emoji takes two (wcwidth), so such text is cut
    as wide as Latin text."""
    from wcwidth import wcwidth

    flat = " ".join(text.split())
    line: list[str] = []
    used = 0
    room = columns - len(mark)
    for index, char in enumerate(flat):
        width = max(wcwidth(char), 0)
        if used + width > columns or (used + width > room and index < len(flat) - 1):
            return "".join(line).rstrip() + mark
        line.append(char)
        used += width
    return flat


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


T = TypeVar("T")
# A file's identity and times: (inode, size, mtime_ns, ctime_ns).
Stamp = tuple[int, int, int, int]
QUIET_NS = 1_000_000_000
POLL_SECONDS = 0.005
# However busy its writer, a file is taken as it is after this long.
MAX_WAIT_SECONDS = 30.0


@dataclass(frozen=True)
class Reading:
    """The bytes of a file, its stamp, and when (wall clock, ns) they were read."""

    data: bytes
    stamp: Stamp
    began: int


def stamp_of(stat: os.stat_result) -> Stamp:
    """The stamp of a stat result."""
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def read_stamped(path: Path | str) -> tuple[os.stat_result, int, bytes]:
    """The file's stat, the time its bytes were read, and the bytes (one open, os-level)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        stat = os.fstat(fd)
        began = time.time_ns()
        chunks = [os.read(fd, stat.st_size + 1)]
        while chunks[-1]:  # the file grew after the fstat: read on to its end
            chunks.append(os.read(fd, 1 << 16))
        return stat, began, b"".join(chunks)
    finally:
        os.close(fd)


def read_settled(path: Path, parse: Callable[[bytes], T]) -> tuple[T, Reading]:
    """Read and parse `path` once it has settled; raises FileNotFoundError if it is absent.

    `parse` raising TableError on a file that changed recently means "not finished yet"; on a
    quiet file the error is raised to the caller.
    """
    deadline = time.monotonic() + MAX_WAIT_SECONDS
    while True:
        stat, began, data = read_stamped(path)
        stamp = stamp_of(stat)
        young = began - max(stat.st_mtime_ns, stat.st_ctime_ns) < QUIET_NS
        waiting = time.monotonic() < deadline
        if young and waiting:
            if open_for_writing(stat.st_dev, stat.st_ino):
                time.sleep(POLL_SECONDS)
                continue
            # Checked after the writers: a writer that finished after our read changed it.
            if not _same_after(path, stamp):
                continue
        try:
            parsed = parse(data)
        except TableError:
            if young and waiting:
                time.sleep(POLL_SECONDS)
                continue
            raise
        return parsed, Reading(data, stamp, began)


def _same_after(path: Path, stamp: Stamp) -> bool:
    try:
        return stamp_of(os.stat(path)) == stamp
    except FileNotFoundError:
        return False


class PlacedBytes:
    """What this process last swapped in whole at each table file, as a digest (bounded)."""

    def __init__(self, size: int = 4096) -> None:
        self._digests: OrderedDict[Path, bytes] = OrderedDict()
        self._size = size
        self._guard = threading.Lock()

    def note(self, path: Path, data: bytes) -> None:
        """`data` now stands at `path`, put there by this process."""
        digest = _digest(data)
        with self._guard:
            self._digests[path] = digest
            self._digests.move_to_end(path)
            if len(self._digests) > self._size:
                self._digests.popitem(last=False)

    def holds(self, path: Path, data: bytes) -> bool:
        """Whether `data` is what this process last placed at `path`."""
        with self._guard:
            digest = self._digests.get(path)
        return digest is not None and digest == _digest(data)

    def renew_guard(self) -> None:
        """A new lock, in a forked child: one another thread held at the fork stays held."""
        self._guard = threading.Lock()


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


# One per process: every store of the process (the daemon's, a command's, the archive's) knows
# a file another of them placed is whole.
PLACED = PlacedBytes()
os.register_at_fork(after_in_child=PLACED.renew_guard)
