"""Telling people what a merge put back after their save (SPEC §3.1: restored and reported).

A save from an editor that held an older copy of a table erases the rows and cells the daemon
wrote since; the store puts them back (`multiverse.journal`) and hands the restoration here. It
is said on the console and in the messages.md of every run it concerns.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import structlog

from multiverse.contracts import Message, MessageKind
from multiverse.home import Home
from multiverse.journal import Restoration

log = structlog.get_logger(__name__)
SHOWN = 5


def restoration_messages(home: Home, restoration: Restoration) -> list[Message]:
    """One NOTICE per run the restoration concerns (run_id None: rows of no run)."""
    where = _relative(home, restoration)
    owner = _run_of_file(home, restoration)
    rows: dict[str | None, list[str]] = defaultdict(list)
    cells: dict[str | None, list[str]] = defaultdict(list)
    for row in restoration.rows:
        rows[owner or getattr(row, "run_id", None)].append(row.key)
    for row, values in restoration.cells:
        shown = ", ".join(f"{column} = {_short(value)}" for column, value in values.items())
        cells[owner or getattr(row, "run_id", None)].append(f"{row.key} ({shown})")
    messages = []
    for run_id in dict.fromkeys([*rows, *cells]):
        parts = []
        if rows.get(run_id):
            parts.append(f"rows it had written ({_listing(rows[run_id])})")
        if cells.get(run_id):
            parts.append(f"values it had written ({_listing(cells[run_id])})")
        text = (
            f"A save of `{where}` (an editor holding an older copy?) erased {' and '.join(parts)}. "
            "The daemon put them back; your own edits are kept. To remove a row on purpose, use "
            f"`multiverse delete-row {where} KEY`."
        )
        messages.append(Message(kind=MessageKind.NOTICE, run_id=run_id, facts={"text": text}))
    return messages


def _relative(home: Home, restoration: Restoration) -> str:
    try:
        return restoration.path.relative_to(home.root).as_posix()
    except ValueError:
        return str(restoration.path)


def _run_of_file(home: Home, restoration: Restoration) -> str | None:
    """The run a run table belongs to (runs/<run_id>/db/...), None for a global table."""
    parts = _relative(home, restoration).split("/")
    if len(parts) >= 3 and parts[0] == "runs" and parts[2] == "db":
        return parts[1]
    return None


def _short(value: Any) -> str:
    text = str(value.value if hasattr(value, "value") else value)
    return text if len(text) <= 40 else text[:39] + "…"


def _listing(items: list[str]) -> str:
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more
