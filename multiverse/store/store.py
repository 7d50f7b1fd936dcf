"""The table store: typed reads and locked, atomic, durable, merging writes of the tables.

The daemon is not the only writer: the CLI takes the same lock, but people's editors do not
(SPEC §3.1). So:
- Reading: parsed tables are cached by their exact bytes; every access reads the file (cheap,
  it is in the page cache) and re-parses only when the bytes differ from the last parse. Bytes
  someone else wrote (not bytes this process placed itself, `PLACED`) are trusted only once they
  have settled (`tablefile.read_settled`), and are merged with what this process wrote
  (`journal.py`): rows and cells a stale copy erased are put back (and reported through
  `on_restore`), the person's own edits are kept.
- Writing: under the table's cross-process lock, the change is applied to the rows there now,
  then the new file is swapped in with an atomic exchange (`atomic.exchange`) that hands back the
  file it displaced. If that is not what the change was based on, someone saved in between: their
  save is merged in and written again, so neither their edit nor our change is lost.
A file that cannot be parsed raises `TableError` and is never written.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from multiverse.atomic import create_exclusive, exchange, placed, write_temp
from multiverse.errors import StorageError, TableBusy, TableError
from multiverse.store.journal import Restoration, RowJournal, superseded_edits
from multiverse.store.schemas import R, TableSpec
from multiverse.store.table import FileFlock, LockTimeout, Table, describe
from multiverse.store.tablefile import (
    PLACED,
    Reading,
    Rendered,
    Snapshot,
    Stamp,
    group_rows,
    index_of,
    parse_table_text,
    read_settled,
    read_stamped,
    regroup,
    render,
    stamp_of,
)

__all__ = ["RACY_NS", "Table", "TableStore"]

# Longer than a coarse kernel clock tick (at most 10 ms): see `TableStore._remember_stamp`.
RACY_NS = 20_000_000
LOCK_TIMEOUT_SECONDS = 60.0
# How many saves by others one write will merge before it gives up (each round is a save that
# landed in the microseconds between our read and our swap).
MAX_MERGE_ROUNDS = 50
# What link(2) says on file systems without hard links (vfat, some FUSE and network mounts).
_NO_HARD_LINKS = frozenset(
    {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.ENOSYS}
)


class TableStore:
    """Reads and writes table files for one process; safe across threads and processes."""

    def __init__(
        self,
        journal: RowJournal | None = None,
        on_restore: Callable[[Restoration], None] | None = None,
    ) -> None:
        self.journal = journal if journal is not None else RowJournal()
        self.on_restore = on_restore
        self._snapshots: dict[Path, Snapshot[Any]] = {}
        self._locks: dict[Path, tuple[threading.Lock, FileFlock]] = {}
        self._settled: dict[Path, Stamp] = {}  # stamps that prove the cached bytes current
        self._specs: dict[Path, TableSpec[Any]] = {}  # what each file known to us holds
        # The bytes a thread of this store is swapping in right now and has not cached yet.
        self._writing: dict[Path, bytes] = {}
        self._guard = threading.Lock()

    def table(self, spec: TableSpec[R], path: Path) -> Table[R]:
        """A handle on one table file."""
        return Table(self, spec, path)

    def recheck(self, path: Path) -> None:
        """Read a table someone else may have saved, putting back what the save erased of ours.

        A no-op for files this store never handled. Raises TableError if the file is broken.
        """
        spec = self._specs.get(path)
        if spec is not None and self.journal.holds(path):
            self.snapshot(spec, path)

    def written_tables(self) -> list[Path]:
        """The table files this process wrote rows into."""
        return [path for path in list(self._specs) if self.journal.holds(path)]

    # -- reading -------------------------------------------------------------------------

    def snapshot(self, spec: TableSpec[R], path: Path) -> Snapshot[R]:
        """The parsed current state of the file, merged with what this process wrote."""
        snap = self._load(spec, path)
        if not snap.foreign or not self.journal.holds(path):
            snap.foreign = False
            return snap
        # Bytes this store did not cache: someone else's save, or one of our own writes whose
        # cache and journal entries a thread is still making. Under the lock ours are done.
        with self.locked(path):
            snap = self._load(spec, path)
            if snap.foreign:
                merge = self.journal.reconcile(path, snap.rows, snap.index)
                if merge.restoration or merge.forgotten:
                    # Rows or cells of ours were erased: put them back on disk now.
                    _, restored = self._commit(spec, path, snap, lambda rows, index: rows)
                    snap = self._snapshots.get(path, snap)
                else:
                    self.journal.adopt(path, merge)
                    restored = []
                snap.foreign = False
            else:
                restored = []
        self._report(restored)
        return snap

    def _load(self, spec: TableSpec[R], path: Path) -> Snapshot[R]:
        """The file's parsed state; bytes this process did not write are read once settled.

        The bytes are compared on every read, except when the file's stamp (inode, size,
        modification and change times) is the one seen when they were last compared and that
        comparison came long enough after the file's last change (`_remember_stamp`).
        """
        self._specs.setdefault(path, spec)
        cached = self._snapshots.get(path)
        settled = self._settled.get(path)
        try:
            # A stat costs a third of an open, and most reads end here.
            if cached is not None and settled is not None and stamp_of(os.stat(path)) == settled:
                return cached
            stat, began, data = read_stamped(path)
            if cached is not None and cached.data == data:
                self._remember_stamp(path, stamp_of(stat), began)
                return cached
            if data == self._writing.get(path) or PLACED.holds(path, data):
                # Bytes this process swapped in (another thread's write of ours not cached yet,
                # or another store's): complete and fsync'd before they were placed, so there
                # is nothing to wait for (`read_settled` would scan /proc, 1-5 ms, to learn
                # that no one is writing it).
                fresh = self._parse(spec, path, data)
                reading = Reading(data, stamp_of(stat), began)
            else:
                fresh, reading = read_settled(path, lambda data: self._parse(spec, path, data))
        except FileNotFoundError:
            # Deleted by someone after we knew it: what this process wrote is merged back.
            gone = cached is not None and cached.exists
            return Snapshot(b"", [], 0, 0, [], [], foreign=gone)
        except OSError as error:
            raise TableError(path, None, f"cannot read: {error.strerror}") from error
        fresh.foreign = True
        with self._guard:
            self._snapshots[path] = fresh
        self._remember_stamp(path, reading.stamp, reading.began)
        return fresh

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

    def _parse(self, spec: TableSpec[R], path: Path, data: bytes) -> Snapshot[R]:
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
                raise TableError(path, line, describe(error)) from error
            if row.key in index:
                first = table.row_line_number(index[row.key])
                raise TableError(path, line, f"duplicate key {row.key!r} (first at line {first})")
            index[row.key] = position
            rows.append(row)
        return Snapshot(data, table.lines, table.start, table.end, table.widths, rows, index)

    def rows_with(self, spec: TableSpec[R], path: Path, by: str, values: Iterable[Any]) -> list[R]:
        """The rows whose field `by` holds one of `values`, in file order.

        The index behind it is built once per table and then kept up to date by each write at
        the cost of the rows it changed, so the answer costs the rows it returns, not the table.
        """
        snap = self.snapshot(spec, path)
        groups = snap.groups.get(by)
        if groups is None:
            groups = group_rows(snap.rows, by)
            with self._guard:
                snap.groups[by] = groups
        wanted = set(values)
        positions = sorted(p for value in wanted for p in groups.get(value, ()))
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
            except OSError as error:
                raise StorageError(path, error) from error
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
        """Like `modify`, and `change` also gets the key → position index of the rows it gets.

        The rows `change` gets are the file's rows now, merged with what this process wrote.
        """
        with self.locked(path):
            after, restored = self._commit(spec, path, self._load(spec, path), change)
        self._report(restored)
        return list(after)  # the cache keeps `after`; a caller's edit must not reach it

    def _report(self, restored: list[Restoration]) -> None:
        """Hand what merges put back to `on_restore` (outside the lock)."""
        for restoration in restored:
            if restoration and self.on_restore is not None:
                self.on_restore(restoration)

    def _merged(
        self, path: Path, snap: Snapshot[R]
    ) -> tuple[list[R], Mapping[str, int], Restoration | None]:
        """The rows of `snap`, merged with the journal if someone else wrote them."""
        if not snap.foreign or not self.journal.holds(path):
            return snap.rows, snap.index, None
        merge = self.journal.reconcile(path, snap.rows, snap.index)
        self.journal.adopt(path, merge)
        if not snap.exists:
            merge.restoration = replace(merge.restoration, file_missing=True)
        rows = merge.rows
        index = snap.index if len(rows) == len(snap.rows) else index_of(path, rows)
        return rows, index, merge.restoration

    def _commit(
        self,
        spec: TableSpec[R],
        path: Path,
        base: Snapshot[R],
        change: Callable[[list[R], Mapping[str, int]], list[R]],
    ) -> tuple[list[R], list[Restoration]]:
        """Apply `change` to the rows of `base` (the file as read) and write the result.

        A save by someone else that lands before our rename is merged: their file is put back
        in place, and the change is applied again to their rows, as to any rows there now.
        """
        restored: list[Restoration] = []
        expected: bytes | None = base.data if base.exists else None
        rows, index, restoration = self._merged(path, base)
        if restoration is not None:
            restored.append(restoration)
        after = change(list(rows), index)
        made = False  # our change counts as made: placed in some round, if only for an instant
        for _ in range(MAX_MERGE_ROUNDS):
            rendered = render(path, spec, base, after)
            data = "".join(rendered[0]).encode("utf-8")
            if data == expected:
                return after, restored
            with self._guard:
                self._writing[path] = data
            try:
                placed, theirs, standing, superseded = self._swap_in(path, data, expected)
                if superseded is not None and theirs is not None:
                    kept = self._keep_aside(spec, path, base, superseded, theirs)
                    if kept is not None:
                        restored.append(Restoration(path, kept_aside=kept))
                if standing:
                    PLACED.note(path, data)
                if placed:
                    made = True
                    self.journal.record(path, base.rows, base.index, after, rendered[5])
                    self._cache_write(path, base, after, data, rendered)
            finally:
                with self._guard:
                    del self._writing[path]
            if theirs is None:
                return after, restored
            # Someone saved between our read and our write: merge their save, write again.
            base = self._parse_theirs(spec, path, theirs, data if standing else None)
            base.foreign = True
            rows, index, restoration = self._merged(path, base)
            if restoration is not None:
                restored.append(restoration)
            # A change that counts as made is in the journal, and the merge keeps it; one that
            # never counted is applied to their rows, as to any rows there now.
            after = list(rows) if made else change(list(rows), index)
            expected = data if standing else base.data
        if made:  # in the journal: the next read of the file merges it in again
            return after, restored
        raise TableBusy(path, None, "the file kept changing while it was written; try again")

    def _keep_aside(
        self, spec: TableSpec[R], path: Path, base: Snapshot[R], earlier: bytes, later: bytes
    ) -> Path | None:
        """A save of theirs that their next one superseded while we wrote: kept beside the
        table (a hidden file, never read as one) when the next one lacks any of its edits."""
        try:
            older, newer = self._parse(spec, path, earlier), self._parse(spec, path, later)
            missing = superseded_edits(base.rows, older.rows, newer.rows)
        except TableError:
            missing = 1  # one of them does not parse: keep it rather than judge it
        if not missing:
            return None
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        return create_exclusive(path.parent, f".{path.stem}.kept-{stamp}{path.suffix}", earlier)

    def _parse_theirs(
        self, spec: TableSpec[R], path: Path, theirs: bytes, ours_on_disk: bytes | None
    ) -> Snapshot[R]:
        """Parse a save that raced our write; a broken one is put back as it was, then raised.

        Where their file stands at `path`, one that does not parse yet may still be being
        written: it is read again until it parses or has been quiet long enough to be taken
        as meant (`read_settled`), and that reading is the one returned.
        """
        try:
            return self._parse(spec, path, theirs)
        except TableError:
            if ours_on_disk is not None:
                self._swap_in(path, theirs, ours_on_disk)  # nothing a person wrote is lost
                raise
        try:
            snapshot, _ = read_settled(path, lambda data: self._parse(spec, path, data))
        except FileNotFoundError:
            raise TableError(path, None, "removed while it was written; try again") from None
        return snapshot

    def _swap_in(
        self, path: Path, data: bytes, expected: bytes | None
    ) -> tuple[bool, bytes | None, bool, bytes | None]:
        """Put `data` at `path` if the file there holds `expected` (None: no file).

        Returns whether our change counts as made (`data` was placed, if only for an instant),
        the bytes someone else saved there in the meantime (None if no one did), whether
        `data` stands at `path` now, and a save of theirs a newer one superseded meanwhile.
        With an atomic exchange a racing save comes back from the displaced file and is put
        back in place at once (`_swap_back`): ours counts as made (the journal's merge keeps
        it) but does not stand, so no reader keeps a file without their edit; without an
        exchange, a save seen just before the rename stops it (a rename of theirs in the
        microseconds after that check is lost).
        """
        tmp = write_temp(path, data)
        try:
            if expected is None:
                try:
                    os.link(tmp, path)  # never replaces a file someone created meanwhile
                except FileExistsError:
                    return False, _settled_bytes(path), False, None
                except OSError as error:
                    if error.errno not in _NO_HARD_LINKS:
                        raise
                    if path.exists():  # a file system without hard links: check, then rename
                        return False, _settled_bytes(path), False, None
                    os.replace(tmp, path)
                placed(path)
                return True, None, True, None
            try:
                # A save of theirs that landed while ours was written and fsynced is seen here,
                # before ours is ever shown in its place (an editor reloading would load ours).
                if _read_bytes(path) != expected:
                    return False, _settled_bytes(path), False, None
                swapped = exchange(tmp, path)
            except FileNotFoundError:  # deleted meanwhile: theirs is "no file"
                return self._swap_in(path, data, None)
            if swapped:
                # Checked before anything else (the folder's fsync included), for the same reason.
                stat, _, displaced = read_stamped(tmp)
                if displaced == expected:
                    placed(path)
                    if stamp_of(os.stat(tmp)) == stamp_of(stat):
                        return True, None, True, None
                    # An editor opened the file just before our exchange and truncated or wrote
                    # it after our check: its save goes into the file we displaced, which goes
                    # back in place at once (else unlinked below, its save would be lost).
                theirs, superseded = _swap_back(path, tmp, data)
                placed(path)
                return True, theirs, False, superseded
            os.replace(tmp, path)  # no exchange here: the check above stands for it
            placed(path)
            return True, None, True, None
        except OSError as error:
            raise StorageError(path, error) from error
        finally:
            Path(tmp).unlink(missing_ok=True)

    def _cache_write(
        self, path: Path, base: Snapshot[R], rows: list[R], data: bytes, rendered: Rendered
    ) -> None:
        """Keep what was just written as the cached state of the file."""
        lines, start, end, widths, index, touched = rendered
        groups = (
            {
                by: regroup(positions, base.rows, rows, touched, by)
                for by, positions in base.groups.items()
            }
            if touched is not None
            else {}
        )
        with self._guard:
            self._settled.pop(path, None)
            self._snapshots[path] = Snapshot(data, lines, start, end, widths, rows, index, groups)


def _swap_back(path: Path, tmp: str, ours: bytes) -> tuple[bytes, bytes | None]:
    """Put back at once the save our exchange displaced, and return it once settled, with the
    save it superseded, if any.

    Ours must not stay in place without their edit while we merge: an editor that reloads
    a changed file would load it, and its next save would drop the edit it just made. So
    their file goes back before anything else; if yet another save of theirs replaced ours
    in the microseconds between (the file we get back is not ours), that newer one is theirs
    and goes back in place instead, and the one it superseded is returned too: made from ours
    of that instant, the newer save may lack edits of the older one (`_commit` keeps it aside).
    """
    exchange(tmp, path)  # theirs back in place; `tmp` gets what stood there: ours, normally
    if _read_bytes(tmp) == ours:
        return _settled_bytes(path), None
    exchange(tmp, path)  # a newer save of theirs had replaced ours: that one goes in place
    return _settled_bytes(path), _read_bytes(tmp)


def _read_bytes(path: Path | str) -> bytes:
    # os-level: half the system calls of a buffered `open` (no ioctl, lseek, second fstat).
    return read_stamped(path)[2]


def _settled_bytes(path: Path) -> bytes:
    """The bytes of a file someone may still be writing, once they have settled."""
    try:
        data, _ = read_settled(path, lambda data: data)
    except FileNotFoundError:
        return b""
    return data
