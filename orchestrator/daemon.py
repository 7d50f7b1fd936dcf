"""The daemon loop (SPEC §4, §13): wake-ups → `tick()` → one step per run on a worker.

`tick()` does one pass and says whether it started work; `run(once=…)` repeats it, waiting on
the wake-up queue (never sleeping in a loop). Watchdog events and finished steps only put keys
on that queue; signal handlers only set the stop flag.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import structlog
from filelock import FileLock, Timeout

from multiverse.config import DaemonConfig
from multiverse.errors import TableError, UserError
from multiverse.models import FINAL_STATUSES, Status
from orchestrator.crew import Crew
from orchestrator.inbox import pending_requests
from orchestrator.intake import take_in
from orchestrator.runner import StepRunner
from orchestrator.watcher import ALL, DB_PREFIX, INBOX, start_watching

log = structlog.get_logger(__name__)
STOP_GRACE_SECONDS = 10.0


class DaemonAlreadyRunning(UserError):
    """Another daemon serves this home."""


class Daemon:
    """Serves one home: intake, then one step at a time per run, runs in parallel."""

    def __init__(self, crew: Crew, config: DaemonConfig | None = None) -> None:
        self.crew = crew
        self.config = config or DaemonConfig()
        self.runner = StepRunner(crew)
        self.stop_event = threading.Event()
        self.failed_runs: set[str] = set()
        self._queue: queue.Queue[tuple[str, float]] = queue.Queue()
        self._due: dict[str, float] = {}
        self._in_flight: dict[str, threading.Thread] = {}
        self._guard = threading.Lock()
        self._unhandled: set[str] = set()

    # -- wake-ups ------------------------------------------------------------------------

    def wake(self, key: str, delay: float = 0.0) -> None:
        """Ask for `key` (a run_id, the inbox, or everything) to be looked at."""
        self._queue.put((key, delay))

    def wake_debounced(self, key: str) -> None:
        """A file event: look after the debounce delay (editors write in several moves)."""
        self.wake(key, self.config.debounce_ms / 1000)

    def _drain(self, timeout: float | None) -> None:
        """Move queued wake-ups into the due set, waiting up to `timeout` for the first."""
        try:
            item = self._queue.get(timeout=timeout) if timeout != 0 else self._queue.get_nowait()
        except queue.Empty:
            return
        while True:
            key, delay = item
            due = time.monotonic() + delay
            self._due[key] = (
                min(self._due.get(key, due), due)
                if delay == 0
                else max(self._due.get(key, 0.0), due)
            )
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return

    # -- one pass ------------------------------------------------------------------------

    def tick(self) -> bool:
        """Start a step for every due key with nothing in flight; True if any work started."""
        self._drain(0)
        now = time.monotonic()
        due = [key for key, when in self._due.items() if when <= now]
        started = False
        for key in self._expand(due):
            if self._in_flight.get(key) is not None:
                continue  # its finish wakes it again
            if len(self._in_flight) >= self.config.max_parallel_runs:
                break
            self._due.pop(key, None)
            started |= self._start(key)
        return started

    def _expand(self, due: list[str]) -> list[str]:
        keys: list[str] = []
        for key in due:
            if key == ALL or (key.startswith(DB_PREFIX) and self._changed_by_someone(key)):
                self._due.pop(key, None)
                for extra in [INBOX, *self._open_runs()]:
                    self._due.setdefault(extra, 0.0)
                    keys.append(extra)
            elif key.startswith(DB_PREFIX):
                self._due.pop(key, None)
            else:
                keys.append(key)
        return list(dict.fromkeys(keys))

    def _changed_by_someone(self, key: str) -> bool:
        return not self.crew.store.is_current(Path(key[len(DB_PREFIX) :]))

    def _open_runs(self) -> list[str]:
        try:
            return [
                r.run_id for r in self.crew.process_runs.rows() if r.status not in FINAL_STATUSES
            ]
        except TableError as error:
            log.error("global_table_broken", error=str(error))
            return []

    def _start(self, key: str) -> bool:
        if key == INBOX:
            if not pending_requests(self.crew.home):
                return False
            self._launch(key, self._intake)
            return True
        try:
            decided = self.runner.decide(key)
        except TableError as error:
            self.runner._global_table_broken(error)
            return False
        if decided is None or not decided[1].is_work:
            return False
        view, step = decided
        self._launch(key, lambda: self.runner.perform(view, step))
        return True

    def _launch(self, key: str, work: Callable[[], None]) -> None:
        thread = threading.Thread(
            target=self._work, args=(key, work), name=f"step-{key}", daemon=True
        )
        with self._guard:
            self._in_flight[key] = thread
        thread.start()

    def _work(self, key: str, work: Callable[[], None]) -> None:
        try:
            work()
        except Exception:  # our own bug: log it, keep serving other runs
            log.exception("step_crashed", key=key)
        finally:
            with self._guard:
                self._in_flight.pop(key, None)
            if key != INBOX:
                self._note_failure(key)
            self.wake(key)

    def _note_failure(self, run_id: str) -> None:
        try:
            run = self.crew.process_runs.get(run_id)
        except TableError:
            return
        if run is not None and run.status is Status.FAILED:
            self.failed_runs.add(run_id)

    def _intake(self) -> None:
        for path in pending_requests(self.crew.home):
            if self.stop_event.is_set():
                return
            if path.name in self._unhandled:
                continue
            try:
                run_id = take_in(self.crew, path, self.config.inbox_max_bytes)
            except Exception:
                # Our bug or an unreadable file: log it once and leave the file where it is,
                # rather than retrying it in a loop (it is retried when the daemon restarts).
                log.exception("request_not_handled", name=path.name)
                self._unhandled.add(path.name)
                continue
            if run_id is not None:
                self.wake(run_id)
        self._warm_indexes()

    def _warm_indexes(self) -> None:
        """Build, off the request path, the indexes the next request will need."""

        def warm() -> None:
            with contextlib.suppress(TableError):  # reported where a step meets it
                self.crew.warm_indexes()

        threading.Thread(target=warm, name="warm-indexes", daemon=True).start()

    # -- the loop ------------------------------------------------------------------------

    def busy(self) -> bool:
        """Whether a step is in flight or a wake-up is waiting."""
        return bool(self._in_flight) or bool(self._due) or not self._queue.empty()

    def run(self, once: bool = False) -> int:
        """Serve until stopped (or, with `once`, until nothing advances); exit status."""
        lock = self._take_daemon_lock()
        try:
            observer = None if once else start_watching(self.crew.home, self.wake_debounced)
            self.wake(ALL)
            self._warm_indexes()
            log.info("daemon_started", home=str(self.crew.home.root), once=once)
            try:
                self._loop(once)
            finally:
                if observer is not None:
                    observer.stop()
                self._finish_in_flight()
                self._flush_behind()
            log.info("daemon_stopped", failed_runs=sorted(self.failed_runs))
        finally:
            lock.release()
        return 1 if once and self.failed_runs else 0

    def _loop(self, once: bool) -> None:
        while not self.stop_event.is_set():
            started = self.tick()
            if once and not started and not self.busy():
                return
            self._drain(self._wait_time(started))

    def _wait_time(self, started: bool) -> float | None:
        if started:
            return 0
        if len(self._in_flight) >= self.config.max_parallel_runs:
            return None  # a finishing step wakes the loop
        pending = [when for key, when in self._due.items() if key not in self._in_flight]
        if pending:
            return max(0.0, min(pending) - time.monotonic())
        return None  # block until a wake-up arrives (no polling: idle means idle)

    def _flush_behind(self) -> None:
        try:
            self.crew.flush_behind()
        except (TableError, OSError) as error:
            # Nothing is lost: pointers are recorded again and missing catalog rows rebuilt
            # from the files when the daemon next starts.
            log.warning("write_behind_not_flushed", error=str(error))

    def stop(self) -> None:
        """Ask the loop to stop after the steps in flight."""
        self.stop_event.set()
        self.wake("")

    def install_signal_handlers(self) -> None:
        """SIGINT/SIGTERM only set the stop flag."""

        def handle(signum: int, frame: FrameType | None) -> None:
            self.stop()

        signal.signal(signal.SIGINT, handle)
        signal.signal(signal.SIGTERM, handle)

    def _finish_in_flight(self) -> None:
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for thread in list(self._in_flight.values()):
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        if self._in_flight:
            # Abandoned: the step is redone on restart, which every step is safe for.
            log.warning("steps_abandoned", keys=sorted(self._in_flight))

    def _take_daemon_lock(self) -> FileLock:
        state = self.crew.home.state
        state.mkdir(parents=True, exist_ok=True)
        lock = FileLock(state / "daemon.lock", thread_local=False)
        try:
            lock.acquire(timeout=0)
        except Timeout as error:
            raise DaemonAlreadyRunning(
                f"another multiverse daemon is already serving {self.crew.home.root} "
                f"(pid {_read_pid(state / 'daemon.pid')}); stop it first"
            ) from error
        (state / "daemon.pid").write_text(str(os.getpid()), encoding="utf-8")
        return lock


def _read_pid(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip() or "?"
    except OSError:
        return "?"
