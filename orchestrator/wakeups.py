"""The daemon's wake-ups (SPEC §4): keys to look at, each due at a time; never the state.

File events and finished steps put a key (a run_id, the inbox, a table, or everything) on a
thread-safe queue, possibly with a delay; the loop drains the queue into the due set and asks
which keys are due now and how long it may wait for the next.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Collection


class WakeUps:
    """Keys waiting to be looked at, by the monotonic time they are due."""

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[str, float]] = queue.Queue()
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
