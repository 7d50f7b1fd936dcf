"""Catalog rows written into db/knowledge_base_catalog.md, merged with a person's edits.

Each write re-reads the file under its lock (the merging store) and upserts the rows; a cell a
person changed since this process last wrote it keeps the person's value.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

from multiverse.models import CatalogEntry
from multiverse.schemas import KNOWLEDGE_CATALOG
from multiverse.store import TableStore


class CatalogRows:
    """Writes catalog rows at once, remembering what it wrote (the base of a three-way merge)."""

    def __init__(self, store: TableStore, path: Path) -> None:
        self.store = store
        self.path = path
        # The row last written for each file: the base of a three-way merge with a person's edit.
        self._written: dict[str, CatalogEntry] = {}
        self._guard = threading.Lock()

    def write(self, entries: list[CatalogEntry]) -> None:
        """Upsert these rows into the catalog file now."""
        with self._guard:
            written = dict(self._written)
        self.store.modify_indexed(
            KNOWLEDGE_CATALOG, self.path, lambda rows, index: upsert(rows, index, entries, written)
        )
        with self._guard:
            self._written.update((entry.file_path, entry) for entry in entries)


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
