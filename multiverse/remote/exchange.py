"""The Redis side of remote steps, shared by the daemon and the workers (issue 28).

Celery carries the job; this carries everything around it, under one key prefix:
- `blob:<sha256>`: a file's bytes, content-addressed, so a file already there is not sent
  again (and a worker keeps its own copy by hash: `BlobCache`);
- `claim:<task id>`: the worker running an attempt, kept alive by its beat; a delivery of an
  attempt that is claimed, done or abandoned is a duplicate and is dropped;
- `result:<task id>` and `done:<task id>`: the outcome, and a list the daemon blocks on;
- `cancel:<task id>`, `abandoned:<task id>`: the daemon's word to the worker;
- `ran:<home>/<run>/<step>`: how many times a step's role was started, over all attempts.

The Celery app of remote steps, as the daemon sends with it and a worker serves with it.

The settings are what long steps need (issue 28): one message at a time per worker process
(prefetch 1), the message acknowledged only once the step ended (`acks_late`) and given back
when the worker process died (`reject_on_worker_lost`), and Redis's `visibility_timeout` past the
longest step, so a step still running is never handed to a second worker. Celery is imported
here only, when a remote tier is used.

What travels between the daemon and a worker for one remote step (issue 28): the job (the
role's assignment, the tier to serve it with, the files it may read, by content hash) and the
outcome (the result signal, the files the role wrote, by content hash, and the usage it added).
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from multiverse.atomic import atomic_write_bytes
from multiverse.errors import MultiverseError

if TYPE_CHECKING:
    import redis

if TYPE_CHECKING:
    from celery import Celery
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from multiverse.roles import ResultSignal, TaskAssignment, ToolAssignment

TASK_NAME = "multiverse.step"  # the Celery task every worker serves


class Wire(BaseModel):
    """Base of the exchanged data: strict, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def step_key(home_id: str, run_id: str, step_id: str, attempt: int) -> str:
    """The idempotency key of one attempt of one step: home, run, step, attempt (run ids are
    only unique within a home, and homes may share a broker)."""
    return f"{home_id}/{run_id}/{step_id}/{attempt}"


def step_of(key: str) -> str:
    """The key of the step an attempt's key belongs to (every attempt of it shares it)."""
    return key.rsplit("/", 1)[0]


def task_id_of(key: str) -> str:
    """The Celery task id of an attempt (its key, in the characters a task id keeps)."""
    return "multiverse-" + key.replace("/", "-")


class StepJob(Wire):
    """One step sent to a worker: the role's assignment (its `home` is the daemon's; the worker
    puts its scratch home there), the tier to serve it, and the files it may read."""

    key: str
    kind: Literal["task", "tool", "simple"]
    task: TaskAssignment | None = None
    tool: ToolAssignment | None = None
    request: str | None = None  # a SIMPLE_TASK's request (no run: the reply comes back)
    mapping: dict[str, Any]  # the daemon's runtime-mapping, as data (keys stay names of vars)
    tier: str
    mode: str  # how the daemon sees the tier served: builtin, model or process
    files: dict[str, str] = Field(default_factory=dict)  # home-relative path → sha256
    max_result_bytes: int
    lost_after_seconds: float
    step_timeout_seconds: float
    admission: str | None = None  # the daemon's rate desk (a Redis list), for model calls

    @property
    def task_id(self) -> str:
        """The Celery task id of this attempt."""
        return task_id_of(self.key)

    @property
    def run_id(self) -> str:
        """The run the step belongs to ("" for a SIMPLE_TASK, which has none)."""
        assignment = self.task or self.tool
        return assignment.run_id if assignment is not None else ""


class StepOutcome(Wire):
    """What a worker reports for one attempt: the signal and the files it wrote."""

    key: str
    signal: ResultSignal
    reply: str | None = None  # a SIMPLE_TASK's answer (markdown)
    declined: str | None = None  # why a SIMPLE_TASK was declined (it becomes a run)
    files: dict[str, str] = Field(default_factory=dict)  # home-relative path → sha256
    usage: dict[str, Any] | None = None  # the model usage the step added (UsageTotals' fields)
    worker: str = ""


def writable(run_id: str, name: str) -> bool:
    """Whether a worker may have written this home-relative path: the run's workspace, logs
    and outputs only (the tables, signals and answers are the daemon's)."""
    parts = name.split("/")
    if not run_id or ".." in parts or name.startswith("/") or any(p.startswith(".") for p in parts):
        return False
    places = (("runs", run_id, "workspace"), ("runs", run_id, "logs"), ("outputs", run_id))
    return any(tuple(parts[: len(place)]) == place and len(parts) > len(place) for place in places)


PREFIX = "multiverse:"
KEEP_SECONDS = 24 * 3600  # blobs, results and marks outlive any step by a day, then go
CONNECT_SECONDS = 3.0


def key(kind: str, name: str) -> str:
    """The Redis key of one kind of thing (blob, claim, result …) named `name`."""
    return f"{PREFIX}{kind}:{name}"


class BrokerUnreachable(MultiverseError):
    """The broker could not be reached or answered with an error."""


def sha256_of(data: bytes) -> str:
    """The content address of some bytes."""
    return hashlib.sha256(data).hexdigest()


def connect(url: str) -> redis.Redis:
    """A client of the broker's Redis, failing within seconds when it is not there."""
    import redis

    return redis.Redis.from_url(
        url, socket_connect_timeout=CONNECT_SECONDS, socket_timeout=30, health_check_interval=30
    )


class Exchange:
    """The keys of remote steps on one Redis; every failure of Redis is a BrokerUnreachable."""

    def __init__(self, url: str, client: redis.Redis | None = None) -> None:
        self.url = url
        self.client = client if client is not None else connect(url)

    def guarded(self, what: str, action: object) -> object:
        """`action()` (or the value given); a Redis error becomes BrokerUnreachable."""
        import redis

        try:
            return action() if callable(action) else action
        except redis.RedisError as error:
            raise BrokerUnreachable(
                f"the broker {shown_url(self.url)} cannot be reached ({what}: {error}); start "
                "it, or correct `remote.broker` of the tier in runtime-mapping.yaml"
            ) from None

    def ping(self) -> None:
        """Raise BrokerUnreachable unless the broker answers."""
        self.guarded("ping", self.client.ping)

    # -- files, by content ---------------------------------------------------------------

    def put_files(self, files: Mapping[str, bytes]) -> dict[str, str]:
        """Store the files' bytes the broker does not hold yet; returns path → sha256."""
        manifest = {path: sha256_of(data) for path, data in files.items()}
        by_hash = {manifest[path]: data for path, data in files.items()}
        hashes = sorted(by_hash)

        def store() -> None:
            probe = self.client.pipeline(transaction=False)
            for digest in hashes:
                probe.expire(key("blob", digest), KEEP_SECONDS)  # kept another day if there
            present = probe.execute()
            upload = self.client.pipeline(transaction=False)
            for digest, there in zip(hashes, present, strict=True):
                if not there:
                    upload.set(key("blob", digest), by_hash[digest], ex=KEEP_SECONDS)
            upload.execute()

        self.guarded("storing files", store)
        return manifest

    def get_blob(self, digest: str) -> bytes:
        """The bytes of one stored file; BrokerUnreachable if they are gone or damaged."""
        data = self.guarded("reading a file", lambda: self.client.get(key("blob", digest)))
        if not isinstance(data, bytes) or sha256_of(data) != digest:
            raise BrokerUnreachable(
                f"the broker {shown_url(self.url)} no longer holds the file {digest[:12]}… (it was "
                "evicted or expired); give Redis more memory, then `multiverse retry` the run"
            )
        return data

    # -- one attempt ---------------------------------------------------------------------

    def claim(self, task_id: str, worker: str, seconds: float) -> bool:
        """Take an attempt for this worker; False if another holds it, or it is done or given
        up (a duplicate delivery)."""

        def take() -> bool:
            for mark in ("result", "abandoned"):
                if self.client.exists(key(mark, task_id)):
                    return False
            return bool(self.client.set(key("claim", task_id), worker, nx=True,
                                        px=int(seconds * 1000)))  # fmt: skip

        return bool(self.guarded("claiming a step", take))

    def beat(self, task_id: str, worker: str, seconds: float) -> bool:
        """Say the attempt is alive for `seconds` more; True if the daemon asked it to stop."""

        def renew() -> bool:
            pipe = self.client.pipeline(transaction=False)
            pipe.set(key("claim", task_id), worker, px=int(seconds * 1000))
            pipe.exists(key("cancel", task_id), key("abandoned", task_id))
            return bool(pipe.execute()[1])

        return bool(self.guarded("beat", renew))

    def holder(self, task_id: str) -> str | None:
        """The worker holding an attempt now (None: no one, or its beat stopped)."""
        value = self.guarded("reading a claim", lambda: self.client.get(key("claim", task_id)))
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else None

    def count_run(self, step: str) -> int:
        """Count one start of a step's role (`step`: `wire.step_of` an attempt's key); returns
        how many there were."""
        counter = key("ran", step)

        def count() -> int:
            pipe = self.client.pipeline(transaction=False)
            pipe.incr(counter)
            pipe.expire(counter, KEEP_SECONDS)
            return int(pipe.execute()[0])

        return int(str(self.guarded("counting", count)))

    def runs_of(self, step: str) -> int:
        """How many times a step's role was started, over every attempt."""
        value = self.guarded("counting", lambda: self.client.get(key("ran", step)))
        return int(value) if isinstance(value, bytes) else 0

    def finish(self, task_id: str, outcome: StepOutcome) -> None:
        """Store the outcome (the first one stays) and wake the daemon waiting for it."""

        def store() -> None:
            data = outcome.model_dump_json()
            if self.client.set(key("result", task_id), data, nx=True, ex=KEEP_SECONDS):
                pipe = self.client.pipeline(transaction=False)
                pipe.rpush(key("done", task_id), b"1")
                pipe.expire(key("done", task_id), KEEP_SECONDS)
                pipe.delete(key("claim", task_id))
                pipe.execute()

        self.guarded("storing the result", store)

    def wait_done(self, task_id: str, seconds: float) -> bool:
        """Block up to `seconds` for an attempt's outcome; True once it is stored."""
        done = key("done", task_id)
        found = self.guarded("waiting", lambda: self.client.blpop([done], timeout=seconds))
        if found is not None:
            self.guarded("waiting", lambda: self.client.rpush(done, b"1"))  # for a later reader
            return True
        return bool(self.guarded("waiting", lambda: self.client.exists(key("result", task_id))))

    def outcome(self, task_id: str) -> StepOutcome | None:
        """An attempt's stored outcome, if there is one."""
        data = self.guarded("reading a result", lambda: self.client.get(key("result", task_id)))
        return StepOutcome.model_validate_json(data) if isinstance(data, bytes) else None

    def mark(self, kind: str, task_id: str) -> None:
        """Leave the daemon's word on an attempt: `cancel` or `abandoned`."""
        marked = key(kind, task_id)
        self.guarded("marking a step", lambda: self.client.set(marked, b"1", ex=KEEP_SECONDS))

def shown_url(url: str) -> str:
    """A broker URL without its password, for messages."""
    if "@" not in url:
        return url
    scheme, rest = url.split("://", 1)
    return f"{scheme}://…@{rest.rsplit('@', 1)[1]}"


class BlobCache:
    """A worker's own copies of files, by content hash: a file already here is not fetched."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, digest: str) -> Path:
        """Where a file of this hash is kept."""
        return self.folder / digest[:2] / digest

    def fetch(self, exchange: Exchange, digest: str) -> Path:
        """The local copy of a file, fetched from the broker when this worker lacks it."""
        path = self.path(digest)
        if not path.is_file():
            atomic_write_bytes(path, exchange.get_blob(digest))
        return path

    def place(self, exchange: Exchange, files: Mapping[str, str], root: Path) -> None:
        """Put each file (home-relative path → hash) at its place below `root`."""
        for relative, digest in files.items():
            target = inside_root(root, relative)
            target.parent.mkdir(parents=True, exist_ok=True)
            # A copy, not a link: a command may edit a file in place, never the cached one.
            shutil.copyfile(self.fetch(exchange, digest), target)


def inside_root(root: Path, relative: str) -> Path:
    """`root/relative`, refused (ValueError) if it would leave `root`."""
    if not relative or Path(relative).is_absolute() or ".." in Path(relative).parts:
        raise ValueError(f"{relative!r} is not a path inside the home")
    return root / relative


INSPECT_SECONDS = 1.0  # how long live workers have to answer who they are
_IMPORT = threading.Lock()  # Celery's first import from several threads at once can fail


WORKERS_EXTRA = "pip install 'multiverse[workers]'"


def missing_packages() -> list[str]:
    """What remote steps need and this environment lacks (the `workers` extra): [] when ready."""
    return [name for name in ("celery", "redis") if importlib.util.find_spec(name) is None]


def celery_app(broker: str, visibility_seconds: float, time_limit: float | None = None) -> Celery:
    """A Celery app on `broker` with the settings of remote steps (no result backend: the
    outcome travels through the exchange)."""
    with _IMPORT:
        from celery import Celery

    app = Celery("multiverse", broker=broker, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_serializer="json",
        accept_content=["json"],
        task_time_limit=time_limit,
        broker_connection_retry_on_startup=True,
        broker_transport_options={
            "visibility_timeout": visibility_seconds,
            "socket_connect_timeout": 3,
        },
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
        worker_cancel_long_running_tasks_on_connection_loss=True,
    )
    return app


def live_queues(app: Celery) -> dict[str, list[str]]:
    """Each live worker of the app's broker → the queues it consumes (none answered: {})."""
    try:
        answer = app.control.inspect(timeout=INSPECT_SECONDS).active_queues()
    except Exception:  # the broker went away meanwhile: no worker can be reached either
        return {}
    return {
        str(name).removeprefix("celery@"): [str(queue.get("name")) for queue in queues]
        for name, queues in (answer or {}).items()
    }


def queue_served(app: Celery, queue: str) -> bool:
    """Whether a live worker consumes `queue` now (it may be busy with other steps)."""
    return any(queue in queues for queues in live_queues(app).values())
