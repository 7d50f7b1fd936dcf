"""`multiverse logs [RUN]`: the daemon's log lines (all, or one run's), readable or raw JSON.

With RUN, the lines are those of the daemon's log whose `run_id` is the run (the run's step
times are in its timeline, which `status RUN` shows); the logs of the run's child processes
(runs/<run_id>/logs/*.log) are listed after them, on stderr with `--json`. No log yet (a daemon
never started) is said on stderr and is not an error: exit 0.

Also here: following a growing text file like `tail -F`.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from multiverse.errors import TableError, UnknownRun
from multiverse.home import Home, require_home, resolve_home
from multiverse.models import RUN_ID
from multiverse.runs import archived_run, parse_stamp, run_paths
from multiverse.store import PROCESS_RUNS, TableStore

POLL_SECONDS = 0.2


class _Reader:
    """The open file, where we are in it, and a line begun but not yet ended."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None
        self.inode = 0
        self.position = 0
        self.partial = b""

    def _open(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return False
        self.close()
        self.fd, self.inode = fd, os.fstat(fd).st_ino
        self.position, self.partial = 0, b""
        return True

    def close(self) -> None:
        """Close the file followed, if open."""
        if self.fd is not None:
            os.close(self.fd)
        self.fd = None

    def _read(self) -> list[str]:
        if self.fd is None:
            return []
        chunks = []
        while chunk := os.pread(self.fd, 1 << 16, self.position):
            chunks.append(chunk)
            self.position += len(chunk)
        *lines, self.partial = (self.partial + b"".join(chunks)).split(b"\n")
        return [line.decode("utf-8", errors="replace") for line in lines]

    def new_lines(self) -> list[str]:
        """The lines completed since the last look (the rest of a rotated file first)."""
        if self.fd is None:
            return self._read() if self._open() else []
        lines = self._read()
        try:
            now = os.stat(self.path)
        except OSError:
            return lines  # gone for a moment (a rotation in progress): look again later
        if now.st_ino != self.inode:
            self._open()
            lines += self._read()
        elif now.st_size < self.position:  # truncated: its new content starts at 0
            self.position, self.partial = 0, b""
            lines += self._read()
        return lines


def follow_lines(
    path: Path, stop: threading.Event | None = None, poll: float = POLL_SECONDS
) -> Iterator[str]:
    """Every line of the file, then each new one as it is written, until `stop` is set."""
    stop = stop or threading.Event()
    reader = _Reader(path)
    try:
        while True:
            yield from reader.new_lines()
            if stop.wait(poll):  # a look at the file every `poll` seconds, not a wait for work
                return
    finally:
        reader.close()


_SHOWN_FIRST = ("timestamp", "level", "event")


def daemon_log(home: Home) -> Path:
    """The daemon's log file (JSON lines, written by `multiverse start`)."""
    return home.state / "logs" / "daemon.jsonl"


def check_run(home: Home, run_id: str) -> None:
    """Raise the error the other commands give for a run_id that is malformed or unknown."""
    if not re.fullmatch(RUN_ID, run_id):
        raise UnknownRun(run_id)
    store = TableStore()
    try:
        row = store.table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).get(run_id)
        known = row is not None or archived_run(store, home, run_id) is not None
    except TableError:  # the table is broken: the run's folder stands in, as in `status`
        known = home.run(run_id).request.exists()
    if not known:
        raise UnknownRun(run_id)


def of_run(line: str, run_id: str | None) -> bool:
    """Whether a log line belongs to the run (every line when no run is asked)."""
    if run_id is None:
        return True
    if run_id not in line:  # most lines: no JSON to parse
        return False
    record = _record(line)
    return record is not None and record.get("run_id") == run_id


def _record(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _value(value: Any) -> str:
    if isinstance(value, str) and value and not any(c.isspace() or c in '"=' for c in value):
        return value
    return json.dumps(value, ensure_ascii=False)


def readable(line: str) -> str:
    """`HH:MM:SS level event key=value …` in local time; a line that is not JSON as it is."""
    record = _record(line)
    if record is None:
        return line
    moment = parse_stamp(record.get("timestamp"))
    when = moment.astimezone().strftime("%H:%M:%S") if moment else "--:--:--"
    rest = " ".join(f"{k}={_value(v)}" for k, v in record.items() if k not in _SHOWN_FIRST)
    head = f"{when} {record.get('level', '-')!s:<7} {record.get('event', '')}"
    return f"{head} {rest}".rstrip()


def child_logs(home: Home, run_id: str) -> list[str]:
    """The logs of the run's child processes, as paths relative to the home."""
    return [home.relative(path) for path in sorted(run_paths(home, run_id).logs.glob("*.log"))]


def _lines(path: Path, follow: bool, stop: threading.Event | None) -> Iterable[str]:
    if follow:
        return follow_lines(path, stop)
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return [line.rstrip("\n") for line in handle]
    except FileNotFoundError:
        return []


def log_lines(
    home: Home,
    run_id: str | None,
    as_json: bool,
    follow: bool = False,
    stop: threading.Event | None = None,
) -> Iterator[str]:
    """The lines `logs` prints, in order; with `follow`, forever (until `stop` is set)."""
    for line in _lines(daemon_log(home), follow, stop):
        if line.strip() and of_run(line, run_id):
            yield line if as_json else readable(line)


def show_logs(home_option: str | None, run_id: str | None, follow: bool, as_json: bool) -> None:
    """Print the log lines (and a run's child logs); with `follow`, until Ctrl-C, then exit 0."""
    home = require_home(resolve_home(home_option))
    if run_id is not None:
        check_run(home, run_id)
    path = daemon_log(home)
    if not path.exists():
        waiting = "; waiting for it (Ctrl-C stops)" if follow else ""
        print(
            f"no daemon log yet ({home.relative(path)}): start the daemon with "
            f"`multiverse start`{waiting}",
            file=sys.stderr,
        )
    children = child_logs(home, run_id) if run_id else []
    if children and follow:
        _say_children(children, sys.stderr)
    try:
        for line in log_lines(home, run_id, as_json, follow):
            print(line, flush=follow)
    except KeyboardInterrupt:
        return  # the way to stop `--follow`: quietly
    if children and not follow:
        _say_children(children, sys.stderr if as_json else sys.stdout)


def _say_children(children: list[str], stream: Any) -> None:
    print(f"logs of the run's child processes ({len(children)}):", file=stream)
    for child in children:
        print(f"  {child}", file=stream)
