"""What the daemon does between steps: its wake-ups, and the home's upkeep.

Wake-ups (SPEC §4): keys to look at, each due at a time, never the state; and file events as
wake-ups (watchdog handlers only put keys on a queue). Upkeep: db/process_runs.md as the
register of runs/ (a run folder never goes without its row), and the leftovers of writes cut
short (temporary files of a process that died).
"""

from __future__ import annotations

import logging
import os
import queue
import re
import time
import warnings
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path

import structlog
from watchdog.events import (
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

from multiverse.atomic import PROCESS_STARTED_NS, temp_owner
from multiverse.errors import TableError
from multiverse.home import Home, RunPaths, run_folder_ids
from multiverse.models import RUN_ID, ProcessRun, Status
from multiverse.processes import pid_alive
from orchestrator.archiving import Archiver
from orchestrator.crew import Collaborators
from orchestrator.decide import FailureRecord
from orchestrator.evidence import SignalBox
from orchestrator.forking import finish_forks
from orchestrator.inbox_survey import is_ignorable_name
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


class WakeUps:
    """Keys waiting to be looked at, by the monotonic time they are due."""

    def __init__(self) -> None:
        # SimpleQueue: its put is reentrant, so a signal handler may wake the loop even when
        # the signal lands while the loop itself is inside the queue (queue.Queue would
        # deadlock on its own lock there).
        self._queue: queue.SimpleQueue[tuple[str, float]] = queue.SimpleQueue()
        self._due: dict[str, float] = {}

    def wake(self, key: str, delay: float = 0.0) -> None:
        """Ask for `key` to be looked at after `delay` seconds (any thread)."""
        self._queue.put((key, delay))

    def drain(self, timeout: float | None) -> None:
        """Move queued wake-ups into the due set, waiting up to `timeout` for the first."""
        try:
            item = self._queue.get(timeout=timeout) if timeout != 0 else self._queue.get_nowait()
        except queue.Empty:
            return
        while True:
            key, delay = item
            due = time.monotonic() + delay
            # A delayed wake never postpones one already due: a file saved every few ms (an
            # editor, a tool) would otherwise push its run's wake-up back forever.
            self._due[key] = min(self._due.get(key, due), due)
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return

    def due_now(self) -> list[str]:
        """The keys whose time has come, in the order they were first asked for."""
        now = time.monotonic()
        return [key for key, when in self._due.items() if when <= now]

    def make_due(self, key: str) -> None:
        """Make `key` due now unless it already is due."""
        self._due.setdefault(key, 0.0)

    def done(self, key: str) -> None:
        """`key` is being looked at: it is no longer due."""
        self._due.pop(key, None)

    def waiting(self) -> bool:
        """Whether any key is due (now or later) or queued."""
        return bool(self._due) or not self._queue.empty()

    def seconds_to_next(self, busy: Collection[str]) -> float | None:
        """How long until the next key not in `busy` is due; None if there is none."""
        pending = [when for key, when in self._due.items() if key not in busy]
        if not pending:
            return None
        return max(0.0, min(pending) - time.monotonic())


# watchdog 7.1's recursive inotify watch warns, with the whole watch table in the message, when
# a new folder is registered twice (its creation event and the parent's rescan race). The second
# registration replaces the first with the same callback, so nothing is lost; without this
# filter every new run folder would print kilobytes to the daemon's console.
warnings.filterwarnings(
    "ignore", message="Callback with id .* already exists for watch", category=RuntimeWarning
)


class _StopRaceFilter(logging.Filter):
    """Drops watchdog 7.1's error for an inotify read that raced the observer's stop.

    Stopping the observer while an event is being read makes the emitter log "queue_events()
    called when the thread is inactive" at ERROR and drop that event, which is what stopping
    means: the daemon is shutting down, so the line would only alarm the person who stopped it.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return "called when the thread is inactive" not in record.getMessage()


logging.getLogger("watchdog.observers.inotify").addFilter(_StopRaceFilter())

INBOX = "inbox"
ARCHIVE = "archive"  # runs/archive/ and db/archive/ (multiverse.runs)
ALL = "*"
CONFIG = "config"  # runtime-mapping.yaml changed
DB_PREFIX = "db:"


def wake_key(home: Home, raw_path: str) -> str | None:
    """The wake-up a changed path asks for: the inbox, one run, a global table, or nothing."""
    path = Path(raw_path)
    try:
        parts = path.relative_to(home.root).parts
    except ValueError:
        return None
    if not parts or is_ignorable_name(parts[-1]):
        return None
    if path == home.mapping_file:
        return CONFIG
    if parts[0] == "inbox" and len(parts) == 2:
        return INBOX
    if parts[0] in ("runs", "db") and len(parts) >= 2 and parts[1] == ARCHIVE:
        return None  # archived runs are history: nothing there is served
    if parts[0] == "runs" and len(parts) == 4 and parts[2] == "db":
        return DB_PREFIX + str(path)  # a run table: merged if someone else saved it
    if parts[0] == "runs" and len(parts) >= 3 and re.fullmatch(RUN_ID, parts[1]):
        return parts[1]
    if parts[0] == "db" and len(parts) >= 2:
        return DB_PREFIX + str(path)
    return None


def run_of_table(home: Home, path: Path) -> str | None:
    """The run a table file belongs to (runs/<run_id>/db/<name>), None for a global table."""
    try:
        parts = path.relative_to(home.root).parts
    except ValueError:
        return None
    return parts[1] if len(parts) == 4 and parts[0] == "runs" and parts[2] == "db" else None


class _WakeHandler(FileSystemEventHandler):
    """Turns finished writes (closed, created, moved-to) and table deletions into wake-ups."""

    def __init__(self, home: Home, wake: Callable[[str], None]) -> None:
        self.home = home
        self.wake = wake

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory:
            return
        if isinstance(event, FileMovedEvent):
            raw = event.dest_path
        elif isinstance(event, FileClosedEvent | FileCreatedEvent | FileDeletedEvent):
            raw = event.src_path
        else:
            return
        key = wake_key(self.home, raw if isinstance(raw, str) else raw.decode())
        if key is None or (isinstance(event, FileDeletedEvent) and not key.startswith(DB_PREFIX)):
            return  # of deletions, only a table's matters (its rows are rebuilt)
        self.wake(key)


def start_watching(home: Home, wake: Callable[[str], None]) -> BaseObserver:
    """A running observer on inbox/ (flat), runs/ and db/ (recursive), and the home's own
    files (flat: runtime-mapping.yaml)."""
    handler = _WakeHandler(home, wake)
    observer = Observer()
    for folder, recursive in ((home.inbox, False), (home.runs, True), (home.db, True),
                              (home.root, False)):  # fmt: skip
        folder.mkdir(parents=True, exist_ok=True)
        observer.schedule(handler, str(folder), recursive=recursive)
    observer.daemon = True
    observer.start()
    return observer
