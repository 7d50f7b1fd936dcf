"""The one notice that `db/process_runs.md` was rebuilt, whichever thread saw it first.

A deleted register of runs is seen missing by two kinds of readers: the registry's look
(`registry.restore_run_rows`, woken by the deletion) and any write that recreates the file
while merging this process's rows back (`TableStore.on_restore`, from whatever thread wrote).
Either may come first, and the second may find the file already back. So a sighting is
recorded under a lock and said once: at once by a writer, or at the end of the registry's
look when the look is in progress (its message then also names the rows it added).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import structlog

from communicator.speaker import Speaker
from multiverse.contracts import Message, MessageKind
from multiverse.home import Home

log = structlog.get_logger(__name__)


class RegisterNotice:
    """Says that the register of runs was missing (or lacked rows) once per sighting."""

    def __init__(self, home: Home, speaker: Speaker, path: Path) -> None:
        self.home = home
        self.speaker = speaker
        self.path = path
        self._lock = threading.RLock()
        self._looking = 0  # depth of the registry's looks in progress (this lock's holder)
        self._pending = False

    @contextmanager
    def looking(self) -> Iterator[None]:
        """The registry's look: sightings made meanwhile are said at its end, by it."""
        with self._lock:
            self._looking += 1
            try:
                yield
            finally:
                self._looking -= 1

    def seen_missing(self, run_ids: Callable[[], list[str]]) -> None:
        """Record that the file was found missing; say so now unless a look will."""
        with self._lock:
            self._pending = True
            if not self._looking and self.path.exists():
                self._pending = False
                self.say(run_ids(), was_missing=True)

    def take(self) -> bool:
        """Whether a sighting waits to be said (and it is now the caller's to say)."""
        with self._lock:
            pending, self._pending = self._pending, False
            return pending

    def say(self, run_ids: list[str], *, was_missing: bool) -> None:
        """Tell the person the register was rebuilt (missing) or had rows put back."""
        where = self.home.relative(self.path)
        more = f" and {len(run_ids) - 10} more" if len(run_ids) > 10 else ""
        shown = ", ".join(run_ids[:10]) + more
        if was_missing:
            text = (
                f"`{where}` was missing: I rebuilt it from the run folders under runs/ "
                f"({len(run_ids)} run(s): {shown}). Runs that were waiting go on as before."
            )
        else:
            text = (
                f"`{where}` had no row for {len(run_ids)} run folder(s) under runs/ ({shown}): "
                "their rows are restored from the folders. To remove a run's row on purpose, "
                f"use `multiverse delete-row {where} RUN_ID`."
            )
        log.info("process_runs_restored", run_ids=run_ids, file_was_missing=was_missing)
        self.speaker.tell(Message(kind=MessageKind.NOTICE, facts={"text": text}))
