"""The Communicator role: the only code that speaks to the user (SPEC §10.7).

Its public face is `Speaker`, the single door through which anything reaches the user: the
console, runs/<run_id>/messages.md, replies and channels. What is said comes from a
`CommunicatorRole` (`communicator.builtin`, `communicator.model`); how it leaves, from
`communicator.channels` and `communicator.senders`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import structlog
from filelock import FileLock

from communicator.builtin import BuiltinCommunicator
from communicator.channels import Channels, Delivery, id_marker
from communicator.senders import Envelope, envelope_of
from multiverse.atomic import atomic_write_text
from multiverse.home import Home
from multiverse.roles import CommunicatorRole, Message

log = structlog.get_logger(__name__)
MESSAGES_TITLE = "# Messages\n\nEverything the Communicator said about this run, newest last.\n"


def print_to_console(text: str) -> None:
    """The default console channel: standard output, flushed."""
    sys.stdout.write(text.rstrip("\n") + "\n")
    sys.stdout.flush()


class Speaker:
    """The single door through which anything reaches the user."""

    def __init__(
        self,
        home: Home,
        role: CommunicatorRole,
        console: Callable[[str], None] = print_to_console,
        channels: Channels | None = None,
    ) -> None:
        self.home = home
        self.role = role
        self.console = console
        self.channels = channels
        self.fallback = BuiltinCommunicator()

    def start(self) -> None:
        """Start the further channels, replaying their outbox; call it holding the daemon lock."""
        if self.channels is not None:
            self.channels.start()

    def close(self) -> None:
        """Wait a bounded time for deliveries to the further channels (at daemon shutdown)."""
        if self.channels is not None:
            self.channels.close()

    def compose(self, message: Message) -> str:
        """The role's words, or the template's when the role fails (facts stay verbatim)."""
        try:
            return self.role.compose(message)
        except Exception as error:  # a model-backed role must never silence a report
            log.warning("communicator_fallback", kind=message.kind, error=str(error))
            return self.fallback.compose(message)

    def tell(self, message: Message, once: str | None = None) -> str:
        """Say a message on the console, append it to the run's messages.md, send it on.

        With `once`, a key unique in the run, the message is said at most once: the entry in
        messages.md carries the key, so a step redone after a crash does not say it again.
        The further channels get it once it is in messages.md, off the caller's thread.
        """
        if message.run_id and not message.language:
            language = self.home.run(message.run_id).language()
            message = message.model_copy(update={"language": language})
        text = self.compose(message)
        envelope = envelope_of(message, text, once)
        self.start()  # a no-op once started (the daemon starts it under its lock)
        heading = f"[{message.run_id}] " if message.run_id else ""
        if message.run_id:
            path = self.home.run(message.run_id).messages
            deliveries = self._append(path, envelope, once)
            if deliveries is None:
                return text  # said before a crash
        else:
            deliveries = self._stage(envelope)
        self.console(f"{heading}{text}")
        log.info("message_sent", run_id=message.run_id, kind=message.kind, id=envelope.id)
        self._post(deliveries)
        return text

    def reply(self, path: Path, message: Message) -> str:
        """Write a SIMPLE_TASK reply file, say it on the console, and send it on."""
        text = self.compose(message)
        self.start()
        # A fresh id: a later request of the same name gets a reply of the same path.
        deliveries = self._stage(envelope_of(message, text))
        atomic_write_text(path, text.rstrip("\n") + "\n")
        self.console(text)
        log.info("simple_reply_written", path=str(path))
        self._post(deliveries)
        return text

    def _append(self, path: Path, envelope: Envelope, once: str | None) -> list[Delivery] | None:
        """Append the entry; None if `once` shows it was appended already.

        The channels' deliveries are staged under the same lock, before the entry is written:
        a crash between the two leaves a delivery whose id messages.md lacks, dropped on replay.
        """
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        key = f" <!-- once:{once} -->" if once else ""
        heading = f"## {stamp} · {envelope.kind.value}{key} {id_marker(envelope.id)}"
        entry = f"\n{heading}\n\n{envelope.text.rstrip()}\n"
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(path.parent / f".{path.name}.lock"):
            try:
                current = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                current = MESSAGES_TITLE
            if key and key in current:
                return None
            deliveries = self._stage(envelope)
            try:
                atomic_write_text(path, current + entry)
            except BaseException:
                self._discard(deliveries)
                raise
        return deliveries

    def _stage(self, envelope: Envelope) -> list[Delivery]:
        return [] if self.channels is None else self.channels.stage(envelope)

    def _discard(self, deliveries: list[Delivery]) -> None:
        if self.channels is not None:
            self.channels.discard(deliveries)

    def _post(self, deliveries: list[Delivery]) -> None:
        if self.channels is not None and deliveries:
            self.channels.post(deliveries)
