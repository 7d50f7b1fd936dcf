"""One message as the channels receive it: stable id, run, kind, the composed text, time."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from multiverse.contracts import Message, MessageKind

SCHEMA = "multiverse.message/1"


class Envelope(BaseModel):
    """What every channel gets for one message; `id` lets a receiver drop a repeat."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    run_id: str | None
    kind: MessageKind
    text: str
    created_at: str

    def body(self) -> bytes:
        """The JSON object sent to webhooks and (by default) to commands, as UTF-8 bytes."""
        data = {"schema": SCHEMA, **self.model_dump(mode="json")}
        return json.dumps(data, ensure_ascii=False, sort_keys=True).encode("utf-8")


def message_id(run_id: str | None, once: str | None) -> str:
    """A message's id: derived from its `once` key (the same after a redo), else random."""
    if once is None:
        return uuid.uuid4().hex
    return hashlib.sha256(f"{run_id or ''}\0{once}".encode()).hexdigest()[:32]


def envelope_of(message: Message, text: str, once: str | None = None) -> Envelope:
    """The envelope of a message composed as `text`."""
    return Envelope(
        id=message_id(message.run_id, once),
        run_id=message.run_id,
        kind=message.kind,
        text=text.rstrip("\n"),
        created_at=datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    )
