"""Run bookkeeping that every layer reads: a run's timeline and times, its approvals, and where
archived runs live.

The public face of run bookkeeping; its modules are private to it.
"""

from __future__ import annotations

from multiverse.runs.approvals import (
    ApprovalBook,
    StepWaiting,
    Unreadable,
    action_hash,
    record_answer,
)
from multiverse.runs.archive import (
    ArchiveResult,
    Moved,
    Refused,
    any_archived,
    archived_count,
    archived_path,
    archived_rows,
    archived_run,
    is_run_id,
    merged,
    run_paths,
    shard_dirs,
    shard_of,
    shards_of,
)
from multiverse.runs.timeline import (
    STEP_FINISHED,
    STEP_STARTED,
    add_run_times,
    add_tree_times,
    created_from_id,
    duration,
    elapsed_by_id,
    finish_step,
    node_suffix,
    note,
    parse_stamp,
    read_ends,
    run_created,
    run_phrase,
    timeline_path,
)

__all__ = [
    "STEP_FINISHED",
    "STEP_STARTED",
    "ApprovalBook",
    "ArchiveResult",
    "Moved",
    "Refused",
    "StepWaiting",
    "Unreadable",
    "action_hash",
    "add_run_times",
    "add_tree_times",
    "any_archived",
    "archived_count",
    "archived_path",
    "archived_rows",
    "archived_run",
    "created_from_id",
    "duration",
    "elapsed_by_id",
    "finish_step",
    "is_run_id",
    "merged",
    "node_suffix",
    "note",
    "parse_stamp",
    "read_ends",
    "record_answer",
    "run_created",
    "run_paths",
    "run_phrase",
    "shard_dirs",
    "shard_of",
    "shards_of",
    "timeline_path",
]
