"""Run bookkeeping that every layer reads: a run's timeline and times, its approvals, and where
archived runs live.

The public face of run bookkeeping; its modules are private to it.

The approval bridge's records (SPEC §11, seed 001 §17.3.1): one file per action asked for.

A tool the mapping marks `requires_approval` (or a shell command off the allow-list) is run
only with a person's yes for that very action: the tool's name and a hash of its arguments
(and of the task asking: the same call in another task is asked again).
Each action asked for is a JSON file `runs/<run_id>/approvals/<hash>.json` holding what was
asked, when, and the answer. The file is the truth, so an approval survives a SIGKILL of the
daemon, a restart asks again and never approves by itself, and the answer to one call never
approves another. Anything ambiguous is a no: a file that cannot be read, or an id that names
no pending request (fail closed).
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from filelock import FileLock
from pydantic import ValidationError

from multiverse.atomic import atomic_write_text
from multiverse.errors import MultiverseError, StepControl, UserError
from multiverse.processes import INTERACTION_RESPONSE, append_event
from multiverse.roles import Approval, ApprovalStatus
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

FOLDER = "approvals"
DEFAULT_TIMEOUT_SECONDS = 600.0


class StepWaiting(StepControl):
    """A step that cannot go on before a person answers (an approval asked for)."""

    def __init__(self, approval: Approval) -> None:
        self.approval = approval
        super().__init__(f"waiting for approval {approval.id}: {approval.shown()}")


def action_hash(tool: str, arguments: dict[str, Any], task_id: str) -> str:
    """The hash that binds an approval to one exact action of one task."""
    action = {"tool": tool, "arguments": arguments, "task_id": task_id}
    canonical = json.dumps(action, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                           default=str)  # fmt: skip
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class Unreadable(MultiverseError):
    """An approval file that cannot be read as one: its action is denied."""


class ApprovalBook:
    """The approval files of one run."""

    def __init__(self, run_root: Path) -> None:
        self.folder = run_root / FOLDER

    def _path(self, digest: str) -> Path:
        return self.folder / f"{digest}.json"

    def get(self, digest: str) -> Approval | None:
        """The record of an action; None if never asked; raises Unreadable if torn."""
        path = self._path(digest)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as error:
            raise Unreadable(f"{path}: {error}") from error
        try:
            approval = Approval.model_validate_json(text)
        except ValidationError as error:
            raise Unreadable(f"{path}: not an approval record") from error
        if approval.action_hash != digest:
            raise Unreadable(f"{path}: its hash does not match its file name")
        return approval

    def request(
        self, run_id: str, task_id: str, tool: str, arguments: dict[str, Any], timeout: float
    ) -> Approval:
        """Record a new request (PENDING); an existing record of the action is returned."""
        digest = action_hash(tool, arguments, task_id)
        with self._lock():
            existing = self.get(digest)
            if existing is not None:
                return existing
            approval = Approval(
                id=f"A-{digest[:10]}", run_id=run_id, task_id=task_id, tool=tool,
                arguments=arguments, action_hash=digest, requested_at=time.time(),
                timeout_seconds=timeout,
            )  # fmt: skip
            atomic_write_text(self._path(digest), approval.model_dump_json(indent=1) + "\n")
        return approval

    def all(self) -> list[Approval]:
        """Every readable record, oldest first (a torn one is left out: it denies itself)."""
        found = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                approval = self.get(path.stem)
            except Unreadable:
                continue
            if approval is not None:
                found.append(approval)
        return sorted(found, key=lambda approval: approval.requested_at)

    def pending(self) -> list[Approval]:
        """The requests still waiting for an answer, oldest first."""
        return [item for item in self.all() if item.status is ApprovalStatus.PENDING]

    def answer(self, approval_id: str | None, approve: bool, by: str) -> Approval:
        """Answer a pending request (the only one, or the one with this id); UserError if none.

        Only a PENDING request can be answered: an answered or timed-out one stays as it is.
        """
        with self._lock():
            pending = self.pending()
            if approval_id is not None:
                chosen = [item for item in pending if item.id == approval_id]
                if not chosen:
                    raise UserError(
                        f"no approval {approval_id!r} is waiting in run {self.folder.parent.name}"
                        f"{_listing(pending)}"
                    )
            elif len(pending) != 1:
                what = "no approval is" if not pending else f"{len(pending)} approvals are"
                raise UserError(
                    f"{what} waiting in run {self.folder.parent.name}"
                    + ("; name one by its id" if pending else "")
                    + _listing(pending)
                )
            else:
                chosen = pending
            status = ApprovalStatus.APPROVED if approve else ApprovalStatus.DENIED
            return self._close(chosen[0], status, by)

    def time_out(self, approval: Approval) -> Approval:
        """Mark an unanswered request as timed out (a no); an answered one is returned as is."""
        with self._lock():
            current = self.get(approval.action_hash)
            if current is None or current.status is not ApprovalStatus.PENDING:
                return current or approval
            return self._close(current, ApprovalStatus.TIMED_OUT, "timeout")

    def _close(self, approval: Approval, status: ApprovalStatus, by: str) -> Approval:
        closed = approval.model_copy(
            update={"status": status, "answered_at": time.time(), "answered_by": by}
        )
        atomic_write_text(self._path(approval.action_hash), closed.model_dump_json(indent=1) + "\n")
        return closed

    def _lock(self) -> FileLock:
        self.folder.mkdir(parents=True, exist_ok=True)
        return FileLock(self.folder / ".lock")


def _listing(pending: list[Approval]) -> str:
    if not pending:
        return ""
    return ": " + "; ".join(f"{item.id} ({item.shown(80)})" for item in pending)


def record_answer(run_root: Path, approval: Approval) -> None:
    """Append the DPS event of a person's answer to the run's events.jsonl."""
    append_event(
        run_root / "events.jsonl",
        INTERACTION_RESPONSE,
        f"sdk:{approval.run_id}:{approval.task_id}",
        approval_id=approval.id,
        approved=approval.status is ApprovalStatus.APPROVED,
        answered_by=approval.answered_by,
        context={"tool_name": approval.tool},
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
