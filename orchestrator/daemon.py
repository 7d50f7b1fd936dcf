"""The daemon loop (SPEC §4, §13): wake-ups → `tick()` → one step per run on a worker.

`tick()` does one pass and says whether it started work; `run(once=…)` repeats it, waiting on
the wake-up queue (never sleeping in a loop). Watchdog events and finished steps only put keys
on that queue; signal handlers only set the stop flag.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import structlog

from multiverse.config import DaemonConfig, default_parallel_runs
from multiverse.errors import MultiverseError, StorageError, TableError
from multiverse.home import (
    BEAT_SECONDS,
    Beat,
    remove_beat,
    take_daemon_lock,
    write_beat,
)
from multiverse.models import FINAL_STATUSES, Status
from multiverse.processes import (
    allow_children,
    allow_run_children,
    stop_all_children,
    stop_leftover_children,
    stop_run_children,
)
from orchestrator.archiving import archive_runs, due_for_archive, forget_tombstoned
from orchestrator.crew import Collaborators, Reload, reconfigured
from orchestrator.evidence import stop_waiting
from orchestrator.inbox import InboxEntry, survey_inbox
from orchestrator.intake import act, consider_all
from orchestrator.perform import StepRunner, wants_a_look
from orchestrator.upkeep import (
    ALL,
    ARCHIVE,
    CONFIG,
    DB_PREFIX,
    INBOX,
    WakeUps,
    finish_cut_short,
    remove_orphan_temps,
    restore_run_rows,
    run_of_table,
    start_watching,
)

log = structlog.get_logger(__name__)
STOP_GRACE_SECONDS = 10.0
FAULT_RETRY_SECONDS = 5.0


SERVICES = frozenset({INBOX, ARCHIVE, CONFIG})  # keys that are not runs
ARCHIVE_DELAY_SECONDS = 2.0  # after a step: one look at the policy for a burst of steps
ARCHIVE_LOOK_SECONDS = 3600.0  # runs grow old without an event: look again hourly


class Daemon:
    """Serves one home: intake, then one step at a time per run, runs in parallel."""

    def __init__(
        self, crew: Collaborators, config: DaemonConfig | None = None, reload: Reload | None = None
    ) -> None:
        self.crew = crew
        self.reload = reload  # runtime-mapping.yaml read again when it changes
        self.runner = StepRunner(crew)
        self._configure(config or DaemonConfig())
        self.stop_event = threading.Event()
        # `start --once` stops where only the user (or a deadline) can move things on.
        self._once = False
        self._looked_before_exit = False  # `start --once` looks at the archive policy last
        self.failed_runs: set[str] = set()
        self.wakeups = WakeUps()
        self._in_flight: dict[str, threading.Thread] = {}
        self._guard = threading.Lock()
        self._unhandled: set[str] = set()
        self._waiting_for_tables: set[str] = set()  # inbox names blocked by a broken table
        self._interrupted: set[str] = set()  # runs in flight whose children a CANCEL stopped
        self.steps_finished = 0  # steps of runs done since start (said when it stops)
        self._started_at = datetime.now(UTC)
        self._next_beat = 0.0
        self._warmers: list[threading.Thread] = []  # joined before `run` returns
        self._previous_handlers: dict[int, Any] = {}  # restored when `run` returns

    def _configure(self, config: DaemonConfig) -> None:
        self.config = config  # a bare DaemonConfig has no model tier: max_parallel_runs unset
        self.parallel_runs = config.max_parallel_runs or default_parallel_runs(())
        self.runner.pause_before = config.pause_before

    # -- wake-ups ------------------------------------------------------------------------

    def wake(self, key: str, delay: float = 0.0) -> None:
        """Ask for `key` (a run_id, the inbox, or everything) to be looked at."""
        self.wakeups.wake(key, delay)

    def wake_debounced(self, key: str) -> None:
        """A file event: look after the debounce delay (editors write in several moves).

        Events within the delay after the first share its wake-up; what is read then is
        trusted only once settled (`multiverse.store.tablefile`), so a save in several moves that
        outlasts the delay is still read whole.
        """
        self.wake(key, self.config.debounce_ms / 1000)

    # -- one pass ------------------------------------------------------------------------

    def tick(self) -> bool:
        """Start a step for every due key with nothing in flight; True if any work started."""
        self.wakeups.drain(0)
        due = self.wakeups.due_now()
        started = False
        for key in self._expand(due):
            if self._in_flight.get(key) is not None:
                self._interrupt_if_cancelled(key)
                continue  # its finish wakes it again
            if len(self._in_flight) >= self.parallel_runs:
                break
            self.wakeups.done(key)
            started |= self._start(key)
        return started

    def _interrupt_if_cancelled(self, key: str) -> None:
        """A run woken while its step is in flight: if CANCEL or PAUSE was written, stop its
        children and its remote step. Only an interrupt: the step ends without a result
        (`StepInterrupted`), the run's next decision is the CANCEL or PAUSE step (the step is
        redone if the run goes on); a step without a child simply ends first."""
        if key in SERVICES or key in self._interrupted:
            return
        if not stop_waiting(self.crew.home.run(key)):
            return
        with self._guard:  # the step's end (`_work`) allows the run's children again
            if key not in self._in_flight:
                return
            self._interrupted.add(key)
            stopped = stop_run_children(key)
        log.info("run_cancel_interrupts", run_id=key, children=stopped)

    def _expand(self, due: list[str]) -> list[str]:
        """The runs (and the inbox) that due keys stand for."""
        keys: list[str] = []
        for key in due:
            if key == ALL:
                self.wakeups.done(key)
                keys += self._everything()
            elif key == CONFIG:
                self.wakeups.done(key)
                config = reconfigured(self.crew, self.reload) if self.reload else None
                if config is not None:
                    self._configure(config)
            elif key.startswith(DB_PREFIX):
                self.wakeups.done(key)
                keys += self._table_changed(Path(key[len(DB_PREFIX) :]))
            else:
                keys.append(key)
        return list(dict.fromkeys(keys))

    def _everything(self) -> list[str]:
        """The inbox and every run that may advance, all due now."""
        self._waiting_for_tables.clear()  # a table changed: intake may work again
        extras = [INBOX, *self._open_runs(), *([ARCHIVE] if self._archives() else [])]
        for extra in extras:
            self.wakeups.make_due(extra)
        return extras

    def _table_changed(self, path: Path) -> list[str]:
        """A table file changed: if someone else saved it, merge their save, then look again."""
        if self.crew.store.is_current(path):
            return []  # our own write
        if path == self.crew.process_runs.path:
            return self._everything()  # rebuilds missing rows first, then merges
        run_id = run_of_table(self.crew.home, path)
        if run_id is not None and not self.crew.home.run(run_id).request.exists():
            return []  # the run's folder was removed: nothing to put back
        self._recheck(path)
        if run_id is None:
            return self._everything()
        self.wakeups.make_due(run_id)
        return [run_id]

    def _recheck(self, path: Path) -> None:
        """Put back what a save erased of this process's rows (reported by the crew)."""
        try:
            self.crew.store.recheck(path)
        except TableError as error:
            if run_of_table(self.crew.home, path) is None:
                self.runner.report_global(error)
            # A broken run table fails its run at the run's next decision.
        except StorageError as error:
            log.warning("table_not_merged", path=str(path), error=str(error))

    def _open_runs(self) -> list[str]:
        """Runs that are not final, and failed runs with an answer or a retry under way."""
        try:
            restore_run_rows(self.crew)
            rows = self.crew.process_runs.rows()
        except TableError as error:
            self.runner.report_global(error)
            return []
        except StorageError as error:
            log.warning("process_runs_not_restored", error=str(error))
            return []
        return [
            row.run_id
            for row in rows
            if row.status not in FINAL_STATUSES
            or (row.status is Status.FAILED and wants_a_look(self.crew.home.run(row.run_id)))
        ]

    def _start(self, key: str) -> bool:
        if key == INBOX:
            skip = self._unhandled | self._waiting_for_tables
            survey = survey_inbox(self.crew.home, self.config.inbox_settle_ms, skip=skip)
            if survey.wait is not None:
                # Come back when the earliest unsettled file may have settled; no file, no poll.
                self.wake(INBOX, delay=survey.wait)
            if not survey.ready:
                return False
            self._launch(key, lambda: self._intake(survey.ready))
            return True
        if key == ARCHIVE:
            return self._start_archive()
        try:
            decided = self.runner.decide(key)
        except TableError as error:
            self.runner.report_global(error)
            return False
        except StorageError as error:  # a merge could not be written back: try again later
            self.runner.report_machine_fault(error, None)
            self.wake(key, FAULT_RETRY_SECONDS)
            return False
        if decided is None or not decided[1].is_work:
            if decided is not None:
                self.runner.note_wait(*decided)
                if decided[1].wake_after is not None and not self._once:
                    self.wake(key, decided[1].wake_after)  # an approval's deadline
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
        finished = False
        try:
            work()
            finished = key not in SERVICES
        except Exception:  # our own bug: log it, keep serving other runs
            log.exception("step_crashed", key=key)
        finally:
            if key not in SERVICES:
                self._note_failure(key)
            # Leaving flight and the wake-up that follows are one move under the guard, which
            # `busy()` takes too: a loop that wakes by its own timeout (the heartbeat) in
            # between would otherwise see nothing in flight and nothing due, and `--once`
            # would stop with the run half-way.
            with self._guard:
                self._in_flight.pop(key, None)
                if key in self._interrupted:
                    self._interrupted.discard(key)
                    allow_run_children(key)
                self.steps_finished += finished
                # A run paused by a broken global table is woken when a table changes; a
                # failure the disk did not let us record is tried again a little later.
                if key == ARCHIVE:
                    if self._archives():
                        self.wake(ARCHIVE, ARCHIVE_LOOK_SECONDS)  # runs age: look again later
                elif key not in self.runner.paused:
                    self.wake(key, FAULT_RETRY_SECONDS if key in self.runner.unrecorded else 0.0)
                    if key != INBOX and self._archives():
                        self.wake(ARCHIVE, ARCHIVE_DELAY_SECONDS)

    def _archives(self) -> bool:
        """Whether this daemon looks at the archive policy while it serves (not `--once`)."""
        return not self._once and self._has_policy()

    def _has_policy(self) -> bool:
        """Whether the mapping asks for final runs to be archived by the daemon."""
        return bool(self.config.live_final_runs or self.config.archive_after_days)

    def _start_archive(self) -> bool:
        """Archive the final runs the policy says are due, on a worker (none due: nothing)."""
        if not self._has_policy():
            return False
        try:
            rows = self.crew.process_runs.rows()
        except TableError:
            return False  # said by the runs' own steps; archiving waits for a readable table
        due = due_for_archive(
            rows,
            datetime.now(UTC),
            self.config.archive_after_days,
            self.config.live_final_runs,
        )
        due = [run_id for run_id in due if run_id not in self._in_flight]
        if not due:
            if self.config.archive_after_days and self._archives():
                self.wake(ARCHIVE, ARCHIVE_LOOK_SECONDS)  # runs age without an event
            return False
        self._launch(ARCHIVE, lambda: archive_runs(self.crew, due, self._started_at))
        return True

    def _note_failure(self, run_id: str) -> None:
        try:
            run = self.crew.process_runs.get(run_id)
        except TableError:
            return
        if run is not None and run.status is Status.FAILED:
            self.failed_runs.add(run_id)
        else:
            self.failed_runs.discard(run_id)  # retried since

    def _intake(self, settled: list[InboxEntry]) -> None:
        """Take in (or turn away) the settled entries; `_start` schedules a look at the rest.

        Their modes are decided several at once (`consider_all`); each is then taken in, one
        at a time in inbox order, and its run woken at once.
        """
        decisions = consider_all(self.crew, settled, self.config.inbox_max_bytes)
        for entry, decision in zip(settled, decisions, strict=True):
            if self.stop_event.is_set():
                for later in decisions:
                    later.cancel()  # not begun: left in inbox/ for the next start
                return
            try:
                run_id = act(self.crew, decision.result())
            except (TableError, StorageError) as error:
                # A broken global table or a full disk: the request stays in inbox/, taken
                # once a table changes (or the daemon restarts).
                self.runner.report_blocked(error)
                self._waiting_for_tables.add(entry.path.name)
                continue
            except Exception:
                # Our bug or an unreadable file: log it once and leave the file where it is,
                # rather than retrying it in a loop (it is retried when the daemon restarts).
                log.exception("request_not_handled", name=entry.path.name)
                self._unhandled.add(entry.path.name)
                continue
            if run_id is not None:
                self.wake(run_id)
        self._warm_indexes()

    def _warm_indexes(self) -> None:
        """Build, off the request path, the indexes the next request will need."""

        def warm() -> None:
            with contextlib.suppress(MultiverseError):  # reported where a step meets it
                self.crew.warm_indexes()

        thread = threading.Thread(target=warm, name="warm-indexes", daemon=True)
        self._warmers = [*(t for t in self._warmers if t.is_alive()), thread]
        thread.start()

    # -- the loop ------------------------------------------------------------------------

    def busy(self) -> bool:
        """Whether a step is in flight or a wake-up is waiting."""
        with self._guard:
            return bool(self._in_flight) or self.wakeups.waiting()

    def run(self, once: bool = False, serving: Callable[[], None] | None = None) -> int:
        """Serve until stopped (or, with `once`, until nothing advances); exit status.

        `serving` is called once the home is this daemon's (its lock taken): a second daemon
        refused says only why. When it returns, no thread of its own is left running and the
        signal handlers `install_signal_handlers` replaced are back (it can run again in the
        same process).
        """
        try:
            return self._serve(once, serving)
        finally:
            for signum, handler in self._previous_handlers.items():
                signal.signal(signum, handler)
            self._previous_handlers.clear()

    def _serve(self, once: bool, serving: Callable[[], None] | None) -> int:
        self._once = once
        lock = take_daemon_lock(self.crew.home)
        try:
            if serving is not None:
                serving()
            observer = None if once else start_watching(self.crew.home, self.wake_debounced)
            self.crew.reserve.ensure()
            remove_orphan_temps(self.crew.home)
            allow_children()
            # Before any step is redone: the children a killed daemon left are stopped.
            stop_leftover_children(self.crew.home.runs, self.crew.home.state)
            finish_cut_short(self.crew)  # an archive or a fork a crash cut short
            forget_tombstoned(self.crew)
            # Under the lock: the channels' outbox of a killed daemon is sent on now.
            self.crew.speaker.start()
            self.wake(ALL)
            self._warm_indexes()
            log.info("daemon_started", home=str(self.crew.home.root), once=once)
            self._started_at = datetime.now(UTC)
            try:
                self._loop(once)
            finally:
                if self.stop_event.is_set():
                    stop_all_children()  # asked to stop: steps in flight end now
                remove_beat(self.crew.home.state)
                if observer is not None:
                    observer.stop()
                    observer.join()
                self._finish()
                self.crew.speaker.close()  # bounded wait for channel deliveries
                # Before exiting, put back what saves of others erased and no event reported.
                for path in self.crew.store.written_tables():
                    self._recheck(path)
            log.info("daemon_stopped", failed_runs=sorted(self.failed_runs))
        finally:
            lock.release()
        return 1 if once and self.failed_runs else 0

    def _loop(self, once: bool) -> None:
        while not self.stop_event.is_set():
            started = self.tick()
            self._beat()
            if once and not started and not self.busy():
                # The policy, as a serving daemon looks a moment after a burst of steps: a
                # `start --once` from cron keeps the live tables as small as `start` does.
                if not self._looked_before_exit:
                    self._looked_before_exit = True
                    if self._start_archive():
                        with self._guard:
                            archiving = self._in_flight.get(ARCHIVE)
                        if archiving is not None:
                            archiving.join()
                return
            self.wakeups.drain(self._wait_time(started))

    def _wait_time(self, started: bool) -> float:
        if started:
            return 0
        if len(self._in_flight) >= self.parallel_runs:
            return BEAT_SECONDS  # a finishing step wakes the loop; the beat is due anyway
        # Block until a wake-up arrives, or the next heartbeat (idle costs one beat a while).
        upcoming = self.wakeups.seconds_to_next(self._in_flight)
        return BEAT_SECONDS if upcoming is None else min(upcoming, BEAT_SECONDS)

    def _beat(self) -> None:
        """Rewrite the heartbeat file when it is due (`multiverse.heartbeat`)."""
        now = time.monotonic()
        if now < self._next_beat:
            return
        self._next_beat = now + BEAT_SECONDS
        beat = Beat(pid=os.getpid(), started_at=self._started_at, beat_at=datetime.now(UTC))
        try:
            write_beat(self.crew.home.state, beat)
        except OSError as error:  # a full disk: the daemon serves on, doctor says "stuck"
            log.warning("heartbeat_not_written", error=str(error))

    def stop(self) -> None:
        """Ask the loop to stop after the steps in flight; it stops their child processes as it
        ends (`_serve`). It takes no lock the loop may hold, so a signal handler may call it."""
        self.stop_event.set()
        self.wake("")

    def install_signal_handlers(self) -> None:
        """SIGINT/SIGTERM only ask the loop to stop."""

        def handle(signum: int, frame: FrameType | None) -> None:
            self.stop()

        for signum in (signal.SIGINT, signal.SIGTERM):
            self._previous_handlers.setdefault(signum, signal.getsignal(signum))
            signal.signal(signum, handle)

    def _finish(self) -> None:
        """Wait (a bounded time) for the steps in flight, then the index builds: none writes
        once the lock is released, and with none left children may be started again."""
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for thread in [*self._in_flight.values(), *self._warmers]:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        self._warmers.clear()
        if self._in_flight:
            # Abandoned: the step is redone on restart, which every step is safe for.
            log.warning("steps_abandoned", keys=sorted(self._in_flight))
        else:  # stopped whole: whatever runs in this process next may start children again
            allow_children()
