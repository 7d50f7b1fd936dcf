"""One prompt in flight per run (SPEC §4, §11): a second is refused, never queued."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

PROMPT_IN_PROGRESS = "PROMPT_IN_PROGRESS"


class RunLocks:
    """A non-blocking lock per run_id; different runs never wait on each other."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._busy: set[str] = set()

    @contextmanager
    def hold(self, run_id: str) -> Iterator[bool]:
        """Yields True with the run's lock held, or False (holding nothing) if it is taken."""
        with self._guard:
            taken = run_id in self._busy
            if not taken:
                self._busy.add(run_id)
        if taken:
            yield False
            return
        try:
            yield True
        finally:
            with self._guard:
                self._busy.discard(run_id)

    def busy(self, run_id: str) -> bool:
        """Whether a prompt of this run is in flight now."""
        with self._guard:
            return run_id in self._busy
