"""Whether a daemon serves a home: its lock is held and its loop beat recently.

The daemon rewrites `.multiverse/heartbeat.json` (`pid`, `started_at`, `beat_at`) every
`BEAT_SECONDS` from its loop and removes it on a clean stop. The lock tells that a daemon process
lives (the kernel drops it when the process dies); the beat tells that its loop still turns.
`serving_state` decides from both, purely; `probe` gathers them from the files.
"""

from __future__ import annotations

import fcntl
import json
import os
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

BEAT_SECONDS = 2.0
STALE_BEATS = 3  # a beat older than this many intervals: the loop is stuck
HEARTBEAT_FILE = "heartbeat.json"
LOCK_FILE = "daemon.lock"


class Beat(BaseModel):
    """The content of the heartbeat file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pid: int
    started_at: datetime
    beat_at: datetime


class Serving(BaseModel):
    """What `serving_state` found: serving, stuck (lock held, no recent beat) or not running."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    state: str  # "serving" | "stuck" | "not running"
    pid: int | None = None
    since: datetime | None = None
    last_beat: datetime | None = None

    @property
    def serving(self) -> bool:
        """A daemon holds the lock and its loop beat within the last few intervals."""
        return self.state == "serving"

    def line(self) -> str:
        """One line for people: what serves this home, since when."""
        if self.state == "serving" and self.since is not None:
            return f"serving since {_shown(self.since)} (pid {self.pid})"
        if self.state == "stuck":
            beat = f"last beat {_shown(self.last_beat)}" if self.last_beat else "no beat yet"
            pid = self.pid or "?"
            return f"a daemon holds the lock (pid {pid}) but its loop is not beating ({beat})"
        return "not running: start one with `multiverse start` (or `make start`)"


def serving_state(lock_held: bool, beat: Beat | None, now: datetime) -> Serving:
    """Decide, purely, whether a daemon serves the home from the lock and the last beat."""
    if not lock_held:
        return Serving(state="not running")
    if beat is None:
        return Serving(state="stuck")
    age = (now - beat.beat_at).total_seconds()
    fresh = age < STALE_BEATS * BEAT_SECONDS
    return Serving(
        state="serving" if fresh else "stuck",
        pid=beat.pid,
        since=beat.started_at,
        last_beat=beat.beat_at,
    )


def probe(state: Path, now: datetime | None = None) -> Serving:
    """Whether a daemon serves the home whose private folder is `state`."""
    return serving_state(lock_held(state / LOCK_FILE), read_beat(state), now or datetime.now(UTC))


def lock_held(path: Path) -> bool:
    """Whether some process holds the daemon lock (a shared, non-blocking flock probe).

    The probe holds the lock for microseconds; the daemon waits a moment for it (see
    `orchestrator.daemon`), so a probe never keeps a daemon from starting.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False  # no lock file: no daemon ever ran here
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a probe that got the lock
    return False


def read_beat(state: Path) -> Beat | None:
    """The last beat written, or None (no file, or a torn one)."""
    try:
        return Beat.model_validate_json((state / HEARTBEAT_FILE).read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def write_beat(state: Path, beat: Beat) -> None:
    """Replace the heartbeat file (temp + rename; not a durable write: it is rewritten soon)."""
    target = state / HEARTBEAT_FILE
    temp = state / f".{HEARTBEAT_FILE}.{os.getpid()}.tmp"
    temp.write_text(json.dumps(beat.model_dump(mode="json")) + "\n", encoding="utf-8")
    os.replace(temp, target)


def remove_beat(state: Path) -> None:
    """Remove the heartbeat file (a clean stop)."""
    (state / HEARTBEAT_FILE).unlink(missing_ok=True)


def _shown(moment: datetime | None) -> str:
    if moment is None:
        return "?"
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")
