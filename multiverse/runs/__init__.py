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

Where archived runs live, and reading them (SPEC §13 `multiverse archive`).

A final run can be moved out of the live tables and folders (`orchestrator.archiving`): its rows
go to the dated shard `db/archive/<YYYY-MM-DDTHH>/` (the hour in its run_id; the same three
global tables in the same format), its folder to `runs/archive/<run_id>/`. Its deliverables stay in
`outputs/<run_id>/`. Archived runs stay readable (`show`, `open`, `logs`, `status RUN`), and the
learning context and catalog lookups still read them. Live rows win over archived ones with the
same key (a crash between two steps of an archive can leave both for a moment).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any, TypeVar

from filelock import FileLock
from pydantic import BaseModel, ConfigDict, ValidationError

from multiverse.atomic import atomic_write_text
from multiverse.errors import MultiverseError, StepControl, UserError
from multiverse.home import Home, run_paths
from multiverse.models import RUN_ID, ProcessRun, Row
from multiverse.roles import Approval, ApprovalStatus
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
from multiverse.store import PROCESS_RUNS, TableSpec, TableStore

R = TypeVar("R", bound=Row)
# An hour's shard, or a day's (shards of archives made before 2026-11-24).
_SHARD = re.compile(r"\d{4}-\d{2}-\d{2}(T\d{2})?")
_RUN_ID = re.compile(RUN_ID)


class Moved(BaseModel):
    """One run archived: its shard of the tables and its folder now."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    run_id: str
    shard: str
    folder: str


class Refused(BaseModel):
    """One run left live, and why."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    run_id: str
    status: str | None
    reason: str


class ArchiveResult(BaseModel):
    """What an archive moved and what it left live."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    archived: list[Moved] = []
    refused: list[Refused] = []
    dry_run: bool = False


def shard_of(run_id: str) -> str:
    """The shard a run's rows are archived in: `YYYY-MM-DDTHH`, the hour of its creation.

    An hour, not a day or a month: archiving rewrites the shard tables whole, so their size is
    what an archive costs. A busy home's day (12,000 runs in bench/history_scale.py) made each
    archive batch rewrite 6.5 MB of day shard; an hour's runs keep it small.
    """
    return f"{run_id[4:8]}-{run_id[8:10]}-{run_id[10:12]}T{run_id[13:15]}"


def shards_of(run_id: str) -> tuple[str, str]:
    """The shards a run's archived rows may be in: its hour's, then its day's (the shards of
    archives made before 2026-11-24 were a day each; they are read, never written)."""
    hour = shard_of(run_id)
    return hour, hour[:10]


def shard_dirs(home: Home) -> list[Path]:
    """The archive shards of the home, oldest first."""
    try:
        names = os.listdir(home.archive_db)
    except OSError:
        return []
    return [home.archive_db / name for name in sorted(names) if _SHARD.fullmatch(name)]


def archived_rows(store: TableStore, home: Home, spec: TableSpec[R]) -> list[R]:
    """Every archived row of one global table, shard after shard."""
    rows: list[R] = []
    for shard in shard_dirs(home):
        path = shard / spec.filename
        if path.exists():
            rows.extend(store.snapshot(spec, path).rows)
    return rows


def any_archived(home: Home) -> bool:
    """Whether any run is archived (the listing of runs/archive/ stops at the first)."""
    try:
        with os.scandir(home.archive_runs) as entries:
            return any(entry.name.startswith("run-") for entry in entries)
    except OSError:
        return False


def archived_count(home: Home) -> int:
    """How many runs are archived (a listing of runs/archive/, nothing parsed)."""
    try:
        names = os.listdir(home.archive_runs)
    except OSError:
        return 0
    return sum(name.startswith("run-") for name in names)


def archived_path(file_path: str, run_id: str) -> str:
    """A home-relative path as it reads once the run is archived (runs/<id>/… moves)."""
    prefix = f"runs/{run_id}/"
    if file_path.startswith(prefix):
        return f"runs/archive/{run_id}/{file_path[len(prefix) :]}"
    return file_path


def merged(live: list[Any], archived: list[Any], key: str) -> list[Any]:
    """Live rows, then the archived rows whose key no live row has."""
    seen = {getattr(row, key) for row in live}
    return live + [row for row in archived if getattr(row, key) not in seen]


def is_run_id(text: str) -> bool:
    """Whether `text` has the form of a run id (`run-YYYYMMDD-…`)."""
    return _RUN_ID.fullmatch(text) is not None


def archived_run(store: TableStore, home: Home, run_id: str) -> ProcessRun | None:
    """The archived row of a run (read from its shard only), or None."""
    if not is_run_id(run_id):
        return None
    for shard in shards_of(run_id):
        path = home.archive_db / shard / PROCESS_RUNS.filename
        if path.exists() and (row := store.table(PROCESS_RUNS, path).get(run_id)) is not None:
            return row
    return None


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
    # Here, not at the top: `status` reads run records and need not import the process layer.
    from multiverse.processes import INTERACTION_RESPONSE, append_event

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
