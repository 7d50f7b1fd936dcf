"""DPS events of agent sessions (seed 001 §17, SPEC §11), one JSON line each in a run's
`events.jsonl`.

Each line is appended with one write on a file opened for appending, so lines of concurrent
sessions never interleave, and a crash can cut only the last line (readers skip a torn line).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

TURN_START = "session.turn.start"
TURN_END = "session.turn.end"
AGENT_ERROR = "agent.error"
SESSION_ERROR = "session.error"
INTERACTION_REQUEST = "agent.interaction.request"
INTERACTION_RESPONSE = "control.interaction.response"
INTERACTION_TIMEOUT = "control.interaction.timeout"


def append_event(path: Path, event: str, session_id: str, **fields: Any) -> dict[str, Any]:
    """Append one event line to `path` (created with its folder); returns the event."""
    line = {
        "event": event,
        "session_id": session_id,
        "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds"),
        **fields,
    }
    data = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return line


def read_events(path: Path) -> list[dict[str, Any]]:
    """The events of a file, in order; a torn last line is skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    events = []
    for line in lines:
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events
