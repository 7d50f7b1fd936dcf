"""The command channel: a program run once per message, the message on its standard input.

The program runs in the home folder with MULTIVERSE_MESSAGE_ID, MULTIVERSE_RUN_ID,
MULTIVERSE_MESSAGE_KIND and MULTIVERSE_HOME in its environment. Exit 0 means delivered; any other
exit, or running past the timeout (the whole process group is then killed), is a failed attempt.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path

from communicator.channels.envelope import Envelope
from communicator.channels.sender import DeliveryFailed
from multiverse.channel_config import CommandChannel

STDERR_SHOWN = 300  # characters of the program's stderr kept in the failure's log event


class CommandSender:
    """Runs the channel's command for each envelope."""

    def __init__(self, channel: CommandChannel, home_root: Path, environ: Mapping[str, str]):
        self.channel = channel
        self.home_root = home_root
        self.environ = environ

    def send(self, envelope: Envelope) -> None:
        """Run the command once with the message on stdin; DeliveryFailed unless it exits 0."""
        data = envelope.body() if self.channel.input == "json" else envelope.text.encode() + b"\n"
        try:
            process = subprocess.Popen(
                self.channel.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd=self.home_root,
                env=self._environment(envelope),
                start_new_session=True,  # so a timeout kills its children too
            )
        except OSError as error:
            reason = f"cannot start: {error.strerror or error}"
            raise DeliveryFailed(reason, retryable=False) from None
        try:
            _, stderr = process.communicate(data, timeout=self.channel.timeout_seconds)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise DeliveryFailed(f"timed out after {self.channel.timeout_seconds:g}s") from None
        if process.returncode != 0:
            said = stderr.decode("utf-8", "replace").strip()[-STDERR_SHOWN:]
            raise DeliveryFailed(f"exit {process.returncode}" + (f": {said}" if said else ""))

    def _environment(self, envelope: Envelope) -> dict[str, str]:
        return {
            **self.environ,
            "MULTIVERSE_MESSAGE_ID": envelope.id,
            "MULTIVERSE_RUN_ID": envelope.run_id or "",
            "MULTIVERSE_MESSAGE_KIND": envelope.kind.value,
            "MULTIVERSE_HOME": str(self.home_root),
        }

    def close(self) -> None:
        """Nothing is held between messages."""


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate()
