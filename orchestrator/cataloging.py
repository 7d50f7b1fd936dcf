"""Keeping the knowledge catalog (SPEC §6.6 T03, §7.5.4): every known file with a summary."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

from multiverse.asset_types import asset_type
from multiverse.atomic import atomic_write_text
from multiverse.contracts import ProducedFile
from multiverse.models import PHASE0_STAGE, AssetType, CatalogEntry, Phase, Status, Task
from orchestrator.crew import Crew
from orchestrator.signals import SignalBox

HASHES_FILE = "catalog_hashes.json"
SUMMARY_LIMIT = 300


def register(
    crew: Crew,
    run_id: str | None,
    task_id: str | None,
    produced: Iterable[ProducedFile],
    behind: bool = False,
) -> None:
    """Add or refresh catalog rows for produced files (idempotent).

    `behind=True` leaves the rows to the catalog's write-behind (`catalog_rows.py`): every
    context the crew builds sees them at once, and they reach the file within the flush delay.
    A crash before then is repaired from the files (`uncatalogued`, `register_outputs`).
    """
    for item in produced:
        entry = CatalogEntry(
            file_path=item.path,
            run_id=run_id,
            asset_type=item.asset_type,
            source_task_id=task_id,
            summary=_one_line(item.summary),
        )
        crew.pending_catalog.put(entry)
    if not behind:
        crew.pending_catalog.flush()


def uncatalogued(crew: Crew, tasks: Iterable[Task]) -> list[str]:
    """Master-loop tasks COMPLETED whose output has no catalog row (lost in a crash)."""
    outputs = {
        task.output_path: task.task_id
        for task in tasks
        if task.status is Status.COMPLETED and task.stage_id != PHASE0_STAGE and task.output_path
    }
    if not outputs:
        return []
    waiting = crew.pending_catalog.behind.pending()
    missing = crew.catalog.missing(path for path in outputs if path not in waiting)
    return [outputs[path] for path in missing]


def register_outputs(crew: Crew, run_id: str, task: Task, phase: Phase) -> None:
    """Register a COMPLETED task's files again: from its result signal, and its output file.

    The output file always gets a row (rebuilt from the file if the signal does not name it),
    so the repair cannot be asked for twice.
    """
    signal = SignalBox(crew.home.run(run_id).signals).result(task.task_id)
    produced = list(signal.outputs) if signal is not None else []
    if task.output_path not in {item.path for item in produced}:
        path = crew.home.root / task.output_path
        in_outputs = task.output_path.startswith(f"outputs/{run_id}/")
        produced.append(
            ProducedFile(
                path=task.output_path,
                asset_type=asset_type(phase, is_task_output=True, in_outputs=in_outputs),
                summary=crew.executor.summarize(path) if path.is_file() else "",
            )
        )
    register(crew, run_id, task.task_id, produced)


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
