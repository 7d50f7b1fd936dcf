"""Catalog rows on their way to db/knowledge_base_catalog.md, written behind (`write_behind.py`).

A finished task's files join the catalog here first: every context the crew builds sees them at
once, and they reach the file within the flush delay, with the rows of any other task that
finished meanwhile, in one write. A crash before then loses nothing that cannot be rebuilt:
`cataloging.uncatalogued` finds the COMPLETED tasks whose files have no row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from multiverse.models import CatalogEntry
from multiverse.schemas import KNOWLEDGE_CATALOG
from multiverse.store import TableStore
from orchestrator.write_behind import WriteBehind


class PendingCatalog:
    """Catalog rows not yet written, by file path (a newer row for a file replaces the older)."""

    def __init__(self, store: TableStore, path: Path) -> None:
        self.store = store
        self.path = path
        self.behind: WriteBehind[str, CatalogEntry] = WriteBehind(path.name, self._write)
        # The row last written for each file: the base of a three-way merge with a person's edit.
        self._written: dict[str, CatalogEntry] = {}

    def put(self, entry: CatalogEntry) -> None:
        """Queue a row; it is written within the flush delay."""
        self.behind.put(entry.file_path, entry)

    def get(self, file_path: str) -> CatalogEntry | None:
        """The row waiting for this file, if any."""
        return self.behind.get(file_path)

    def rows_of(self, owners: Iterable[str | None]) -> list[CatalogEntry]:
        """Waiting rows whose run_id is one of `owners`, oldest first."""
        wanted = set(owners)
        return [row for row in self.behind.pending().values() if row.run_id in wanted]

    def flush(self) -> None:
        """Write every waiting row now (errors are raised; the rows stay queued)."""
        self.behind.flush()

    def _write(self, batch: dict[str, CatalogEntry]) -> None:
        written = dict(self._written)
        self.store.modify_indexed(
            KNOWLEDGE_CATALOG,
            self.path,
            lambda rows, index: upsert(rows, index, list(batch.values()), written),
        )
        self._written.update(batch)


def upsert(
    rows: list[CatalogEntry],
    index: Mapping[str, int],
    entries: list[CatalogEntry],
    written: Mapping[str, CatalogEntry] | None = None,
) -> list[CatalogEntry]:
    """Rows with each entry replacing the row of the same file_path, or appended.

    Merged cell by cell with the row last `written` for the file: a cell a person changed since
    (the file's value is not the one written) keeps the person's value, so a file catalogued
    again never undoes an edit; the other cells take the entry's values.
    """
    appended: dict[str, int] = {}
    for entry in entries:
        where = index.get(entry.file_path, appended.get(entry.file_path))
        if where is None:
            appended[entry.file_path] = len(rows)
            rows.append(entry)
            continue
        current, before = rows[where], (written or {}).get(entry.file_path)
        if current == entry or before == entry:
            continue
        if before is None:
            rows[where] = entry
            continue
        kept = {
            name: getattr(current, name)
            for name in type(entry).model_fields
            if getattr(current, name) != getattr(before, name)  # the person's edit
        }
        rows[where] = entry.model_copy(update=kept) if kept else entry
    return rows
