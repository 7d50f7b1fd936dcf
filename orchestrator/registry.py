"""db/process_runs.md as the register of runs/: a run folder never goes without its row.

Every run folder holds what its row needs (SPEC §3.2: a run remembers everything else in its
folder): the request in `request.md`, and its status in the evidence of its steps (signals and
the answers it handled). So if the table is deleted, or a save erases rows, the rows are built
again from the folders (`derive_row`, pure but for reading them) and the daemon says so once. A
row deleted on purpose (`multiverse delete-row`) is not brought back.
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Iterable, Mapping

import structlog

from multiverse.errors import TableError
from multiverse.home import RunPaths, run_folder_ids
from multiverse.models import ProcessRun, Status
from orchestrator.collaborators import Collaborators
from orchestrator.intake import runs_being_taken_in
from orchestrator.signals import FailureRecord, SignalBox

log = structlog.get_logger(__name__)


def derive_status(evidence: Iterable[str], handled: Iterable[str]) -> Status:
    """A run's status from its evidence names and the names of its handled answers (pure)."""
    names = set(evidence)
    if "completion_reported" in names:
        return Status.COMPLETED
    if "cancelled" in names:  # the cancel was decided (orchestrator/cancel_steps.py)
        return Status.CANCELLED
    if "failure" in names:
        return Status.FAILED
    if any(name.endswith("-cancel.md") for name in handled):
        return Status.CANCELLED
    proposals = max(
        (int(name[9:]) for name in names if name.startswith("proposal-") and name[9:].isdigit()),
        default=0,
    )
    if (
        proposals
        and "confirmed" not in names
        and f"asked-{proposals}" in names
        and f"modify-{proposals + 1}" not in names
    ):
        return Status.AWAITING_CONFIRMATION
    return Status.PENDING


def derive_row(paths: RunPaths) -> ProcessRun | None:
    """The process_runs row a run folder stands for; None if its intake never finished."""
    try:
        request = paths.request.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    box = SignalBox(paths.signals)
    try:
        handled = os.listdir(paths.responses)
    except FileNotFoundError:
        handled = []
    status = derive_status(box.names(), handled)
    row = ProcessRun(run_id=paths.run_id, user_request=request.strip(), status=status)
    if status is Status.FAILED:
        try:
            failure = box.read("failure", FailureRecord)
        except TableError:
            failure = None
        if failure is not None:
            row = row.model_copy(
                update={
                    "current_phase_id": failure.phase_id,
                    "current_stage_id": failure.stage_id,
                    "current_task_id": failure.task_id,
                }
            )
    return row


def run_folders(crew: Collaborators) -> list[str]:
    """The run_ids of the folders under runs/, sorted."""
    return run_folder_ids(crew.home.runs)


def restore_run_rows(crew: Collaborators) -> list[str]:
    """Give every run folder without a row its row again; returns the run_ids restored.

    Reading the table first puts back what this daemon wrote (`multiverse.journal`); the rows
    of the other folders are built from the folders themselves. A deleted table is said once
    (`register_notice.py`), whether this look or another thread's write rebuilt it.
    """
    with crew.register_notice.looking():
        return _restore_run_rows(crew)


def _restore_run_rows(crew: Collaborators) -> list[str]:
    table = crew.process_runs
    notice = crew.register_notice
    folders = run_folders(crew)
    if not folders:
        return []
    if not table.path.exists():
        notice.seen_missing(list)  # said at the end of this look, once it is back
    # A run still being taken in gets its row from the intake itself, a moment later.
    taking = runs_being_taken_in(crew)
    missing = [run_id for run_id in table.missing(folders) if run_id not in taking]
    tombstones = crew.store.journal.tombstones
    if missing and tombstones is not None:
        deleted = tombstones.deleted(table.path)
        missing = [run_id for run_id in missing if run_id not in deleted]
    rows = [row for run_id in missing if (row := derive_row(crew.home.run(run_id)))]
    added: list[str] = []

    def add(current: list[ProcessRun], index: Mapping[str, int]) -> list[ProcessRun]:
        keys = [row.run_id for row in current]
        in_order = keys == sorted(keys)
        for row in rows:
            if row.run_id in index or row.run_id in added:
                continue  # taken in meanwhile (intake)
            position = bisect_left(keys, row.run_id) if in_order else len(keys)
            current.insert(position, row)
            keys.insert(position, row.run_id)
            added.append(row.run_id)
        return current

    if rows:
        crew.store.modify_indexed(table.spec, table.path, add)
    # Missing when looked at, or recreated by a write (ours just now, or another thread's).
    if table.path.exists() and notice.take():
        in_folders = set(folders)
        notice.say([r.run_id for r in table.rows() if r.run_id in in_folders], was_missing=True)
    elif added:
        notice.say(added, was_missing=False)
    return added
