"""`multiverse worker`: a Celery worker that does the steps of remote tiers (issue 28).

Each step runs the tier's real Executor (builtin, a model through the gateway, or a process
adapter) in a scratch home of its own, made from the files the daemon sent (fetched by content
hash, kept in the worker's cache), and reports the result signal and the files the role wrote.
The worker never writes a home: the daemon writes what it reports.

A beat says the step is alive and reads the daemon's word (cancel, or an attempt given up), upon
which the step's child processes are stopped as a local step's are. A delivery of an attempt
that is claimed, done or given up is dropped, so even a broker that hands a running step to a
second worker does not have it run twice.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from multiverse.config import (
    RuntimeMapping,
    Tier,
    effective_tiers,
    worker_time_limit,
    worker_visibility_seconds,
)
from multiverse.errors import MultiverseError
from multiverse.gateway import UsageLedger, UsageTotals
from multiverse.home import Home, visible_files
from multiverse.processes import stop_all_children
from multiverse.remote import (
    TASK_NAME,
    BlobCache,
    BrokerUnreachable,
    DeskLimits,
    DeskRates,
    Exchange,
    StepJob,
    StepOutcome,
    celery_app,
    step_of,
    writable,
)
from multiverse.roles import Declined, ExecutorRole, ResultSignal

if TYPE_CHECKING:
    from celery import Celery

log = structlog.get_logger(__name__)


class WorkerMismatch(MultiverseError):
    """This worker cannot serve the tier as the daemon asked (a key or a command missing)."""


@dataclass(frozen=True)
class WorkerPlace:
    """Who this worker is and where it keeps its scratch homes and its cache of files."""

    broker: str
    name: str
    folder: Path

    @property
    def cache(self) -> BlobCache:
        """The worker's files by content hash."""
        return BlobCache(self.folder / "cache")

    @property
    def scratch(self) -> Path:
        """Where each step's scratch home is made (and removed after it)."""
        return self.folder / "steps"


class Beat:
    """Renews the attempt's claim while the step runs; stops the step's children when the
    daemon asks (cancel, or the attempt given up)."""

    def __init__(self, exchange: Exchange, job: StepJob, worker: str) -> None:
        self.exchange, self.job, self.worker = exchange, job, worker
        self.stopped = threading.Event()  # the daemon asked the step to stop
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="multiverse-beat", daemon=True)

    def __enter__(self) -> Beat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        every = max(0.05, self.job.lost_after_seconds / 4)
        while not self._done.wait(every):
            try:
                asked = self.exchange.beat(self.job.task_id, self.worker,
                                           self.job.lost_after_seconds)  # fmt: skip
            except BrokerUnreachable as error:
                log.warning("worker_beat_failed", key=self.job.key, error=str(error))
                continue
            if asked and not self.stopped.is_set():
                self.stopped.set()
                log.info("worker_step_stop_asked", key=self.job.key,
                         children=stop_all_children())  # fmt: skip


_EXCHANGES: dict[str, Exchange] = {}  # one client per broker in each worker process


def exchange_of(broker: str) -> Exchange:
    """This process's client of the broker's Redis (made at its first step)."""
    if broker not in _EXCHANGES:
        _EXCHANGES[broker] = Exchange(broker)
    return _EXCHANGES[broker]


def run_step(job_text: str, place: WorkerPlace) -> str:
    """Do one delivered step and report it; returns how it ended (for the worker's log)."""
    job = StepJob.model_validate_json(job_text)
    exchange = exchange_of(place.broker)
    if not exchange.claim(job.task_id, place.name, job.lost_after_seconds):
        log.info("worker_duplicate_dropped", key=job.key)
        return "duplicate"
    with Beat(exchange, job, place.name) as beat:
        try:
            outcome = perform(job, exchange, place, beat)
        except Exception as error:  # the worker's own fault (a file gone from the broker …)
            log.exception("worker_step_crashed", key=job.key)
            why = (f"worker {place.name} could not do the step: {type(error).__name__}: "
                   f"{error}")  # fmt: skip
            outcome = StepOutcome(key=job.key, signal=ResultSignal(status="FAILED", error=why),
                                  worker=place.name)  # fmt: skip
    if beat.stopped.is_set():
        log.info("worker_step_stopped", key=job.key)
        return "stopped"
    exchange.finish(job.task_id, outcome)
    log.info("worker_step_done", key=job.key, status=outcome.signal.status,
             files=len(outcome.files))  # fmt: skip
    return outcome.signal.status


def perform(job: StepJob, exchange: Exchange, place: WorkerPlace, beat: Beat) -> StepOutcome:
    """Run the tier's role on the step in a scratch home; the signal and the files it wrote."""
    place.scratch.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="step-", dir=place.scratch)).resolve()
    try:
        place.cache.place(exchange, job.files, root)
        exchange.count_run(step_of(job.key))
        log.info("worker_step_started", key=job.key, files=len(job.files))
        ledger = UsageLedger(Home(root).run(job.run_id or "simple").root)
        before = ledger.totals()
        reply: str | None = None
        declined: str | None = None
        try:
            done = _run_role(job, root, place.broker)
        except WorkerMismatch as error:
            done = ResultSignal(status="FAILED", error=str(error))
        if isinstance(done, str):
            signal, reply = ResultSignal(status="COMPLETED"), done
        elif isinstance(done, Declined):
            signal, declined = ResultSignal(status="COMPLETED"), done.reason
        else:
            signal = done
        files = written_files(root, job)
        size = sum(len(data) for data in files.values())
        if size > job.max_result_bytes:
            signal = ResultSignal(status="FAILED", error=(
                f"the files the step wrote are {size:,} bytes, over remote.max_result_bytes "
                f"({job.max_result_bytes:,}); raise it in runtime-mapping.yaml, then retry"
            ))  # fmt: skip
            files = {}
        return StepOutcome(key=job.key, signal=signal, reply=reply, declined=declined,
                           files=exchange.put_files(files),
                           usage=usage_change(before, ledger.totals()),
                           worker=place.name)  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _run_role(job: StepJob, root: Path, broker: str) -> ResultSignal | str | Declined:
    role = worker_role(job, Home(root), os.environ, broker)
    if job.task is not None:
        return role.execute_task(job.task.model_copy(update={"home": str(root)}))
    if job.tool is not None:
        return role.execute_tool_task(job.tool.model_copy(update={"home": str(root)}))
    return role.simple_task(job.request or "", root)


def worker_role(
    job: StepJob, home: Home, environ: Mapping[str, str], broker: str
) -> ExecutorRole:
    """The tier's real Executor, as the daemon would make it locally, in the scratch home;
    WorkerMismatch if this worker cannot serve the tier the way the daemon asked."""
    from app.team import asked_mode, executor_role, make_gateway
    from executor.search import web_setup

    mapping = RuntimeMapping.model_validate(job.mapping)
    tier = Tier(job.tier)
    config = mapping.tier_mapping[tier].model_copy(update={"remote": None})
    mapping = mapping.model_copy(update={"tier_mapping": {**mapping.tier_mapping, tier: config}})
    effective = effective_tiers(mapping, environ)[tier]
    served = "process" if effective.adapter_type == "process" else effective.mode
    if served != asked_mode(config) or served != job.mode:
        raise WorkerMismatch(
            f"worker {socket.gethostname()} cannot serve tier {tier} with {job.mode} as asked: "
            f"{effective.reason}; set it in the worker's environment and restart the worker"
        )
    gateway = None
    if served != "builtin" and job.admission is not None:
        # Every call waits for the daemon's admission: its limits hold across all workers.
        exchange, wait = exchange_of(broker), job.step_timeout_seconds
        # A call holds its slot at most its whole time (the gateway's retries included).
        lease = config.timeout_seconds * 3 + 30
        limits = DeskLimits(exchange, job.admission, wait, job.task_id, lease)
        gateway = make_gateway(home, mapping, limits, DeskRates(exchange, job.admission, wait))
    elif served != "builtin":
        gateway = make_gateway(home, mapping)
    return executor_role(home, mapping, tier, gateway, web_setup(mapping, environ))


def written_files(root: Path, job: StepJob) -> dict[str, bytes]:
    """The files the role wrote or changed in the scratch home, where a worker may write."""
    from multiverse.remote import sha256_of

    found: dict[str, bytes] = {}
    for path in visible_files(root):
        if path.is_symlink():
            continue
        name = path.relative_to(root).as_posix()
        if not writable(job.run_id, name):
            continue
        data = path.read_bytes()
        if job.files.get(name) != sha256_of(data):
            found[name] = data
    return found


def usage_change(before: UsageTotals, after: UsageTotals) -> dict[str, object] | None:
    """What the step's model calls added to the run's usage (None: nothing)."""
    from multiverse.gateway import combined

    change = combined(after, before, -1)
    if change.calls == 0 and change.cache_hits == 0:
        return None
    return change.model_dump(mode="json", exclude={"run_id"})


def worker_app(place: WorkerPlace, visibility_seconds: float, time_limit: float) -> Celery:
    """The Celery app of this worker, serving the step task."""
    app = celery_app(place.broker, visibility_seconds, time_limit)

    from celery.signals import worker_ready

    @app.task(name=TASK_NAME)  # type: ignore[untyped-decorator]
    def step(job_text: str) -> str:
        return run_step(job_text, place)

    def ready(**_: object) -> None:
        log.info("worker_ready", name=place.name)  # what a supervisor (and the tests) wait for

    worker_ready.connect(ready, weak=False)
    return app


def warm(models: bool) -> None:
    """Import what a step needs once, in the parent of the pool processes."""
    import executor.model
    import executor.process
    import executor.search  # noqa: F401  (imported for the pool's sake)

    if models:
        from multiverse.gateway import load_litellm

        load_litellm()


def serve(
    place: WorkerPlace,
    queues: list[str],
    concurrency: int,
    step_seconds: list[float],
    visibility_seconds: float | None = None,
    models: bool = True,
) -> None:
    """Run the worker until it is stopped (Celery's own warm shutdown on SIGTERM/SIGINT).

    The roles (and litellm, with `models`) are imported before the pool forks: each pool
    process starts warm instead of paying seconds of imports at its first step."""
    warm(models)
    visibility = visibility_seconds or worker_visibility_seconds(step_seconds)
    app = worker_app(place, visibility, worker_time_limit(step_seconds))
    log.info("worker_serving", name=place.name, queues=queues, concurrency=concurrency,
             visibility_timeout=visibility)  # fmt: skip
    app.worker_main([
        "worker", "--queues", ",".join(queues), "--concurrency", str(concurrency),
        "--pool", "prefork", "--hostname", place.name, "--loglevel", "WARNING",
        "--without-gossip", "--without-mingle",
    ])  # fmt: skip
