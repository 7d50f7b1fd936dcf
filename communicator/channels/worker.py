"""One channel's worker thread: its deliveries in order, each with bounded, spaced attempts."""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from pathlib import Path

import structlog

from communicator.channels.envelope import Envelope
from communicator.channels.outbox import Outbox
from communicator.channels.sender import DeliveryFailed, Sender
from multiverse.channel_config import ChannelSettings

log = structlog.get_logger(__name__)
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
