"""Keeping the knowledge catalog (SPEC §6.6 T03, §7.5.4): every known file with a summary."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

from multiverse.atomic import atomic_write_text
from multiverse.contracts import ProducedFile
from multiverse.models import AssetType, CatalogEntry
from orchestrator.crew import Crew

HASHES_FILE = "catalog_hashes.json"
SUMMARY_LIMIT = 300


def register(
    crew: Crew, run_id: str | None, task_id: str | None, produced: Iterable[ProducedFile]
) -> None:
    """Add or refresh catalog rows for produced files (idempotent)."""
    entries = [
        CatalogEntry(
            file_path=item.path,
            run_id=run_id,
            asset_type=item.asset_type,
            source_task_id=task_id,
            summary=_one_line(item.summary),
        )
        for item in produced
    ]
    if entries:
        crew.store.modify(crew.catalog.spec, crew.catalog.path, lambda rows: upsert(rows, entries))


def upsert(rows: list[CatalogEntry], entries: list[CatalogEntry]) -> list[CatalogEntry]:
    """Rows with each entry replacing the row of the same file_path, or appended."""
    position = {row.file_path: index for index, row in enumerate(rows)}
    for entry in entries:
        if entry.file_path in position:
            if rows[position[entry.file_path]] != entry:
                rows[position[entry.file_path]] = entry
        else:
            position[entry.file_path] = len(rows)
            rows.append(entry)
    return rows


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SUMMARY_LIMIT else flat[: SUMMARY_LIMIT - 1] + "…"


def input_files(crew: Crew) -> list[tuple[Path, AssetType]]:
    """Every visible file under assets/ and guidelines/, sorted."""
    found = []
    for folder, kind in (
        (crew.home.assets, AssetType.ORIGINAL_INPUT),
        (crew.home.guidelines, AssetType.GUIDELINE_DOC),
    ):
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder)
            if path.is_file() and not any(part.startswith(".") for part in relative.parts):
                found.append((path, kind))
    return found


def refresh_inputs(crew: Crew) -> int:
    """Catalog new or changed inputs (by content hash); unchanged ones are not re-summarised."""
    index_path = crew.home.state / HASHES_FILE
    try:
        known: dict[str, str] = json.loads(index_path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        known = {}
    catalogued = {row.file_path for row in crew.catalog.rows()}
    produced: list[ProducedFile] = []
    hashes = dict(known)
    for path, kind in input_files(crew):
        relative = crew.home.relative(path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        hashes[relative] = digest
        if known.get(relative) == digest and relative in catalogued:
            continue
        summary = crew.executor.summarize(path)
        produced.append(ProducedFile(path=relative, asset_type=kind, summary=summary))
    register(crew, None, None, produced)
    if hashes != known:
        atomic_write_text(index_path, json.dumps(hashes, indent=1, sort_keys=True) + "\n")
    return len(produced)
