"""`multiverse logs [RUN]`: the daemon's log lines (all, or one run's), readable or raw JSON.

With RUN, the lines are those of the daemon's log whose `run_id` is the run (the run's step
times are in its timeline, which `status RUN` shows); the logs of the run's child processes
(runs/<run_id>/logs/*.log) are listed after them, on stderr with `--json`. No log yet (a daemon
never started) is said on stderr and is not an error: exit 0.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from app.follow import follow_lines
from multiverse.archive import archived_run, run_paths
from multiverse.errors import TableError, UnknownRun
from multiverse.home import Home, require_home, resolve_home
from multiverse.models import RUN_ID
from multiverse.schemas import PROCESS_RUNS
from multiverse.store import TableStore
from multiverse.timeline import parse_stamp

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
