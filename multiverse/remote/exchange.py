"""The Redis side of remote steps, shared by the daemon and the workers (issue 28).

Celery carries the job; this carries everything around it, under one key prefix:
- `blob:<sha256>`: a file's bytes, content-addressed, so a file already there is not sent
  again (and a worker keeps its own copy by hash: `BlobCache`);
- `claim:<task id>`: the worker running an attempt, kept alive by its beat; a delivery of an
  attempt that is claimed, done or abandoned is a duplicate and is dropped;
- `result:<task id>` and `done:<task id>`: the outcome, and a list the daemon blocks on;
- `cancel:<task id>`, `abandoned:<task id>`: the daemon's word to the worker;
- `ran:<home>/<run>/<step>`: how many times a step's role was started, over all attempts.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from multiverse.atomic import atomic_write_bytes
from multiverse.errors import MultiverseError
from multiverse.remote.wire import StepOutcome

if TYPE_CHECKING:
    import redis

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

    def is_marked(self, kind: str, task_id: str) -> bool:
        """Whether the daemon left that word on an attempt."""
        return bool(self.guarded("reading", lambda: self.client.exists(key(kind, task_id))))


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


def read_files(root: Path, relatives: Iterable[str]) -> dict[str, bytes]:
    """The bytes of files below `root`, by their relative paths."""
    return {relative: (root / relative).read_bytes() for relative in relatives}
