"""The home's upkeep: db/process_runs.md as the register of runs/ (a run folder never goes without
its row), and the leftovers of writes cut short (temporary files of a process that died).
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from pathlib import Path

import structlog

from multiverse.atomic import PROCESS_STARTED_NS, temp_owner
from multiverse.errors import TableError
from multiverse.home import Home, RunPaths, run_folder_ids
from multiverse.models import ProcessRun, Status
from multiverse.processes import pid_alive
from orchestrator.archiving import Archiver
from orchestrator.crew import Collaborators
from orchestrator.decide import FailureRecord
from orchestrator.evidence import SignalBox
from orchestrator.forking import finish_forks
from orchestrator.intake import runs_being_taken_in

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

    Reading the table first puts back what this daemon wrote (`multiverse.store.journal`); the rows
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




def remove_orphan_temps(home: Home) -> list[Path]:
    """Remove the temporary files that dead processes left in the home; returns them."""
    removed: list[Path] = []
    for folder in (home.db, home.runs, home.outputs, home.inbox, home.state):
        for path in _temp_files(folder):
            owner = temp_owner(path.name)
            if owner is None or _in_use(path, owner):
                continue
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            removed.append(path)
    if removed:
        log.info("orphan_temps_removed", count=len(removed), first=str(removed[0]))
    return removed


def _temp_files(folder: Path) -> list[Path]:
    found = []
    for root, folders, files in os.walk(folder):
        folders[:] = [name for name in folders if not os.path.islink(os.path.join(root, name))]
        found += [Path(root, name) for name in files if temp_owner(name) is not None]
    return found


def _in_use(path: Path, owner: int) -> bool:
    """Whether the process that made this temporary file may still be writing it."""
    if owner != os.getpid():
        return pid_alive(owner)
    # Our own pid: a write of this process in flight (another thread may be mid-write) unless
    # the file predates this process, i.e. a dead namesake left it. The margin covers file
    # systems whose timestamps lag the clock by a tick.
    try:
        written_ns = path.stat().st_mtime_ns
    except FileNotFoundError:
        return True  # renamed into place meanwhile: nothing to remove
    return written_ns >= PROCESS_STARTED_NS - _CLOCK_MARGIN_NS


_CLOCK_MARGIN_NS = 2_000_000_000


def finish_cut_short(crew: Collaborators) -> None:
    """Finish (or undo) the archive and the forks a crash cut short, before any run is looked
    at: a half-made run is never served."""
    Archiver(crew.home, crew.store).finish()
    finish_forks(crew.home, crew.store)
