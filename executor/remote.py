"""RemoteExecutor: the Executor's steps done by `multiverse worker`s (issue 28), behind the
same seam as a local Executor; the Orchestrator does not know which it has.

For one step the daemon sends the assignment and the files it may read (content-addressed on
the broker's Redis, bounded), waits in the step's thread, and writes what the worker's role
wrote into the workspace and outputs as a local step does: the worker never writes the home.

Exactly-once in effect: each attempt has a key (run, step, attempt) and a record in
`runs/<run>/logs/remote.jsonl`. A worker lost mid-step (its beat stops) has the step sent again
once; a delivery of an attempt already claimed, done or given up is dropped by the worker; only
the outcome of the attempt waited for is taken, once; a redone step (the daemon restarted)
takes the stored outcome of its last attempt instead of running it again.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import uuid
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from executor.builtin import BuiltinExecutor
from multiverse.atomic import atomic_write_bytes, write_temp
from multiverse.config import RemoteConfig, RuntimeMapping, Tier, worker_visibility_seconds
from multiverse.errors import StepInterrupted
from multiverse.home import Home, visible_files
from multiverse.processes import stop_signal
from multiverse.remote import (
    TASK_NAME,
    BrokerUnreachable,
    Exchange,
    RateDesk,
    StepJob,
    StepOutcome,
    celery_app,
    queue_served,
    shown_url,
    step_key,
    task_id_of,
    writable,
)
from multiverse.roles import Declined, ResultSignal, TaskAssignment, ToolAssignment

if TYPE_CHECKING:
    from celery import Celery

log = structlog.get_logger(__name__)
HOME_ID = "home-id"  # in the home's state folder
RECORD = "remote.jsonl"  # in the run's logs: every attempt sent, and how it ended
WAIT_SECONDS = 0.5  # one blocking wait on the broker between looks at stop, beat and deadline
ENDINGS = ("taken", "lost", "abandoned", "failed", "interrupted")


class RemoteExecutor:
    """The Executor role served by workers of a broker's queue."""

    def __init__(
        self,
        home: Path,
        mapping: RuntimeMapping,
        tier: Tier,
        mode: str,
        fallback: BuiltinExecutor | None = None,
        desk: RateDesk | None = None,
    ) -> None:
        config = mapping.tier_mapping[tier].remote
        assert config is not None
        self.config: RemoteConfig = config
        self._home = Path(home).resolve()
        self._mapping, self._tier, self._mode = mapping, tier, mode
        self._fallback = fallback or BuiltinExecutor()
        self.desk = desk  # admits the workers' model calls to this daemon's limits
        self._app: Celery | None = None
        self._exchange: Exchange | None = None
        self._guard = threading.Lock()
        self._home_id: str | None = None

    def execute_task(self, assignment: TaskAssignment) -> ResultSignal:
        """Do one core task on a worker; any failure is a FAILED signal."""
        return self._step("task", assignment, assignment.task.task_id)

    def execute_tool_task(self, assignment: ToolAssignment) -> ResultSignal:
        """Do one tool task on a worker (charts and searches are the roles' work as well)."""
        return self._step("tool", assignment, assignment.tool_task.tool_task_id)

    def summarize(self, path: Path) -> str:
        """The builtin extractive summary, here (the file is in the home)."""
        return self._fallback.summarize(path)

    def simple_task(self, request: str, home: Path) -> str | Declined:
        """A SIMPLE_TASK answered on a worker by the tier's role (a model tier's model); the
        builtin engine's answer here for a builtin tier, or when no worker could answer."""
        if self._mode == "builtin":
            return self._fallback.simple_task(request, home)
        try:
            exchange = self.exchange
            exchange.ping()
            files = inputs_files(self._home, self.config.max_context_bytes)
            with stop_signal("") as stop, self._desk_open() as desk:
                for attempt in (1, 2):  # a worker lost: once more
                    key = step_key(self.home_id, "simple", uuid.uuid4().hex, attempt)
                    self._publish(key, files, exchange, desk, request=request)
                    ended = self._wait(key, exchange, stop)
                    if isinstance(ended, StepOutcome):
                        return _replied(ended)
                    self._revoke(exchange, task_id_of(key), "abandoned")
                    if ended != "lost":
                        break
            why = ended
        except StepInterrupted:
            raise
        except (BrokerUnreachable, ContextTooLarge) as error:
            why = str(error)
        log.warning("remote_simple_task_local", why=why)
        return self._fallback.simple_task(request, home)

    # -- one step ------------------------------------------------------------------------

    def _step(
        self, kind: str, assignment: TaskAssignment | ToolAssignment, step_id: str
    ) -> ResultSignal:
        run_id = assignment.run_id
        record = AttemptRecord(Home(self._home).run(run_id).logs / RECORD, step_id)
        try:
            exchange = self.exchange
            exchange.ping()
            with stop_signal(run_id) as stop, self._desk_open() as desk:
                signal = self._until_done(kind, assignment, step_id, exchange, record, stop, desk)
        except StepInterrupted:
            raise
        except (BrokerUnreachable, ContextTooLarge) as error:
            signal = _failed(f"{error}; then `multiverse retry {run_id}`")
        except Exception as error:  # the contract: nothing escapes into the Orchestrator
            log.exception("remote_step_crashed", run_id=run_id, step=step_id)
            signal = _failed(f"remote executor error: {type(error).__name__}: {error}")
        log.info("remote_step_done", run_id=run_id, step=step_id, status=signal.status,
                 error=signal.error, queue=self.config.queue)  # fmt: skip
        return signal

    def _until_done(
        self,
        kind: str,
        assignment: TaskAssignment | ToolAssignment,
        step_id: str,
        exchange: Exchange,
        record: AttemptRecord,
        stop: Any,
        desk: str | None,
    ) -> ResultSignal:
        pending = record.open_attempt()
        if pending is not None:  # the daemon stopped while it ran: take its result if any
            outcome = exchange.outcome(task_id_of(pending))
            if outcome is not None:
                return self._taken(outcome, assignment, exchange, record, pending, again=True)
            if exchange.holder(task_id_of(pending)) is None:
                self._give_up(exchange, record, pending, "abandoned")
                pending = None
        files = self._context(assignment)
        lost = 0
        while True:
            if pending is None:
                key = step_key(self.home_id, assignment.run_id, step_id, record.attempts() + 1)
                self._send(kind, assignment, key, files, exchange, record, desk)
            else:
                key, pending = pending, None
            try:
                ended = self._wait(key, exchange, stop)
            except StepInterrupted:
                record.add(key, "interrupted")
                raise
            if isinstance(ended, StepOutcome):
                return self._taken(ended, assignment, exchange, record, key, again=False)
            if ended != "lost":
                self._give_up(exchange, record, key, "failed", ended)
                return _failed(f"{ended}; then `multiverse retry {assignment.run_id}`")
            self._give_up(exchange, record, key, "lost")
            lost += 1
            if lost > 1:
                return _failed(
                    f"the workers of queue {self.config.queue!r} were lost twice while doing "
                    f"{step_id} (no beat for {self.config.lost_after_seconds:g} s); see the "
                    f"workers' logs, then `multiverse retry {assignment.run_id}`"
                )
            log.warning("remote_worker_lost", run_id=assignment.run_id, key=key)

    def _desk_open(self) -> AbstractContextManager[str | None]:
        """The rate desk serving while the step is in flight (none for a builtin tier)."""
        return self.desk.open() if self.desk is not None else nullcontext()

    def _context(self, assignment: TaskAssignment | ToolAssignment) -> dict[str, bytes]:
        return context_files(self._home, assignment, self.config.max_context_bytes)

    def _send(
        self,
        kind: str,
        assignment: TaskAssignment | ToolAssignment,
        key: str,
        files: dict[str, bytes],
        exchange: Exchange,
        record: AttemptRecord,
        desk: str | None,
    ) -> None:
        task = assignment if isinstance(assignment, TaskAssignment) else None
        tool = assignment if isinstance(assignment, ToolAssignment) else None
        sent = self._publish(key, files, exchange, desk, task=task, tool=tool)
        record.add(key, "sent", files=sent)

    def _publish(
        self, key: str, files: dict[str, bytes], exchange: Exchange, desk: str | None,
        **work: TaskAssignment | ToolAssignment | str | None,
    ) -> int:
        """Store the files and send the job (a task, a tool task or a request); how many files
        it names."""
        manifest = exchange.put_files(files)
        kind = "task" if work.get("task") else "tool" if work.get("tool") else "simple"
        job = StepJob.model_validate({
            "key": key, "kind": kind, **work,
            "mapping": self._mapping.model_dump(mode="json"), "tier": self._tier.value,
            "mode": self._mode, "files": manifest, "admission": desk,
            "max_result_bytes": self.config.max_result_bytes,
            "lost_after_seconds": self.config.lost_after_seconds,
            "step_timeout_seconds": self.config.step_timeout_seconds,
        })  # fmt: skip
        try:
            self.app.send_task(TASK_NAME, args=[job.model_dump_json()], task_id=job.task_id,
                               queue=self.config.queue, retry=False)  # fmt: skip
        except Exception as error:  # kombu's errors of a broker that went away
            raise BrokerUnreachable(
                f"the step could not be sent to {shown_url(self.config.broker)}: {error}"
            ) from None
        log.info("remote_step_sent", key=key, queue=self.config.queue, files=len(manifest))
        return len(manifest)

    @property
    def app(self) -> Celery:
        """The Celery app that sends to this tier's broker (made once, by the first step)."""
        with self._guard:  # runs' first steps come at once; Celery's import is not reentrant
            if self._app is None:
                visibility = worker_visibility_seconds([self.config.step_timeout_seconds])
                self._app = celery_app(self.config.broker, visibility)
            return self._app

    @property
    def exchange(self) -> Exchange:
        """The broker's Redis, one client (a pool of connections) for every step."""
        with self._guard:
            if self._exchange is None:
                self._exchange = Exchange(self.config.broker)
            return self._exchange

    @property
    def home_id(self) -> str:
        """This home's identity, in every key it sends (run ids are unique within a home)."""
        with self._guard:
            if self._home_id is None:
                self._home_id = home_identity(Home(self._home))
            return self._home_id

    def _wait(self, key: str, exchange: Exchange, stop: Any) -> StepOutcome | str:
        """The attempt's outcome, "lost", or why it failed; StepInterrupted on a stop.

        Not yet claimed past `pickup_timeout_seconds`, the step fails only if no live worker
        serves its queue: behind busy workers it waits its turn. Its time limit runs from its
        claim."""
        task_id = task_id_of(key)
        config = self.config
        since = time.monotonic()  # sent, or last seen waiting behind live workers
        claimed: float | None = None
        while True:
            if stop.is_set():
                self._revoke(exchange, task_id, "cancel")
                raise StepInterrupted(f"the remote step {key} was stopped")
            if exchange.wait_done(task_id, WAIT_SECONDS):
                outcome = exchange.outcome(task_id)
                if outcome is not None:
                    return outcome
            now = time.monotonic()
            if exchange.holder(task_id) is not None:
                claimed = now if claimed is None else claimed
            elif exchange.outcome(task_id) is not None:
                continue  # it finished between two looks
            elif claimed is not None:
                return "lost"
            elif now - since > config.pickup_timeout_seconds:
                if not queue_served(self.app, config.queue):
                    return (
                        f"no worker took the step from queue {config.queue!r} of "
                        f"{shown_url(config.broker)} within {config.pickup_timeout_seconds:g} s "
                        f"and none serves it; start one (`multiverse worker --queue "
                        f"{config.queue}`)"
                    )
                log.info("remote_step_queued", key=key, queue=config.queue)
                since = now
            if claimed is not None and now - claimed > config.step_timeout_seconds:
                return (
                    f"the step took longer than {config.step_timeout_seconds:g} s on a worker "
                    "(remote.step_timeout_seconds) and was stopped"
                )

    def _revoke(self, exchange: Exchange, task_id: str, word: str) -> None:
        """Tell the worker to stop the attempt (its beat reads it) and Celery to drop it; the
        model-call slots it holds at the desk are given back."""
        exchange.mark(word, task_id)
        if self.desk is not None:
            self.desk.release_all(task_id)
        try:
            self.app.control.revoke(task_id, terminate=True, signal="SIGTERM")
        except Exception as error:  # the mark is enough: the worker's beat stops the step
            log.warning("remote_revoke_failed", task_id=task_id, error=str(error))

    def _give_up(
        self, exchange: Exchange, record: AttemptRecord, key: str, how: str, why: str = ""
    ) -> None:
        self._revoke(exchange, task_id_of(key), "abandoned")
        record.add(key, how, why=why)

    def _taken(
        self,
        outcome: StepOutcome,
        assignment: TaskAssignment | ToolAssignment,
        exchange: Exchange,
        record: AttemptRecord,
        key: str,
        again: bool,
    ) -> ResultSignal:
        """Write the attempt's files into the home and return its signal (taken once)."""
        written = write_outcome_files(self._home, assignment.run_id, outcome.files, exchange)
        if outcome.usage is not None:
            add_usage(self._home, assignment.run_id, outcome.usage)
        record.add(key, "taken", worker=outcome.worker, files=written, after_restart=again)
        return outcome.signal


def _replied(outcome: StepOutcome) -> str | Declined:
    if outcome.reply is not None:
        return outcome.reply
    if outcome.declined is not None:
        return Declined(reason=outcome.declined)
    return Declined(reason=outcome.signal.error or "")


def home_identity(home: Home) -> str:
    """The home's identity in the keys it sends: a random word kept in its state folder (made
    the first time), with the home's place, so that a copy of a home elsewhere is another."""
    path = home.state / HOME_ID
    if not path.exists():
        tmp = write_temp(path, uuid.uuid4().hex.encode("ascii"))
        try:
            os.link(tmp, path)  # never replaces one another process made meanwhile
        except FileExistsError:
            pass
        finally:
            Path(tmp).unlink(missing_ok=True)
    word = path.read_text(encoding="ascii").strip()
    return hashlib.sha256(f"{word}:{home.root}".encode()).hexdigest()[:16]


class ContextTooLarge(Exception):
    """The files a step may read are more than `remote.max_context_bytes`."""


def _failed(error: str) -> ResultSignal:
    return ResultSignal(status="FAILED", error=error)


def context_files(
    home: Path, assignment: TaskAssignment | ToolAssignment, limit: int
) -> dict[str, bytes]:
    """What a step's role may read, by home-relative path: the inputs (assets, guidelines), its
    run's request, spec, usage, workspace and outputs, and the files its task names; no hidden
    file, nothing that leaves the home. ContextTooLarge past `limit` bytes."""
    layout = Home(home)
    run = layout.run(assignment.run_id)
    named = [run.request, run.spec, run.root / "usage.json", run.workspace, run.outputs]
    task = assignment.task
    references = [*task.related_references, *(row.file_path for row in assignment.catalog)]
    named += [home / reference.strip() for reference in references if reference.strip()]
    return _bounded(home, [layout.assets, layout.guidelines, *named], limit)


def inputs_files(home: Path, limit: int) -> dict[str, bytes]:
    """What a SIMPLE_TASK may read: the home's assets and guidelines."""
    layout = Home(home)
    return _bounded(home, [layout.assets, layout.guidelines], limit)


def _bounded(home: Path, paths: list[Path], limit: int) -> dict[str, bytes]:
    """The files of these paths (a folder: all below it) that may travel, by home-relative
    name; ContextTooLarge past `limit` bytes."""
    found: dict[str, Path] = {}
    for path in paths:
        for file in visible_files(path) if path.is_dir() else [path]:
            name = _shippable(home, file)
            if name is not None:
                found.setdefault(name, file)
    total = 0
    files: dict[str, bytes] = {}
    for name, file in sorted(found.items()):
        data = file.read_bytes()
        total += len(data)
        if total > limit:
            raise ContextTooLarge(
                f"the files this step may read pass remote.max_context_bytes ({limit:,} bytes) "
                f"at {name}; raise the limit or move large files out of assets/"
            )
        files[name] = data
    return files


def _shippable(home: Path, path: Path) -> str | None:
    """The home-relative name of a regular file inside the home that is not hidden."""
    try:
        if not path.is_file() or not path.resolve().is_relative_to(home):
            return None
        name = path.relative_to(home).as_posix()
    except (OSError, ValueError):
        return None
    return None if any(part.startswith(".") for part in name.split("/")) else name


def write_outcome_files(
    home: Path, run_id: str, files: Mapping[str, str], exchange: Exchange
) -> int:
    """Write a worker's files into the home, atomically; returns how many were written."""
    written = 0
    for name, digest in sorted(files.items()):
        if not writable(run_id, name):
            log.warning("remote_file_refused", run_id=run_id, path=name)
            continue
        target = home / name
        if not target.parent.resolve().is_relative_to(home):
            log.warning("remote_file_refused", run_id=run_id, path=name)
            continue
        atomic_write_bytes(target, exchange.get_blob(digest))
        written += 1
    return written


def add_usage(home: Path, run_id: str, usage: dict[str, Any]) -> None:
    """Add what a worker's model calls spent to the run's usage.json."""
    from multiverse.gateway import UsageLedger, UsageTotals

    change = UsageTotals.model_validate({**usage, "run_id": run_id})
    UsageLedger(Home(home).run(run_id).root).add(change)


class AttemptRecord:
    """The attempts of one step, in the run's `logs/remote.jsonl` (one JSON line each)."""

    def __init__(self, path: Path, step_id: str) -> None:
        self.path, self.step_id = path, step_id

    def _lines(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        lines = []
        for line in text.splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                continue  # a line cut by a crash
            if isinstance(item, dict) and item.get("step") == self.step_id:
                lines.append(item)
        return lines

    def attempts(self) -> int:
        """How many attempts of the step were sent."""
        return sum(1 for item in self._lines() if item.get("event") == "sent")

    def open_attempt(self) -> str | None:
        """The key of the step's last attempt, if it was sent and has not ended."""
        lines = self._lines()
        sent = [item["key"] for item in lines if item.get("event") == "sent"]
        if not sent:
            return None
        ended = {item["key"] for item in lines if item.get("event") in ENDINGS}
        return sent[-1] if sent[-1] not in ended else None

    def add(self, key: str, event: str, **facts: object) -> None:
        """Append one event of an attempt."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = {"at": datetime.now(UTC).isoformat(timespec="milliseconds"), "step": self.step_id,
                "key": key, "event": event, **facts}  # fmt: skip
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
