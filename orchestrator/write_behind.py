"""Write-behind: changes that arrive faster than a delay share one write.

Used for writes that only summarise what other files already say, so that a crash that loses
them loses nothing the next step cannot rebuild: where a run is and which files it made (the
global tables process_runs.md and knowledge_base_catalog.md, whose every atomic rewrite costs
the size of the history, 1 MB at 10,000 runs). Changes are gathered here and written
together at most `delay` seconds after the first of them, or at once when a step needs them
on disk. With a model behind the roles a step takes seconds, so each change still reaches the
disk on its own a moment after it happened; it is fast steps that share writes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

import structlog

log = structlog.get_logger(__name__)

K = TypeVar("K")
V = TypeVar("V")
FLUSH_DELAY_SECONDS = 0.2


class WriteBehind(Generic[K, V]):
    """Pending values by key (a newer value replaces an older one), written in one batch."""

    def __init__(
        self, name: str, write: Callable[[dict[K, V]], None], delay: float = FLUSH_DELAY_SECONDS
    ) -> None:
        self.name = name
        self.delay = delay
        self._write = write
        self._pending: dict[K, V] = {}
        # The batch being written: still "pending" to readers until it is on disk, so that no
        # one sees a value neither in the queue nor in the file.
        self._writing: dict[K, V] = {}
        self._guard = threading.Lock()
        self._flushing = threading.Lock()  # one batch at a time, so batches land in order
        self._timer: threading.Timer | None = None

    def put(self, key: K, value: V) -> None:
        """Remember a value to write; it is written within `delay` seconds."""
        with self._guard:
            self._pending[key] = value
            if self.delay > 0:
                if self._timer is None:
                    self._timer = threading.Timer(self.delay, self._flush_in_background)
                    self._timer.daemon = True
                    self._timer.start()
                return
        self.flush()

    def get(self, key: K) -> V | None:
        """The value waiting to be written for `key`, if any."""
        with self._guard:
            value = self._pending.get(key)
            return self._writing.get(key) if value is None else value

    def pending(self) -> dict[K, V]:
        """Every value waiting to be written (or being written now)."""
        with self._guard:
            return {**self._writing, **self._pending} if self._writing else dict(self._pending)

    def discard(self, key: K) -> V | None:
        """Forget the value waiting for `key` (a direct write is about to supersede it)."""
        with self._guard:
            return self._pending.pop(key, None)

    def flush(self) -> None:
        """Write everything waiting now; on failure it stays pending and the error is raised."""
        with self._flushing:
            with self._guard:
                batch, self._pending = self._pending, {}
                self._writing = batch
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
            if not batch:
                return
            try:
                self._write(batch)
            except BaseException:
                with self._guard:
                    self._pending = {**batch, **self._pending}  # newer values win
                raise
            finally:
                with self._guard:
                    self._writing = {}

    def _flush_in_background(self) -> None:
        try:
            self.flush()
        except Exception as error:
            # The table is broken or gone. The values stay pending: the next step that needs
            # them on disk flushes again and meets the error where it can be reported.
            log.warning("write_behind_failed", table=self.name, error=str(error))
