"""Delivering the Communicator's words: the console, runs/<run_id>/messages.md, replies."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import structlog
from filelock import FileLock

from communicator.builtin import BuiltinCommunicator
from multiverse.atomic import atomic_write_text
from multiverse.contracts import Message
from multiverse.home import Home
from multiverse.roles import CommunicatorRole

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
    ) -> None:
        self.home = home
        self.role = role
        self.console = console
        self.fallback = BuiltinCommunicator()

    def compose(self, message: Message) -> str:
        """The role's words, or the template's when the role fails (facts stay verbatim)."""
        try:
            return self.role.compose(message)
        except Exception as error:  # a model-backed role must never silence a report
            log.warning("communicator_fallback", kind=message.kind, error=str(error))
            return self.fallback.compose(message)

    def tell(self, message: Message, once: str | None = None) -> str:
        """Say a message on the console and append it to the run's messages.md.

        With `once`, a key unique in the run, the message is said at most once: the entry in
        messages.md carries the key, so a step redone after a crash does not say it again.
        """
        text = self.compose(message)
        heading = f"[{message.run_id}] " if message.run_id else ""
        if message.run_id:
            path = self.home.run(message.run_id).messages
            if not self._append(path, message, text, once):
                return text  # said before a crash
        self.console(f"{heading}{text}")
        log.info("message_sent", run_id=message.run_id, kind=message.kind)
        return text

    def reply(self, path: Path, message: Message) -> str:
        """Write a SIMPLE_TASK reply file and say it on the console."""
        text = self.compose(message)
        atomic_write_text(path, text.rstrip("\n") + "\n")
        self.console(text)
        log.info("simple_reply_written", path=str(path))
        return text

    def _append(self, path: Path, message: Message, text: str, once: str | None) -> bool:
        """Append the entry; False if `once` shows it was appended already."""
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        key = f" <!-- once:{once} -->" if once else ""
        entry = f"\n## {stamp} · {message.kind.value}{key}\n\n{text.rstrip()}\n"
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(path.parent / f".{path.name}.lock"):
            try:
                current = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                current = MESSAGES_TITLE
            if key and key in current:
                return False
            atomic_write_text(path, current + entry)
        return True
