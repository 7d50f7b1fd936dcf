"""The learning context (SPEC §5): the past runs ranked for a new request
(`orchestrator.past_runs`), kept in runs/<run_id>/learning_context.md as a markdown table a
person can read and read back from there by later steps; and what later steps read of the past
runs, live and archived: their instructions and catalog rows.

Also here: past runs as the learning context and the catalog lookups read them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import structlog

from multiverse.atomic import atomic_write_text
from multiverse.errors import TableError
from multiverse.home import RunPaths
from multiverse.models import CatalogEntry, InstructionStatus, UserInstruction
from multiverse.roles import LearningContext, Mode, PastRun
from multiverse.runs import any_archived, is_run_id, merged, shard_dirs, shards_of
from multiverse.store import KNOWLEDGE_CATALOG, USER_INSTRUCTIONS, parse_table_text, render_table
from orchestrator.crew import Collaborators
from orchestrator.evidence import ProposalRecord
from orchestrator.past_runs import column_values

log = structlog.get_logger(__name__)

LEARNING_CONTEXT_FILE = "learning_context.md"
COLUMNS = ("rank", "run_id", "score", "user_request")
TITLE = "Learning context"
NO_PAST_RUNS = "No past runs: this is an initial run."
NO_SIMILAR_RUNS = "No past run has a request similar to this one."
WHY_RUN = "Why a run: "  # a question the Executor could not answer at once, and why



def learning_context_path(run: RunPaths) -> Path:
    """Where a run keeps its learning context: runs/<run_id>/learning_context.md."""
    return run.root / LEARNING_CONTEXT_FILE


def render_learning_context(context: LearningContext, mode: Mode, why_run: str = "") -> str:
    """Markdown for learning_context.md: title, mode (and why a question became a run), then
    the ranking table or a sentence."""
    lines = [f"# {TITLE}\n", "\n", f"Mode: {mode.value}\n", "\n"]
    if why_run.strip():
        lines += [f"{WHY_RUN}{' '.join(why_run.split())}\n", "\n"]
    if not context.past_runs:
        sentence = NO_PAST_RUNS if mode is Mode.INITIAL_RUN else NO_SIMILAR_RUNS
        lines.append(sentence + "\n")
        return "".join(lines)
    lines += [
        "Past runs whose requests are most similar to this one, best first "
        "(BM25 score: higher is more similar).\n",
        "\n",
    ]
    rows = [
        [str(rank), run.run_id, f"{run.score:.3f}", run.user_request]
        for rank, run in enumerate(context.past_runs, 1)
    ]
    lines += render_table(COLUMNS, rows)
    return "".join(lines)


def write_learning_context(
    run: RunPaths, context: LearningContext, mode: Mode, why_run: str = ""
) -> Path:
    """Write the run's learning_context.md atomically; returns its path."""
    path = learning_context_path(run)
    atomic_write_text(path, render_learning_context(context, mode, why_run))
    log.info("learning_context_written", run_id=run.run_id, past_runs=len(context.past_runs))
    return path


def read_learning_context(path: Path) -> LearningContext:
    """Parse learning_context.md back; a missing file is an empty context, a broken one raises."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return LearningContext()
    lines = [line.strip() for line in text.splitlines()]
    has_table = any(line.startswith("|") for line in lines)
    if not has_table and (NO_PAST_RUNS in lines or NO_SIMILAR_RUNS in lines):
        return LearningContext()
    table = parse_table_text(text, path, COLUMNS)
    past: list[PastRun] = []
    for number, (rank, run_id, score, request) in enumerate(table.rows):
        line = table.row_line_number(number)
        if not rank.isdigit():
            raise TableError(path, line, f"rank {rank!r} is not a whole number")
        try:
            value = float(score)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise TableError(path, line, f"score {score!r} is not a number")
        if not run_id:
            raise TableError(path, line, "run_id is empty")
        past.append(PastRun(run_id=run_id, score=value, user_request=request))
    return LearningContext(past_runs=past)


def read_why_run(run: RunPaths) -> str:
    """Why the request became a run, as intake recorded it ("" when it did not)."""
    try:
        text = learning_context_path(run).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
    found = (line for line in text.splitlines() if line.startswith(WHY_RUN))
    return next(found, "").removeprefix(WHY_RUN).strip()


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
