"""A run's timeline file, `runs/<run_id>/timeline.jsonl`: one JSON event per line, append-only.

Times live here, never in table columns (SPEC §3.2). Each event is one `write` of a whole line
on a file opened for appending, so lines never interleave; a line torn by a crash is skipped
when read, and an event appended after it (glued to the torn line) is still found.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

TIMELINE = "timeline.jsonl"
CREATED = "created"
CONFIRMED = "confirmed"
STEP_STARTED = "step_started"
STEP_FINISHED = "step_finished"
ENDINGS = ("completed", "failed", "cancelled")
HEAD_BYTES = 4096  # the first events: created, and confirmed in all but odd runs
TAIL_BYTES = 2048  # the last events of a run: its last step and how it ended
_START = '{"at"'  # every line starts so: where an event glued to a torn line begins
_STARTED = f'"event": "{STEP_STARTED}"'
_CONFIRMED = f'"event": "{CONFIRMED}"'


def timeline_path(run_root: Path) -> Path:
    """The timeline file of the run whose folder is `run_root`."""
    return run_root / TIMELINE


def stamp(moment: datetime | None = None) -> str:
    """An ISO-8601 UTC time with milliseconds, e.g. `2026-11-23T21:39:06.123Z`."""
    moment = moment or datetime.now(UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_stamp(text: Any) -> datetime | None:
    """The time of a `stamp`, or None if it is not one."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def append_event(run_root: Path, event: str, **fields: Any) -> None:
    """Append one event (with its time) as a single line; raises OSError if it cannot."""
    record = {"at": stamp(), "event": event} | {k: v for k, v in fields.items() if v is not None}
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(timeline_path(run_root), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)  # one write of the whole line: appends never interleave
    finally:
        os.close(fd)


def parse_events(text: str) -> list[dict[str, Any]]:
    """The events of a timeline's text, skipping torn or foreign lines."""
    events = []
    for line in text.splitlines():
        event = _parse_line(line) or _parse_line(line[line.rfind(_START) :])
        if event is not None:
            events.append(event)
    return events


def _parse_line(line: str) -> dict[str, Any] | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict) or not isinstance(event.get("event"), str):
        return None
    return event if parse_stamp(event.get("at")) else None


def read_events(run_root: Path) -> list[dict[str, Any]]:
    """Every event of a run's timeline, oldest first ([] if there is none yet)."""
    try:
        data = timeline_path(run_root).read_bytes()
    except OSError:
        return []
    return parse_events(data.decode("utf-8", errors="replace"))


def read_ends(path: str | Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The few events a run list needs, cheaply: from the file's first 4 KB the first event and
    the confirmation, from its last 2 KB the events since the last step started.

    Only those lines are parsed (found by their text, as `append_event` writes them). `path`
    is the timeline file (a plain string is quicker, for a list of thousands of runs).
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return [], []
    try:
        size = os.fstat(fd).st_size
        head = os.pread(fd, min(size, HEAD_BYTES), 0).decode("utf-8", "replace")
        start = max(0, size - TAIL_BYTES)
        tail = head if start == 0 else os.pread(fd, TAIL_BYTES, start).decode("utf-8", "replace")
    except OSError:
        return [], []
    finally:
        os.close(fd)
    if start:
        tail = tail.partition("\n")[2]  # its first line is cut by the window
    return _first_events(head), parse_events(_from_last(tail, _STARTED))


def _first_events(head: str) -> list[dict[str, Any]]:
    first = head.partition("\n")[0]
    found = head.find(_CONFIRMED)
    if found < 0:
        return parse_events(first)
    line_start = head.rfind("\n", 0, found) + 1
    line_end = head.find("\n", found)
    return parse_events(first) + parse_events(
        head[line_start : line_end if line_end >= 0 else None]
    )


def _from_last(text: str, marker: str) -> str:
    """The text from the start of the last line holding `marker` (all of it if none does)."""
    found = text.rfind(marker)
    return text if found < 0 else text[text.rfind("\n", 0, found) + 1 :]
