"""Typed access to one table file (read, get, insert, update, compare-and-set, delete), and the
cross-process lock of a table file: flock(2) on a hidden sibling lock file.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Generic, Protocol

from pydantic import ValidationError

from multiverse.errors import RowNotFoundError, StaleRowError, TableError
from multiverse.models import Status
from multiverse.store.schemas import R, TableSpec
from multiverse.store.tablefile import Snapshot


class RowStore(Protocol):
    """What a table handle needs of the store (`multiverse.store.TableStore` is one)."""

    def snapshot(self, spec: TableSpec[R], path: Path) -> Snapshot[R]: ...

    def rows_with(
        self, spec: TableSpec[R], path: Path, by: str, values: Iterable[Any]
    ) -> list[R]: ...

    def modify(
        self, spec: TableSpec[R], path: Path, change: Callable[[list[R]], list[R]]
    ) -> list[R]: ...

    def modify_indexed(
        self,
        spec: TableSpec[R],
        path: Path,
        change: Callable[[list[R], Mapping[str, int]], list[R]],
    ) -> list[R]: ...


def describe(error: ValidationError) -> str:
    """A validation error as one line a person fixing the file can act on."""
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

    def __init__(self, store: RowStore, spec: TableSpec[R], path: Path) -> None:
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

    def delete(self, key: str) -> R:
        """Remove the row with this key; returns it (RowNotFoundError if there is none)."""
        removed: list[R] = []

        def drop(rows: list[R], positions: Mapping[str, int]) -> list[R]:
            if key not in positions:
                raise RowNotFoundError(self.path, None, f"no row with key {key!r}")
            removed.append(rows[positions[key]])
            return [row for row in rows if row.key != key]

        self.store.modify_indexed(self.spec, self.path, drop)
        return removed[0]


def _updated(path: Path, row: R, fields: Mapping[str, Any]) -> R:
    data = row.model_dump()
    data.update(fields)
    try:
        return type(row).model_validate(data)
    except ValidationError as error:
        raise TableError(path, None, f"invalid update of {row.key!r}: {describe(error)}") from error


POLL_SECONDS = 0.005


class LockTimeout(Exception):
    """The lock stayed taken by another process for the whole timeout."""


class FileFlock:
    """An exclusive flock on `path`, not reentrant; callers serialise their own threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, timeout: float) -> None:
        """Take the lock, waiting at most `timeout` seconds; raises LockTimeout."""
        fd = self._open()
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockTimeout(str(self.path)) from None
                time.sleep(POLL_SECONDS)
                continue
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
            return

    def _open(self) -> int:
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
        try:
            return os.open(self.path, flags, 0o666)
        except FileNotFoundError:
            self.path.parent.mkdir(parents=True, exist_ok=True)  # the table's folder is new
            return os.open(self.path, flags, 0o666)

    def release(self) -> None:
        """Let the lock go (closing the descriptor is what releases it)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
