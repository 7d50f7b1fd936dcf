"""The table store: typed reads and locked, atomic, durable writes of the markdown tables.

Parsed tables are cached by their exact bytes: every access reads the file (cheap, it is in the
page cache) and re-parses only when the bytes differ from the last parse. A write re-renders
only the rows it changed when they fit the table's column widths; otherwise the table is
re-rendered whole with tabulate (large tables instead get a ragged row, see `FULL_RENDER_LIMIT`).
Everything in the file outside the table is kept byte for byte. A file that cannot be parsed
raises `TableError` and is never written.
"""

from __future__ import annotations

import os
import threading
import time
from bisect import insort
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain, compress
from operator import is_not
from pathlib import Path
from typing import Any, Generic

from pydantic import ValidationError

from multiverse.atomic import atomic_write_bytes
from multiverse.errors import RowNotFoundError, StaleRowError, TableError
from multiverse.flock import FileFlock, LockTimeout
from multiverse.models import Status
from multiverse.schemas import R, TableSpec
from multiverse.tablefile import (
    new_file_lines,
    parse_table_text,
    render_row,
    render_table,
    widths_from_delimiter,
)

# A file's identity and times: (inode, size, mtime_ns, ctime_ns).
Stamp = tuple[int, int, int, int]
# Longer than a coarse kernel clock tick (at most 10 ms): see `TableStore._remember_stamp`.
RACY_NS = 20_000_000

# Above this many rows a row that outgrows its column is written ragged (still a valid row)
# instead of re-rendering the whole table: a 10,000-row render costs ~0.3 s.
FULL_RENDER_LIMIT = 2000
LOCK_TIMEOUT_SECONDS = 60.0


@dataclass
class _Snapshot(Generic[R]):
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

    @property
    def exists(self) -> bool:
        return bool(self.lines)


class TableStore:
    """Reads and writes table files for one process; safe across threads and processes."""

    def __init__(self) -> None:
        self._snapshots: dict[Path, _Snapshot[Any]] = {}
        self._locks: dict[Path, tuple[threading.Lock, FileFlock]] = {}
        self._settled: dict[Path, Stamp] = {}  # stamps that prove the cached bytes current
        self._guard = threading.Lock()

    def table(self, spec: TableSpec[R], path: Path) -> Table[R]:
        """A handle on one table file."""
        return Table(self, spec, path)

    # -- reading -------------------------------------------------------------------------

    def snapshot(self, spec: TableSpec[R], path: Path) -> _Snapshot[R]:
        """The parsed current state of the file (from cache when its bytes are unchanged).

        The bytes are compared on every read, except when the file's stamp (inode, size,
        modification and change times) is the one seen when they were last compared and that
        comparison came long enough after the file's last change (`_remember_stamp`).
        """
        cached = self._snapshots.get(path)
        settled = self._settled.get(path)
        try:
            # A stat costs a third of an open, and most reads end here.
            if cached is not None and settled is not None and _stamp_of(os.stat(path)) == settled:
                return cached
            stamp, began, data = _read_stamped(path)
        except FileNotFoundError:
            return _Snapshot(b"", [], 0, 0, [], [])
        except OSError as error:
            raise TableError(path, None, f"cannot read: {error.strerror}") from error
        if cached is None or cached.data != data:
            cached = self._parse(spec, path, data)
            with self._guard:
                self._snapshots[path] = cached
        self._remember_stamp(path, stamp, began)
        return cached

    def _remember_stamp(self, path: Path, stamp: Stamp, compared_at: int) -> None:
        """Trust `stamp` for the cached bytes only if a later change must show another stamp.

        Git's "racy clean" rule: a file changed after the comparison gets timestamps at or
        after it (less a coarse clock tick), so a stamp older than the comparison by more than
        `RACY_NS` cannot be repeated by a later change. A file system with millisecond or
        coarser timestamps is never trusted: its files are compared every time.
        """
        settled = (
            stamp[2] < compared_at - RACY_NS
            and stamp[3] < compared_at - RACY_NS
            and stamp[2] % 1_000_000 != 0
        )
        with self._guard:
            if settled:
                self._settled[path] = stamp
            else:
                self._settled.pop(path, None)

    def _parse(self, spec: TableSpec[R], path: Path, data: bytes) -> _Snapshot[R]:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            line = data[: error.start].count(b"\n") + 1
            raise TableError(path, line, f"not valid UTF-8 at byte {error.start}") from error
        table = parse_table_text(text, path, spec.columns)
        rows: list[R] = []
        index: dict[str, int] = {}
        for position, cells in enumerate(table.rows):
            line = table.row_line_number(position)
            try:
                row = spec.from_cells(cells)
            except ValidationError as error:
                raise TableError(path, line, _describe(error)) from error
            if row.key in index:
                first = table.row_line_number(index[row.key])
                raise TableError(path, line, f"duplicate key {row.key!r} (first at line {first})")
            index[row.key] = position
            rows.append(row)
        return _Snapshot(data, table.lines, table.start, table.end, table.widths, rows, index)

    def rows_with(self, spec: TableSpec[R], path: Path, by: str, values: Iterable[Any]) -> list[R]:
        """The rows whose field `by` holds one of `values`, in file order.

        The index behind it is built once per table and then kept up to date by each write at
        the cost of the rows it changed, so the answer costs the rows it returns, not the table.
        """
        snap = self.snapshot(spec, path)
        groups = snap.groups.get(by)
        if groups is None:
            groups = _group(snap.rows, by)
            with self._guard:
                snap.groups[by] = groups
        wanted = set(values)
        positions = sorted(chain.from_iterable(groups.get(value, ()) for value in wanted))
        return [snap.rows[position] for position in positions]

    def is_current(self, path: Path) -> bool:
        """Whether the file still holds exactly what this store last read or wrote."""
        cached = self._snapshots.get(path)
        try:
            return cached is not None and path.read_bytes() == cached.data
        except OSError:
            return False

    # -- writing -------------------------------------------------------------------------

    @contextmanager
    def locked(self, path: Path) -> Iterator[None]:
        """Hold the cross-process lock of one table file."""
        with self._guard:
            if path not in self._locks:
                lock_path = path.parent / f".{path.name}.lock"
                self._locks[path] = (threading.Lock(), FileFlock(lock_path))
            thread_lock, file_lock = self._locks[path]
        with thread_lock:
            try:
                file_lock.acquire(timeout=LOCK_TIMEOUT_SECONDS)
            except LockTimeout as error:
                raise TableError(path, None, "could not take the table's lock") from error
            try:
                yield
            finally:
                file_lock.release()

    def modify(
        self, spec: TableSpec[R], path: Path, change: Callable[[list[R]], list[R]]
    ) -> list[R]:
        """Read-modify-write under the lock: `change` gets the rows and returns the new rows."""
        return self.modify_indexed(spec, path, lambda rows, index: change(rows))

    def modify_indexed(
        self,
        spec: TableSpec[R],
        path: Path,
        change: Callable[[list[R], Mapping[str, int]], list[R]],
    ) -> list[R]:
        """Like `modify`, and `change` also gets the key → position index of the rows it gets."""
        with self.locked(path):
            before = self.snapshot(spec, path)
            after = change(list(before.rows), before.index)
            self._write(spec, path, before, after)
            return list(after)  # the cache keeps `after`; a caller's edit must not reach it

    def _write(self, spec: TableSpec[R], path: Path, before: _Snapshot[R], rows: list[R]) -> None:
        lines, start, end, widths, index, touched = _render(path, spec, before, rows)
        data = "".join(lines).encode("utf-8")
        if data == before.data:
            return
        atomic_write_bytes(path, data)
        with self._guard:
            self._settled.pop(path, None)
        groups = (
            {
                by: _regroup(positions, before.rows, rows, touched, by)
                for by, positions in before.groups.items()
            }
            if touched is not None
            else {}
        )
        with self._guard:
            self._snapshots[path] = _Snapshot(data, lines, start, end, widths, rows, index, groups)


def _read_stamped(path: Path) -> tuple[Stamp, int, bytes]:
    """The file's stamp, the time its bytes were read, and the bytes (one open, os-level)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        stat = os.fstat(fd)
        began = time.time_ns()
        chunks = [os.read(fd, stat.st_size + 1)]
        while chunks[-1]:  # the file grew after the fstat: read on to its end
            chunks.append(os.read(fd, 1 << 16))
        return _stamp_of(stat), began, b"".join(chunks)
    finally:
        os.close(fd)


def _stamp_of(stat: os.stat_result) -> Stamp:
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def _group(rows: list[Any], by: str) -> dict[Any, tuple[int, ...]]:
    groups: dict[Any, list[int]] = {}
    for position, row in enumerate(rows):
        groups.setdefault(getattr(row, by), []).append(position)
    return {value: tuple(positions) for value, positions in groups.items()}


def _regroup(
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


def _index_of(path: Path, rows: list[Any]) -> dict[str, int]:
    index: dict[str, int] = {}
    for position, row in enumerate(rows):
        if row.key in index:
            raise TableError(path, None, f"duplicate key {row.key!r} in the rows to write")
        index[row.key] = position
    return index


# New file lines, table start and end, column widths, key index, and the positions a patch
# changed or appended (None after a full render).
Rendered = tuple[list[str], int, int, list[int], dict[str, int], list[int] | None]


def _render(path: Path, spec: TableSpec[R], before: _Snapshot[R], rows: list[R]) -> Rendered:
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
    return lines, len(prefix), len(prefix) + len(table), widths, _index_of(path, rows), None


def _patch_rows(
    path: Path, spec: TableSpec[R], before: _Snapshot[R], rows: list[R]
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


def _newline(before: _Snapshot[Any]) -> str:
    """The line ending the table is written with: its header's (CRLF files stay CRLF)."""
    if before.exists and before.lines[before.start].endswith("\r\n"):
        return "\r\n"
    return "\n"


def _ending(line: str, newline: str) -> str:
    """`line` (ending in a line feed) with the table's line ending."""
    return line if newline == "\n" else line[:-1] + newline


def _describe(error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "row"
        message = item["msg"].removeprefix("Value error, ")
        value = item.get("input")
        if isinstance(value, str) and value not in message:
            message += f" (got {value!r})"  # a person fixing the file needs to see what is there
        problems.append(f"{where}: {message}")
    return "; ".join(problems)


class Table(Generic[R]):
    """Typed access to one table file: read, get, insert, update, compare-and-set."""

    def __init__(self, store: TableStore, spec: TableSpec[R], path: Path) -> None:
        self.store = store
        self.spec = spec
        self.path = path

    def rows(self) -> list[R]:
        """Every row, in file order."""
        return list(self.store.snapshot(self.spec, self.path).rows)

    def rows_with(self, by: str, values: Iterable[Any]) -> list[R]:
        """The rows whose field `by` holds one of `values` (see `TableStore.rows_with`)."""
        return self.store.rows_with(self.spec, self.path, by, values)

    def missing(self, keys: Iterable[str]) -> list[str]:
        """The keys that have no row, in the order given."""
        index = self.store.snapshot(self.spec, self.path).index
        return [key for key in keys if key not in index]

    def get(self, key: str) -> R | None:
        """The row with this key, or None."""
        snap = self.store.snapshot(self.spec, self.path)
        position = snap.index.get(key)
        return None if position is None else snap.rows[position]

    def insert(self, *new_rows: R) -> None:
        """Append rows; a key that already exists is a TableError."""

        def append(rows: list[R], positions: Mapping[str, int]) -> list[R]:
            added: set[str] = set()
            for row in new_rows:
                if row.key in positions or row.key in added:
                    raise TableError(self.path, None, f"key {row.key!r} already exists")
                added.add(row.key)
            return rows + list(new_rows)

        self.store.modify_indexed(self.spec, self.path, append)

    def update(self, key: str, **fields: Any) -> R:
        """Change fields of the row with this key; returns the new row."""
        return self.update_many({key: fields})[key]

    def compare_and_set(self, key: str, expected: Status, **fields: Any) -> R:
        """Update the row only if its status is still `expected`; else StaleRowError."""
        return self.update_many({key: fields}, expected={key: expected})[key]

    def update_many(
        self,
        changes: Mapping[str, Mapping[str, Any]],
        expected: Mapping[str, Status] | None = None,
    ) -> dict[str, R]:
        """Apply several row updates in one atomic write."""
        updated: dict[str, R] = {}

        def apply(rows: list[R], positions: Mapping[str, int]) -> list[R]:
            for key, fields in changes.items():
                if key not in positions:
                    raise RowNotFoundError(self.path, None, f"no row with key {key!r}")
                current = rows[positions[key]]
                want = (expected or {}).get(key)
                if want is not None and getattr(current, "status", None) != want:
                    status = getattr(current, "status", None)
                    raise StaleRowError(
                        self.path, None, f"row {key!r} is {status}, expected {want}"
                    )
                new = _updated(self.path, current, fields)
                rows[positions[key]] = new
                updated[key] = new
            return rows

        self.store.modify_indexed(self.spec, self.path, apply)
        return updated


def _updated(path: Path, row: R, fields: Mapping[str, Any]) -> R:
    data = row.model_dump()
    data.update(fields)
    try:
        return type(row).model_validate(data)
    except ValidationError as error:
        raise TableError(
            path, None, f"invalid update of {row.key!r}: {_describe(error)}"
        ) from error
