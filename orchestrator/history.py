"""Past runs as the learning context and the catalog lookups read them: live and archived.

Archived runs (`multiverse.archive`) keep helping later requests: their requests are ranked with
the live ones, and their catalog rows and instructions are found by run_id in their shards.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from multiverse.archive import (
    any_archived,
    is_run_id,
    merged,
    shard_dirs,
    shards_of,
)
from multiverse.models import CatalogEntry, InstructionStatus, UserInstruction
from multiverse.schemas import KNOWLEDGE_CATALOG, USER_INSTRUCTIONS
from orchestrator.collaborators import Collaborators
from orchestrator.history_index import column_values
from orchestrator.signals import ProposalRecord


def has_past_runs(crew: Collaborators) -> bool:
    """Whether any run exists, live or archived (a listing of runs/archive/, no table read)."""
    return bool(crew.process_runs.rows()) or any_archived(crew.home)


def archived_catalog(crew: Collaborators, run_ids: Iterable[str | None]) -> list[CatalogEntry]:
    """The archived catalog rows of these runs."""
    wanted = {run_id for run_id in run_ids if run_id is not None and is_run_id(run_id)}
    rows: list[CatalogEntry] = []
    # Only the shards these runs were archived in, through the shard's run_id index.
    for shard in sorted({shard for run_id in wanted for shard in shards_of(run_id)}):
        path = crew.home.archive_db / shard / KNOWLEDGE_CATALOG.filename
        if path.exists():
            rows += crew.store.rows_with(KNOWLEDGE_CATALOG, path, "run_id", wanted)
    return rows


def highest_instruction_number(crew: Collaborators, live: Sequence[UserInstruction]) -> int:
    """The highest instruction number in use, live or archived (ids are global)."""
    numbers = (int(row.instruction_id[1:]) for row in live)
    return max(max(numbers, default=0), crew.history.highest_instruction())


def superseded_by(
    record: ProposalRecord, rows: Sequence[UserInstruction], run_id: str
) -> dict[str, str]:
    """Old instruction id → the id of this run's instruction that supersedes it (pure)."""
    mine = [row for row in rows if row.run_id == run_id]
    return {
        old: row.instruction_id
        for item, row in zip(record.proposal.instructions, mine, strict=False)
        for old in item.supersedes
    }


def supersede_archived(crew: Collaborators, replaced: Mapping[str, str]) -> None:
    """Mark the archived instructions a new run supersedes, in their shards (idempotent)."""
    for shard in shard_dirs(crew.home) if replaced else []:
        path = shard / USER_INSTRUCTIONS.filename
        # Most shards hold none of them: their ids, streamed, tell (no row parsed or cached).
        try:
            ids = column_values(path, USER_INSTRUCTIONS.columns, ("instruction_id",))
            if not any(key in replaced for (key,) in ids):
                continue
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError):
            pass  # unreadable as a stream: the store's read below says what is wrong with it

        def mark(current: list[UserInstruction]) -> list[UserInstruction]:
            return [
                row.model_copy(
                    update={
                        "status": InstructionStatus.SUPERSEDED,
                        "superseded_by_id": replaced[row.instruction_id],
                    }
                )
                if _stale(row, replaced)
                else row
                for row in current
            ]

        crew.store.modify(USER_INSTRUCTIONS, path, mark)


def _stale(row: UserInstruction, replaced: Mapping[str, str]) -> bool:
    return row.instruction_id in replaced and row.status is InstructionStatus.ACTIVE


def instructions_of(crew: Collaborators, run_ids: Iterable[str]) -> list[UserInstruction]:
    """The instructions of these runs: the live rows, then those in the runs' shards."""
    wanted = {run_id for run_id in run_ids if is_run_id(run_id)}
    live = crew.instructions.rows_with("run_id", wanted)
    archived: list[UserInstruction] = []
    for shard in sorted({shard for run_id in wanted for shard in shards_of(run_id)}):
        path = crew.home.archive_db / shard / USER_INSTRUCTIONS.filename
        if path.exists():
            archived += crew.store.rows_with(USER_INSTRUCTIONS, path, "run_id", wanted)
    return merged(live, archived, "instruction_id")
