"""What this process wrote into each table, so that another writer's save cannot erase it.

A person's editor holds the copy of a table it loaded; saving it later writes that copy back,
without the rows the daemon added or changed meanwhile. The journal keeps, for every row this
process wrote, the row as written and every value it replaced in each column. Reading a table
that someone else saved is then a three-way merge (`reconcile`), decided cell by cell:
- a row the journal holds that the file lacks was removed by a stale copy: it is put back,
  unless it was deleted on purpose with `multiverse delete-row` (a tombstone) after we wrote it;
- a cell holding a value we replaced is a stale copy of it: our value is put back;
- any other difference is the person's edit: it wins, and our value joins the replaced ones.
The journal lives in memory: it covers what this process wrote since it started. Rows written
by an earlier life of the daemon are protected by the evidence that rebuilds them (catalog
rows of finished tasks, process_runs rows from the run folders).
"""

from __future__ import annotations

import errno
import json
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from multiverse.atomic import atomic_write_bytes
from multiverse.errors import StorageError
from multiverse.models import Row
from multiverse.store.table import FileFlock, LockTimeout

RowT = TypeVar("RowT", bound=Row)

# A tombstone only matters to a process that wrote the row before it was deleted and still
# holds it in its journal. Commands live seconds; the daemon applies the tombstones to its own
# journal before it drops old ones (`RowJournal.forget_deleted`, then `compact_tombstones`).
TOMBSTONE_KEEP_SECONDS = 3600.0
_TOMBSTONE_LOCK_SECONDS = 30.0


@dataclass
class _Entry:
    """One row this process wrote: the row as it stands and the values it replaced."""

    row: Row
    written_at: float
    replaced: dict[str, list[Any]] = field(default_factory=dict)


@dataclass
class _TableJournal:
    entries: dict[str, _Entry] = field(default_factory=dict)
    order: Sequence[Row] = ()  # the rows of our last write, for placing restored rows


@dataclass(frozen=True)
class Restoration:
    """What a merge put back: whole rows, and cells (the row with column → our value)."""

    path: Path
    rows: tuple[Row, ...] = ()
    cells: tuple[tuple[Row, dict[str, Any]], ...] = ()
    file_missing: bool = False  # the file itself was gone (deleted), not just rows of it
    # A save of theirs that their next save superseded without all of its edits, kept here.
    kept_aside: Path | None = None

    def __bool__(self) -> bool:
        return bool(self.rows or self.cells or self.kept_aside)


def superseded_edits(base: Sequence[Row], earlier: Sequence[Row], later: Sequence[Row]) -> int:
    """How many edits a save (`earlier`, made from `base`) holds that the next save (`later`)
    does not: a row added, or a cell changed, that `later` lacks (pure)."""
    was = {row.key: row for row in base}
    now = {row.key: row for row in later}
    missing = 0
    for row in earlier:
        old, new = was.get(row.key), now.get(row.key)
        if old == row:
            continue  # not edited in that save
        if new is None:
            missing += 1  # a row it added (or kept) is gone
            continue
        for column in type(row).model_fields:
            value = getattr(row, column)
            if (old is None or getattr(old, column) != value) and getattr(new, column) != value:
                missing += 1
    return missing


@dataclass
class Merge(Generic[RowT]):
    """The rows after a three-way merge, and what it did (see `RowJournal.reconcile`)."""

    rows: list[RowT]
    restoration: Restoration
    adopted: list[tuple[str, Row, str, Any]]  # key, row now, column, our replaced value
    forgotten: list[str]  # keys deleted on purpose


class RowJournal:
    """The rows this process wrote, per table file; safe across threads."""

    def __init__(self, tombstones: Path | None = None) -> None:
        self.tombstones = Tombstones(tombstones) if tombstones is not None else None
        self._tables: dict[Path, _TableJournal] = {}
        self._guard = threading.Lock()

    def holds(self, path: Path) -> bool:
        """Whether this process wrote any row of this table."""
        table = self._tables.get(path)
        return table is not None and bool(table.entries)

    def record(
        self,
        path: Path,
        before: Sequence[Row],
        before_index: Mapping[str, int],
        after: Sequence[Row],
        positions: Sequence[int] | None,
    ) -> None:
        """Note a write of `after` over `before`; `positions` are the rows it touched (None: all).

        Rows that are the very objects they were are skipped: a write changes few rows.
        """
        now = time.time()
        with self._guard:
            table = self._tables.setdefault(path, _TableJournal())
            for position in range(len(after)) if positions is None else positions:
                row = after[position]
                old_position = before_index.get(row.key)
                old = before[old_position] if old_position is not None else None
                if old is row:
                    continue
                entry = table.entries.get(row.key)
                if entry is None:
                    entry = table.entries[row.key] = _Entry(row, now)
                elif old is not None and entry.row is not old:
                    _note_replaced(entry, entry.row, row)
                if old is not None:
                    _note_replaced(entry, old, row)
                entry.row = row
                entry.written_at = now
            if positions is None:
                kept = {row.key for row in after}
                for key in [key for key in table.entries if key not in kept]:
                    del table.entries[key]  # this process removed it itself
            table.order = after

    def reconcile(self, path: Path, rows: Sequence[RowT], index: Mapping[str, int]) -> Merge[RowT]:
        """Merge a table someone else saved with what this process wrote (pure: see `adopt`)."""
        with self._guard:
            table = self._tables.get(path)
            entries = dict(table.entries) if table else {}
            order = table.order if table else ()
        merged: list[RowT] = list(rows)
        cells: list[tuple[Row, dict[str, Any]]] = []
        adopted: list[tuple[str, Row, str, Any]] = []
        missing: dict[str, RowT] = {}
        for key, entry in entries.items():
            position = index.get(key)
            if position is None:
                missing[key] = entry.row  # type: ignore[assignment]  # a row of this table
                continue
            theirs = rows[position]
            if theirs is entry.row or theirs == entry.row:
                continue
            put_back: dict[str, Any] = {}
            for column in type(theirs).model_fields:
                mine, their = getattr(entry.row, column), getattr(theirs, column)
                if mine == their:
                    continue
                if their in entry.replaced.get(column, ()):
                    put_back[column] = mine
                else:
                    adopted.append((key, theirs, column, mine))
            if put_back:
                merged[position] = theirs.model_copy(update=put_back)
                cells.append((merged[position], put_back))
        forgotten = self._deleted_on_purpose(path, missing, entries)
        for key in forgotten:
            del missing[key]
        if missing:
            merged = _place(merged, missing, order)
        restoration = Restoration(path, tuple(missing.values()), tuple(cells))
        return Merge(merged, restoration, adopted, forgotten)

    def adopt(self, path: Path, merge: Merge[Any]) -> None:
        """Take the person's edits of a merge as the rows' current values."""
        with self._guard:
            table = self._tables.get(path)
            if table is None:
                return
            for key in merge.forgotten:
                table.entries.pop(key, None)
            now_rows = {row.key: row for row in merge.rows if row.key in table.entries}
            for key, _theirs, column, mine in merge.adopted:
                entry = table.entries.get(key)
                if entry is None:
                    continue
                values = entry.replaced.setdefault(column, [])
                if mine not in values:
                    values.append(mine)
            for key, row in now_rows.items():
                table.entries[key].row = row

    def forget_deleted(self) -> int:
        """Drop, in every table, the rows deleted on purpose after this process wrote them."""
        if self.tombstones is None:
            return 0
        forgotten = 0
        with self._guard:
            for path, table in self._tables.items():
                deleted = self.tombstones.deleted(path)
                if not deleted:
                    continue
                gone = [k for k, e in table.entries.items() if deleted.get(k, 0.0) >= e.written_at]
                for key in gone:
                    del table.entries[key]
                forgotten += len(gone)
        return forgotten

    def _deleted_on_purpose(
        self, path: Path, missing: Mapping[str, Any], entries: Mapping[str, _Entry]
    ) -> list[str]:
        if not missing or self.tombstones is None:
            return []
        deleted = self.tombstones.deleted(path)
        return [key for key in missing if deleted.get(key, 0.0) >= entries[key].written_at]


def _note_replaced(entry: _Entry, old: Row, new: Row) -> None:
    for column in type(new).model_fields:
        before, after = getattr(old, column), getattr(new, column)
        if before != after:
            values = entry.replaced.setdefault(column, [])
            if before not in values:
                values.append(before)


def _place(rows: list[RowT], missing: Mapping[str, RowT], order: Sequence[Row]) -> list[RowT]:
    """`rows` with the `missing` rows put back after the row that preceded each in `order`."""
    present = {row.key for row in rows}
    after: dict[str | None, list[RowT]] = {}
    previous: str | None = None
    placed: set[str] = set()
    for row in order:
        if row.key in missing:
            after.setdefault(previous, []).append(missing[row.key])
            placed.add(row.key)
        elif row.key in present:
            previous = row.key
    merged = list(after.get(None, []))
    for row in rows:
        merged.append(row)
        merged.extend(after.get(row.key, []))
    merged.extend(row for key, row in missing.items() if key not in placed)
    return merged


class Tombstones:
    """Rows deleted on purpose (`multiverse delete-row`): one JSON line per row, with the time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._deleted: dict[str, dict[str, float]] = {}

    def deleted(self, table: Path) -> dict[str, float]:
        """Key → time of deletion, for one table file."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return {}
        stamp = (stat.st_size, stat.st_mtime_ns)
        if stamp != self._stamp:
            self._deleted = _read_tombstones(self.path)
            self._stamp = stamp
        return self._deleted.get(os.path.abspath(table), {})


def _read_tombstones(path: Path) -> dict[str, dict[str, float]]:
    found: dict[str, dict[str, float]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return found
    for line in lines:
        try:
            item = json.loads(line)
            found.setdefault(str(item["table"]), {})[str(item["key"])] = float(item["at"])
        except (ValueError, KeyError, TypeError):
            continue  # a line cut by a crash
    return found


def add_tombstone(path: Path, table: Path, key: str) -> None:
    """Record that a row was deleted on purpose (appended, fsync'd)."""
    add_tombstones(path, table, [key])


def add_tombstones(path: Path, table: Path, keys: Sequence[str]) -> None:
    """Record that rows were deleted on purpose: one line each, one append, one fsync."""
    if not keys:
        return
    at = time.time()
    name = os.path.abspath(table)
    text = "".join(json.dumps({"table": name, "key": key, "at": at}) + "\n" for key in keys)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _tombstones_locked(path):  # a compaction's rewrite must not drop this append
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            os.write(fd, text.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)


def compact_tombstones(path: Path, older_than: float) -> int:
    """Drop the tombstones recorded before `older_than` (epoch seconds); returns how many.

    Only the daemon calls it, after `RowJournal.forget_deleted`: no live journal needs them.
    """
    if not path.exists():
        return 0
    with _tombstones_locked(path):
        try:
            lines = path.read_bytes().splitlines(keepends=True)
        except FileNotFoundError:
            return 0
        kept = [line for line in lines if _recorded_at(line) >= older_than]
        if len(kept) < len(lines):
            atomic_write_bytes(path, b"".join(kept))
    return len(lines) - len(kept)


def _recorded_at(line: bytes) -> float:
    """When a tombstone line was written; a line cut by a crash counts as oldest."""
    try:
        return float(json.loads(line)["at"])
    except (ValueError, KeyError, TypeError):
        return float("-inf")


@contextmanager
def _tombstones_locked(path: Path) -> Iterator[None]:
    """The flock serialising appends to the tombstone file with its compaction."""
    lock = FileFlock(path.with_name(f".{path.name}.lock"))
    try:
        lock.acquire(_TOMBSTONE_LOCK_SECONDS)
    except LockTimeout:
        held = OSError(errno.EBUSY, "another process held its lock for 30 s")
        raise StorageError(path, held) from None
    try:
        yield
    finally:
        lock.release()
