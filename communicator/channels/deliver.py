"""The Communicator's further channels (SPEC §10.7): stage durably, deliver off the caller's thread.

The Speaker stages a message's deliveries in the outbox before messages.md gets the message
(under the same lock), then posts them to one worker per channel once it is said. Nothing here
blocks or fails a run: an attempt that fails is logged and retried a bounded number of times,
and the message stays in messages.md whatever a channel does.

Started once the daemon holds its lock, the outbox is replayed: a delivery whose message reached
messages.md is sent; one whose message never did (the daemon died between the two writes, and
the step is redone, saying it anew) is dropped, so channels get exactly what messages.md has.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import structlog

from communicator.channels.command import CommandSender
from communicator.channels.envelope import Envelope
from communicator.channels.outbox import Outbox, Pending
from communicator.channels.sender import Sender
from communicator.channels.webhook import WebhookSender
from communicator.channels.worker import ChannelWorker, Delivery
from multiverse.channel_config import ChannelConfig, WebhookChannel
from multiverse.errors import StorageError
from multiverse.home import Home

log = structlog.get_logger(__name__)
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
