"""Remote steps (issue 28): what travels between the daemon and `multiverse worker`s, and the
Redis and Celery they travel over.

The public face of remote steps; its modules are private to it. Celery and redis are imported
only when a remote tier is used.

The rate desk: model calls made on workers are admitted by the daemon (issue 28).

The daemon's gateway keeps, per model endpoint, the calls in flight (`CallLimits`) and the
requests and tokens per minute (`RateLimits`), shared by every run. A worker's gateway asks the
daemon's desk before each call, over the broker's Redis, so workers on many machines together
stay within a provider's limits: `DeskLimits` and `DeskRates` stand in for the two on the
worker, and `RateDesk` serves them in the daemon with its own. A slot a worker never gives back
(the worker died) is taken back after its lease.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import structlog

from multiverse.gateway import CallLimits, RateLimits, Reservation
from multiverse.remote.exchange import (
    KEEP_SECONDS,
    PREFIX,
    TASK_NAME,
    WORKERS_EXTRA,
    BlobCache,
    BrokerUnreachable,
    Exchange,
    StepJob,
    StepOutcome,
    celery_app,
    inside_root,
    live_queues,
    missing_packages,
    queue_served,
    sha256_of,
    shown_url,
    step_key,
    step_of,
    task_id_of,
    writable,
)

log = structlog.get_logger(__name__)
POLL_SECONDS = 1.0


def _requests(desk: str) -> str:
    return f"{PREFIX}desk:{desk}"


def _reply(desk: str, ask: str) -> str:
    return f"{PREFIX}desk:{desk}:reply:{ask}"


class RateDesk:
    """Serves admissions to the daemon's limits for workers' model calls, in a thread."""

    def __init__(self, exchange: Exchange, limits: CallLimits, rates: RateLimits) -> None:
        self.exchange, self.limits, self.rates = exchange, limits, rates
        self.name = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._held: dict[str, tuple[str, threading.Event]] = {}  # ask → (its attempt, release)
        self._guard = threading.Lock()
        self._users = 0  # remote steps in flight that may ask
        self._thread: threading.Thread | None = None

    @contextmanager
    def open(self) -> Iterator[str]:
        """Serve while a remote step is in flight; the desk's name, for its job. The thread
        ends once no step is in flight and what they told (releases, settles) is handled."""
        with self._guard:
            self._users += 1
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="multiverse-rate-desk",
                                                daemon=True)  # fmt: skip
                self._thread.start()
        try:
            yield self.name
        finally:
            with self._guard:
                self._users -= 1

    def _serve(self) -> None:
        down = False
        while True:
            with self._guard:
                last = self._users == 0
            try:
                found = self._next(last)
            except Exception as error:  # the broker went away: the steps fail on their own
                if not down:
                    log.warning("rate_desk_unreachable", error=str(error))
                down = True
                if last and self._ended():
                    return
                threading.Event().wait(POLL_SECONDS)
                continue
            down = False
            if found is None:
                if last and self._ended():
                    return
                continue
            try:
                ask = json.loads(found)
            except ValueError:
                continue
            self._handle(ask)

    def _ended(self) -> bool:
        """End the thread if still no step is in flight (decided under the guard `open` takes,
        so a step opening now starts a new thread rather than count on this one)."""
        with self._guard:
            if self._users:
                return False
            self._thread = None
            return True

    def _next(self, last: bool) -> bytes | None:
        """The next ask: waiting a while for it, or (no step in flight) only what is there."""
        if last:
            found = self.exchange.client.lpop(_requests(self.name))
            return found if isinstance(found, bytes) else None
        popped = self.exchange.client.blpop([_requests(self.name)], timeout=POLL_SECONDS)
        return popped[1] if isinstance(popped, (list, tuple)) and isinstance(popped[1], bytes) \
            else None

    def _handle(self, ask: dict[str, Any]) -> None:
        op = ask.get("op")
        if op == "release":
            with self._guard:
                held = self._held.pop(str(ask.get("id")), None)
            if held is not None:
                held[1].set()
        elif op == "settle":
            reservation = Reservation(str(ask["key"]), int(ask["tokens"]), 0.0)
            self.rates.settle(reservation, int(ask.get("used", 0)))
        elif op in ("acquire", "reserve"):
            threading.Thread(target=self._admit, args=(ask,), daemon=True).start()

    def _admit(self, ask: dict[str, Any]) -> None:
        """Wait for what was asked (a slot, or the rate budget), then answer."""
        key, ask_id = str(ask["key"]), str(ask["id"])
        if ask["op"] == "reserve":
            reserved = self.rates.reserve(key, int(ask.get("tokens", 0)))
            self._answer(ask_id, {"tokens": reserved.tokens, "waited": reserved.waited})
            return
        release = threading.Event()
        with self._guard:
            self._held[ask_id] = (str(ask.get("owner", "")), release)
        with self.limits.slot(key):
            self._answer(ask_id, {"held": True})
            if not release.wait(float(ask.get("lease", 600))):
                log.warning("rate_desk_lease_expired", key=key, ask=ask_id)
        with self._guard:
            self._held.pop(ask_id, None)

    def release_all(self, owner: str) -> int:
        """Give back every slot an attempt holds (its worker was lost, or it was stopped)."""
        with self._guard:
            mine = [ask for ask, (who, _) in self._held.items() if who == owner]
            events = [self._held.pop(ask)[1] for ask in mine]
        for event in events:
            event.set()
        return len(events)

    def _answer(self, ask_id: str, answer: dict[str, Any]) -> None:
        reply = _reply(self.name, ask_id)
        try:
            pipe = self.exchange.client.pipeline(transaction=False)
            pipe.rpush(reply, json.dumps(answer))
            pipe.expire(reply, KEEP_SECONDS)
            pipe.execute()
        except Exception as error:
            log.warning("rate_desk_answer_lost", ask=ask_id, error=str(error))


class _Asking:
    """A worker's side of the desk: send an ask, wait for its answer."""

    def __init__(self, exchange: Exchange, desk: str, wait_seconds: float) -> None:
        self.exchange, self.desk, self.wait_seconds = exchange, desk, wait_seconds

    def tell(self, ask: dict[str, Any]) -> None:
        data, client = json.dumps(ask), self.exchange.client
        self.exchange.guarded("asking the rate desk",
                              lambda: client.rpush(_requests(self.desk), data))  # fmt: skip

    def ask(self, ask: dict[str, Any]) -> dict[str, Any]:
        ask = {**ask, "id": uuid.uuid4().hex}
        self.tell(ask)
        reply = _reply(self.desk, ask["id"])
        found = self.exchange.guarded(
            "waiting for the rate desk",
            lambda: self.exchange.client.blpop([reply], timeout=self.wait_seconds),
        )
        if not isinstance(found, (list, tuple)):
            raise BrokerUnreachable(
                f"the daemon's rate desk did not admit a model call within "
                f"{self.wait_seconds:g} s (is the daemon still running?)"
            )
        answer: dict[str, Any] = {**json.loads(found[1]), "id": ask["id"]}
        return answer


class DeskLimits(CallLimits):
    """Calls in flight, admitted by the daemon's desk (a worker's gateway)."""

    def __init__(
        self, exchange: Exchange, desk: str, wait_seconds: float, owner: str, lease: float
    ) -> None:
        super().__init__()
        self._asking = _Asking(exchange, desk, wait_seconds)
        self._owner, self._lease = owner, lease

    @contextmanager
    def slot(self, key: str) -> Iterator[None]:
        """Hold one of the daemon's slots of the endpoint for the duration of the block."""
        answer = self._asking.ask({"op": "acquire", "key": key, "lease": self._lease,
                                   "owner": self._owner})  # fmt: skip
        try:
            yield
        finally:
            self._asking.tell({"op": "release", "id": answer["id"]})


class DeskRates(RateLimits):
    """Requests and tokens per minute, reserved from the daemon's desk (a worker's gateway)."""

    def __init__(self, exchange: Exchange, desk: str, wait_seconds: float) -> None:
        super().__init__()
        self._asking = _Asking(exchange, desk, wait_seconds)

    def reserve(self, key: str, tokens: int) -> Reservation:
        """Reserve one request and `tokens` of the daemon's budgets; waits until covered."""
        answer = self._asking.ask({"op": "reserve", "key": key, "tokens": tokens})
        return Reservation(key, int(answer["tokens"]), float(answer["waited"]))

    def settle(self, reservation: Reservation, used: int) -> None:
        """Tell the daemon the tokens the answer used."""
        if reservation.tokens and used > 0:
            self._asking.tell({"op": "settle", "key": reservation.key,
                               "tokens": reservation.tokens, "used": used})  # fmt: skip


__all__ = [
    "TASK_NAME",
    "WORKERS_EXTRA",
    "BlobCache",
    "BrokerUnreachable",
    "DeskLimits",
    "DeskRates",
    "Exchange",
    "RateDesk",
    "StepJob",
    "StepOutcome",
    "celery_app",
    "inside_root",
    "live_queues",
    "missing_packages",
    "queue_served",
    "sha256_of",
    "shown_url",
    "step_key",
    "step_of",
    "task_id_of",
    "writable",
]
