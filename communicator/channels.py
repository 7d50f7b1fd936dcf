"""The Communicator's further channels (SPEC §10.7): messages staged durably in an outbox and
delivered off the caller's thread, one worker per channel with bounded, spaced attempts.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import os
import queue
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from pydantic import ValidationError

from communicator.senders import CommandSender, DeliveryFailed, Envelope, Sender, WebhookSender
from multiverse.atomic import atomic_write_bytes
from multiverse.config import ChannelConfig, ChannelSettings, WebhookChannel
from multiverse.errors import StorageError
from multiverse.home import Home

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Pending:
    """One delivery waiting in the outbox."""

    path: Path
    channel: str
    envelope: Envelope


REFUSED = "refused"  # the outbox's subfolder of entries the daemon did not write


class Outbox:
    """The folder of pending deliveries, each signed with the home's outbox key (kept beside
    it, mode 0600): an entry anyone else drops there is refused, never delivered."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._counter = itertools.count()
        self._lock = threading.Lock()
        self._last_ns = 0
        self._key_bytes: bytes | None = None

    def stage(self, channel: str, envelope: Envelope) -> Path:
        """Write one pending delivery durably; StorageError when the disk refuses."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with self._lock:  # names strictly increase in this process, whatever the clock does
            self._last_ns = max(time.time_ns(), self._last_ns + 1)
            name = f"{self._last_ns:020d}-{next(self._counter):06d}-{channel}-{envelope.id}.json"
        data: dict[str, Any] = {"channel": channel, "envelope": envelope.model_dump(mode="json")}
        data["mac"] = self._mac(data)
        path = self.folder / name
        atomic_write_bytes(path, json.dumps(data, ensure_ascii=False).encode("utf-8") + b"\n")
        return path

    def _key(self) -> bytes:
        """The outbox key: made once (32 random bytes, readable by the owner only), then read."""
        if self._key_bytes is None:
            path = self.folder.parent / "outbox.key"
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o600)
            except FileExistsError:
                os.chmod(path, 0o600)  # never readable by others, whatever made it
            else:
                with os.fdopen(fd, "w", encoding="ascii") as handle:
                    handle.write(secrets.token_hex(32))
                    handle.flush()
                    os.fsync(handle.fileno())
            self._key_bytes = path.read_text(encoding="ascii").strip().encode("ascii")
        return self._key_bytes

    def _mac(self, data: dict[str, Any]) -> str:
        body = json.dumps({k: data[k] for k in ("channel", "envelope")}, sort_keys=True,
                          ensure_ascii=False).encode("utf-8")  # fmt: skip
        return hmac.new(self._key(), body, hashlib.sha256).hexdigest()

    def _refuse(self, path: Path, reason: str) -> None:
        """Move an entry the daemon did not write aside, with its reason; it is never sent."""
        aside = self.folder / REFUSED
        try:
            aside.mkdir(exist_ok=True)
            os.replace(path, aside / path.name)
            atomic_write_bytes(aside / f"{path.name}.reason.txt", f"{reason}\n".encode())
        except OSError as error:
            log.warning("channel_outbox_not_moved", path=path.name, error=str(error))
            self.remove(path)
        log.warning("channel_outbox_refused", path=path.name, reason=reason)

    def remove(self, path: Path) -> None:
        """Forget a delivery that is done (or given up)."""
        try:
            path.unlink(missing_ok=True)
        except OSError as error:  # sent again at the next start: a receiver dedupes by id
            log.warning("channel_outbox_not_removed", path=path.name, error=str(error))

    def pending(self) -> list[Pending]:
        """Every pending delivery, oldest first; an unreadable file is logged and removed."""
        if not self.folder.is_dir():
            return []
        found = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                signed = isinstance(data, dict) and isinstance(data.get("mac"), str)
                if not signed or not hmac.compare_digest(data["mac"], self._mac(data)):
                    self._refuse(path, "not written by this home's daemon: no valid signature "
                                       "of the outbox key")  # fmt: skip
                    continue
                found.append(
                    Pending(path, str(data["channel"]), Envelope.model_validate(data["envelope"]))
                )
            except (OSError, ValueError, KeyError, TypeError, ValidationError) as error:
                log.warning("channel_outbox_unreadable", path=path.name, error=str(error))
                self.remove(path)
        return found


MAX_RETRY_DELAY = 60.0


@dataclass(frozen=True)
class Delivery:
    """One message for one channel; `path` is its outbox file (None if it could not be written)."""

    channel: str
    envelope: Envelope
    path: Path | None


def retry_delay(attempt: int, first: float) -> float:
    """The wait after failed attempt number `attempt` (1-based): doubling, capped."""
    return min(first * 2.0 ** (attempt - 1), MAX_RETRY_DELAY)


class ChannelWorker:
    """Delivers one channel's messages one after another, so they arrive in the order said."""

    def __init__(
        self, channel: ChannelSettings, sender: Sender, outbox: Outbox, abort: threading.Event
    ) -> None:
        self.channel = channel
        self.sender = sender
        self.outbox = outbox
        self.abort = abort  # set when closing ran out of time: stop, leave the rest in the outbox
        self._queue: queue.Queue[Delivery | None] = queue.Queue()
        self._thread = threading.Thread(
            target=self._serve, name=f"channel-{channel.name}", daemon=True
        )

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def put(self, delivery: Delivery) -> None:
        """Queue a delivery behind the ones already waiting."""
        self._queue.put(delivery)

    def finish(self) -> None:
        """Ask the thread to stop once the queued deliveries are done."""
        self._queue.put(None)

    def join(self, timeout: float) -> bool:
        """Wait for the thread at most `timeout` seconds; True if it has ended."""
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def waiting(self) -> int:
        """About how many deliveries are still queued."""
        return self._queue.qsize()

    def _serve(self) -> None:
        while True:
            delivery = self._queue.get()
            if delivery is None or self.abort.is_set():
                return
            try:
                self._deliver(delivery)
            except Exception as error:  # a bug here must not end the channel's thread
                log.warning(
                    "channel_delivery_crashed", channel=self.channel.name,
                    message_id=delivery.envelope.id, error=f"{type(error).__name__}: {error}",
                )  # fmt: skip
                self._forget(delivery)

    def _deliver(self, delivery: Delivery) -> None:
        """Attempt up to max_attempts times; the outbox file goes once delivered or given up."""
        envelope = delivery.envelope
        where = {"channel": self.channel.name, "message_id": envelope.id, "run_id": envelope.run_id}
        for attempt in range(1, self.channel.max_attempts + 1):
            try:
                self.sender.send(envelope)
            except DeliveryFailed as failure:
                last = attempt == self.channel.max_attempts or not failure.retryable
                if last:
                    log.warning(
                        "channel_delivery_abandoned", **where, kind=envelope.kind.value,
                        attempts=attempt, error=failure.reason,
                        note="the message stays in messages.md",
                    )  # fmt: skip
                    self._forget(delivery)
                    return
                log.info("channel_attempt_failed", **where, attempt=attempt, error=failure.reason)
                if self.abort.wait(retry_delay(attempt, self.channel.retry_delay_seconds)):
                    return  # closing: the outbox file is sent at the next start
                continue
            log.info("channel_delivered", **where, kind=envelope.kind.value, attempts=attempt)
            self._forget(delivery)
            return

    def _forget(self, delivery: Delivery) -> None:
        if delivery.path is not None:
            self.outbox.remove(delivery.path)


CLOSE_GRACE_SECONDS = 5.0


def id_marker(message_id: str) -> str:
    """How a message's id is written in its messages.md entry."""
    return f"<!-- id:{message_id} -->"


def sender_for(channel: ChannelConfig, home: Home, environ: Mapping[str, str]) -> Sender:
    """The sender of one configured channel."""
    if isinstance(channel, WebhookChannel):
        return WebhookSender(channel, environ)
    return CommandSender(channel, home.root, environ)


class Channels:
    """Every configured channel of a home, with its worker and the shared outbox."""

    def __init__(
        self,
        home: Home,
        channels: Sequence[ChannelConfig],
        environ: Mapping[str, str],
        grace_seconds: float = CLOSE_GRACE_SECONDS,
    ) -> None:
        self.home = home
        self.outbox = Outbox(home.state / "outbox")
        self.grace_seconds = grace_seconds
        self._abort = threading.Event()
        self._workers = {
            channel.name: ChannelWorker(
                channel, sender_for(channel, home, environ), self.outbox, self._abort
            )
            for channel in channels
        }
        self._lock = threading.Lock()
        self._started = False
        self._closed = False

    def start(self) -> None:
        """Replay the outbox and start the workers; once, and only under the daemon's lock."""
        with self._lock:
            if self._started:
                return
            self._started = True
            replayed = self._replay()
            for worker in self._workers.values():
                worker.start()
        if replayed:
            log.info("channel_outbox_replayed", deliveries=replayed)

    def stage(self, envelope: Envelope) -> list[Delivery]:
        """Write the envelope's deliveries (one per channel taking its kind) to the outbox."""
        deliveries = []
        for name, worker in self._workers.items():
            if not worker.channel.takes(envelope.kind):
                continue
            path: Path | None
            try:
                path = self.outbox.stage(name, envelope)
            except StorageError as error:  # still delivered now, only not after a crash
                log.warning("channel_outbox_unwritable", channel=name, error=str(error))
                path = None
            deliveries.append(Delivery(name, envelope, path))
        return deliveries

    def discard(self, deliveries: list[Delivery]) -> None:
        """Drop staged deliveries of a message that was not said after all."""
        for delivery in deliveries:
            if delivery.path is not None:
                self.outbox.remove(delivery.path)

    def post(self, deliveries: list[Delivery]) -> None:
        """Hand said messages to their workers (returns at once)."""
        for delivery in deliveries:
            self._workers[delivery.channel].put(delivery)

    def close(self) -> None:
        """Wait a bounded time for the queued deliveries; what is left is sent at next start."""
        with self._lock:
            started, closed, self._closed = self._started, self._closed, True
        if closed:
            return
        if not started:  # nothing was queued
            for worker in self._workers.values():
                worker.sender.close()
            return
        deadline = time.monotonic() + self.grace_seconds
        for worker in self._workers.values():
            worker.finish()
        left = []
        for name, worker in self._workers.items():
            if worker.join(max(0.0, deadline - time.monotonic())):
                worker.sender.close()
            else:
                left.append(name)
        if left:
            self._abort.set()
            log.warning("channel_deliveries_left", channels=left, note="sent at the next start")

    def _replay(self) -> int:
        """Queue the outbox's deliveries whose message was said; drop the rest."""
        said: dict[str, str] = {}
        count = 0
        for pending in self.outbox.pending():
            worker = self._workers.get(pending.channel)
            if worker is None:
                log.warning("channel_outbox_dropped", channel=pending.channel, reason="unknown")
                self.outbox.remove(pending.path)
            elif self._was_said(pending, said):
                worker.put(Delivery(pending.channel, pending.envelope, pending.path))
                count += 1
            else:
                self.outbox.remove(pending.path)  # never said: the redone step says it anew
        return count

    def _was_said(self, pending: Pending, said: dict[str, str]) -> bool:
        run_id = pending.envelope.run_id
        if run_id is None:
            return True  # no messages.md to compare with: sent at least once
        if run_id not in said:
            try:
                said[run_id] = self.home.run(run_id).messages.read_text(encoding="utf-8")
            except OSError:
                said[run_id] = ""
        return id_marker(pending.envelope.id) in said[run_id]


def open_channels(
    home: Home, channels: Sequence[ChannelConfig], environ: Mapping[str, str]
) -> Channels | None:
    """The home's channels, or None when none is configured."""
    return Channels(home, channels, environ) if channels else None
