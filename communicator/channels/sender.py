"""What a channel's sender is: one attempt to hand one envelope over, or a DeliveryFailed."""

from __future__ import annotations

from typing import Protocol

from communicator.channels.envelope import Envelope
from multiverse.errors import MultiverseError


class DeliveryFailed(MultiverseError):
    """One attempt did not deliver; `retryable` says whether another attempt may succeed."""

    def __init__(self, reason: str, retryable: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable


class Sender(Protocol):
    """Delivers envelopes to one channel."""

    def send(self, envelope: Envelope) -> None:
        """Make one attempt; raise DeliveryFailed when it did not deliver."""

    def close(self) -> None:
        """Release what the sender holds (connections)."""
