"""The durable outbox: one file per delivery not yet done, under the home's state folder.

A delivery is written here before its message enters messages.md, and removed once the channel
took it (or it was given up). A daemon killed in between finds the file when it starts again
and sends it then, so a crash loses no message to a channel. File names sort in the order the
messages were said: `<ns time>-<counter>-<channel>-<message id>.json`.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import structlog
from pydantic import ValidationError

from communicator.channels.envelope import Envelope
from multiverse.atomic import atomic_write_bytes

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Pending:
    """One delivery waiting in the outbox."""

    path: Path
    channel: str
    envelope: Envelope


class Outbox:
    """The folder of pending deliveries."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._counter = itertools.count()
        self._lock = threading.Lock()
        self._last_ns = 0

    def stage(self, channel: str, envelope: Envelope) -> Path:
        """Write one pending delivery durably; StorageError when the disk refuses."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with self._lock:  # names strictly increase in this process, whatever the clock does
            self._last_ns = max(time.time_ns(), self._last_ns + 1)
            name = f"{self._last_ns:020d}-{next(self._counter):06d}-{channel}-{envelope.id}.json"
        data = {"channel": channel, "envelope": envelope.model_dump(mode="json")}
        path = self.folder / name
        atomic_write_bytes(path, json.dumps(data, ensure_ascii=False).encode("utf-8") + b"\n")
        return path

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
                found.append(
                    Pending(path, str(data["channel"]), Envelope.model_validate(data["envelope"]))
                )
            except (OSError, ValueError, KeyError, TypeError, ValidationError) as error:
                log.warning("channel_outbox_unreadable", path=path.name, error=str(error))
                self.remove(path)
        return found
