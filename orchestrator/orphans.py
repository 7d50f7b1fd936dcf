"""Leftovers of writes cut short: temporary files of a process that died mid-write (SPEC §14).

An atomic write goes through a temporary sibling (`multiverse.atomic`); a process killed
between creating it and renaming it leaves it behind. At start-up the daemon removes those of
its own naming pattern whose creator is no longer alive, in the folders it writes (never in
assets/ or guidelines/, never any other name), so none is ever catalogued or delivered.
"""

from __future__ import annotations

import os
from pathlib import Path

import structlog

from multiverse.atomic import PROCESS_STARTED_NS, temp_owner
from multiverse.child import pid_alive
from multiverse.home import Home

log = structlog.get_logger(__name__)


def remove_orphan_temps(home: Home) -> list[Path]:
    """Remove the temporary files that dead processes left in the home; returns them."""
    removed: list[Path] = []
    for folder in (home.db, home.runs, home.outputs, home.inbox, home.state):
        for path in _temp_files(folder):
            owner = temp_owner(path.name)
            if owner is None or _in_use(path, owner):
                continue
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            removed.append(path)
    if removed:
        log.info("orphan_temps_removed", count=len(removed), first=str(removed[0]))
    return removed


def _temp_files(folder: Path) -> list[Path]:
    found = []
    for root, folders, files in os.walk(folder):
        folders[:] = [name for name in folders if not os.path.islink(os.path.join(root, name))]
        found += [Path(root, name) for name in files if temp_owner(name) is not None]
    return found


def _in_use(path: Path, owner: int) -> bool:
    """Whether the process that made this temporary file may still be writing it."""
    if owner != os.getpid():
        return pid_alive(owner)
    # Our own pid: a write of this process in flight (another thread may be mid-write) unless
    # the file predates this process, i.e. a dead namesake left it. The margin covers file
    # systems whose timestamps lag the clock by a tick.
    try:
        written_ns = path.stat().st_mtime_ns
    except FileNotFoundError:
        return True  # renamed into place meanwhile: nothing to remove
    return written_ns >= PROCESS_STARTED_NS - _CLOCK_MARGIN_NS


_CLOCK_MARGIN_NS = 2_000_000_000
