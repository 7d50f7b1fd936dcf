"""Children a dead daemon left running: found by their records, stopped before work resumes.

A daemon killed with SIGKILL cannot stop its children; their process groups go on (agent CLIs
left behind run for hours). Each child has a record file while it runs (`child.py`): at start,
before any step is done again, every record whose daemon is gone is read, the group is checked
to be really that child's (a process in it carries the record's RAWP_SESSION_ID, so a reused
pid is never signalled), stopped (SIGTERM, grace, SIGKILL), and the record removed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import structlog

from multiverse.child import pid_alive, terminate_group

log = structlog.get_logger(__name__)
RECORDS = "children"


def record_folders(runs: Path, state: Path) -> Iterable[Path]:
    """Where child records live: each run's `children/` and the home's state (no-run calls)."""
    yield state / RECORDS
    try:
        entries = list(os.scandir(runs))
    except FileNotFoundError:
        return
    for entry in entries:
        folder = Path(entry.path) / RECORDS
        if entry.is_dir(follow_symlinks=False) and folder.is_dir():
            yield folder


def stop_leftover_children(runs: Path, state: Path) -> list[int]:
    """Stop the children of dead daemons; returns the process groups stopped."""
    stopped: list[int] = []
    for folder in record_folders(runs, state):
        for path in sorted(folder.glob("*.json")):
            record = _read(path)
            if record is None:
                path.unlink(missing_ok=True)  # torn by the crash before the child began
                continue
            daemon = int(record.get("daemon_pid", 0))
            if daemon and daemon != os.getpid() and pid_alive(daemon):
                continue  # another daemon's child, still supervised (not ours to stop)
            pgid = int(record.get("pgid", 0))
            if pgid > 0 and _group_carries(pgid, str(record.get("session_id", ""))):
                terminate_group(pgid, None)
                stopped.append(pgid)
                log.warning("leftover_child_stopped", pgid=pgid, record=str(path))
            path.unlink(missing_ok=True)
    return stopped


def _read(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _group_carries(pgid: int, session_id: str) -> bool:
    """Whether some process of the group has this session id in its environment."""
    if not session_id:
        return False
    marker = f"RAWP_SESSION_ID={session_id}".encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            if int(fields[2]) != pgid:  # after ")": state, ppid, pgrp
                continue
            with open(f"/proc/{entry.name}/environ", "rb") as handle:
                if marker in handle.read().split(b"\0"):
                    return True
        except (OSError, IndexError, ValueError):
            continue
    return False
