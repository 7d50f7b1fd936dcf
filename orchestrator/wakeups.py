"""The daemon's wake-ups (SPEC §4): keys to look at, each due at a time, never the state; and file
events as wake-ups (watchdog handlers only put keys on a queue).
"""

from __future__ import annotations

import logging
import queue
import re
import time
import warnings
from collections.abc import Callable, Collection
from pathlib import Path

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

from multiverse.home import Home
from multiverse.models import RUN_ID
from orchestrator.inbox_survey import is_ignorable_name


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
ARCHIVE = "archive"  # runs/archive/ and db/archive/ (multiverse.runs.archive)
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
