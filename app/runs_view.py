"""`multiverse runs`: the runs filtered by status and creation date, newest last.

Live runs by default; `--archived` adds the archived ones (`multiverse.runs`), marked. The
newest `limit` are shown (0: all), and a line says how many older ones matched too.

Also here: `multiverse open RUN`, and `multiverse logs [RUN]`: the daemon's log lines (all, or
one run's), readable or raw JSON. With RUN, the lines are those of the daemon's log whose
`run_id` is the run (the run's step times are in its timeline, which `status RUN` shows); the logs
of the run's child processes (runs/<run_id>/logs/*.log) are listed after them, on stderr with
`--json`. No log yet (a daemon never started) is said on stderr and is not an error: exit 0.
Following a growing text file like `tail -F` is here too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.status_view import folder_rows, render_runs, run_folders, runs_data, survey
from multiverse.errors import RunStateError, TableError, UnknownRun, UserError
from multiverse.home import Home, require_home, resolve_home, visible_files
from multiverse.models import FINAL_STATUSES, RUN_ID, AssetType, Status
from multiverse.runs import (
    add_run_times,
    archived_rows,
    archived_run,
    created_from_id,
    parse_stamp,
    run_paths,
    shards_of,
)
from multiverse.store import KNOWLEDGE_CATALOG, PROCESS_RUNS, TableStore

DEFAULT_LIMIT = 50
GROUPS = {
    "final": {status.value for status in FINAL_STATUSES},
    "open": {status.value for status in Status if status not in FINAL_STATUSES},
}


def statuses_asked(names: list[str]) -> set[str] | None:
    """The statuses `--status` names (case-insensitive, comma-separated or repeated; `final`
    and `open` for groups); None when none is given."""
    wanted: set[str] = set()
    for name in (part.strip() for item in names for part in item.split(",")):
        if not name:
            continue
        if name.lower() in GROUPS:
            wanted |= GROUPS[name.lower()]
        elif name.upper() in Status.__members__:
            wanted.add(Status[name.upper()].value)
        else:
            known = ", ".join([*(s.value for s in Status), *GROUPS])
            raise UserError(f"--status {name!r} is not a status: give one of {known}")
    return wanted or None


def select(
    rows: list[dict[str, Any]], statuses: set[str] | None, since: datetime | None, limit: int
) -> tuple[list[dict[str, Any]], int]:
    """The rows that match, oldest first, cut to the newest `limit` (0: all); and how many
    older ones matched but are not shown."""
    kept = [
        row
        for row in rows
        if (statuses is None or row["status"] in statuses)
        and (since is None or ((made := created_from_id(row["run_id"])) and made >= since))
    ]
    kept.sort(key=lambda row: row["run_id"])
    hidden = max(0, len(kept) - limit) if limit > 0 else 0
    return kept[hidden:], hidden


def runs_entries(
    home_option: str | None,
    statuses: set[str] | None,
    since: datetime | None,
    limit: int,
    archived: bool,
) -> tuple[list[dict[str, Any]], int, list[str]]:
    """The runs `runs` shows (each a status entry plus `archived`), how many are cut, and the
    lines about broken global tables (as `status` says them)."""
    home = require_home(resolve_home(home_option))
    store = TableStore()
    found = survey(home, store)
    rows = found.rows if found.rows is not None else folder_rows(home, run_folders(home))
    live = [row | {"archived": False} for row in rows]
    old = []
    if archived:
        taken = {row["run_id"] for row in live}
        old = [
            row.model_dump(mode="json") | {"archived": True}
            for row in archived_rows(store, home, PROCESS_RUNS)
            if row.run_id not in taken
        ]
    shown, hidden = select(live + old, statuses, since, limit)
    now = datetime.now(UTC)
    add_run_times(home, [row for row in shown if row["archived"]], now, home.archive_runs)
    shown_live = {row["run_id"] for row in shown if not row["archived"]}
    if shown_live:  # the live rows with their paused/held notes, as `status` shows them
        only = replace(found, rows=[row for row in rows if row["run_id"] in shown_live])
        noted = {row["run_id"]: row for row in runs_data(home, store, only)}
        shown = [noted.get(row["run_id"], row) | {"archived": row["archived"]} for row in shown]
    return shown, hidden, found.lines()


def render(entries: list[dict[str, Any]], hidden: int) -> str:
    """The runs as `status` lists them, archived ones marked, then how many are not shown."""
    if not entries and not hidden:
        return "no runs match"
    lines = [render_runs(entries)] if entries else []
    if hidden:
        lines.append(f"… and {hidden} older runs that match (`--limit 0` shows all)")
    return "\n".join(lines)


def show_runs(
    home_option: str | None,
    statuses: set[str] | None,
    since: datetime | None,
    limit: int,
    archived: bool,
    as_json: bool,
) -> None:
    """Print the runs that match, as text or as a JSON list."""
    entries, hidden, lines = runs_entries(home_option, statuses, since, limit, archived)
    for line in lines:
        print(line, file=sys.stderr)
    if as_json:
        print(json.dumps(entries, ensure_ascii=False, indent=2))
    else:
        print(render(entries, hidden))


DOCUMENTS = (".md", ".html", ".pdf", ".docx", ".pptx", ".xlsx", ".txt", ".csv")


def report_path(home: Home, run_id: str) -> Path | None:
    """The run's report: its first FINAL_OUTPUT document that exists, else the first document
    file in outputs/<run_id>/; None if it has none."""
    store = TableStore()
    tables = [home.db / KNOWLEDGE_CATALOG.filename]
    tables += [home.archive_db / shard / KNOWLEDGE_CATALOG.filename for shard in shards_of(run_id)]
    for path in tables:
        if not path.exists():
            continue
        for row in store.table(KNOWLEDGE_CATALOG, path).rows_with("run_id", [run_id]):
            found = home.root / row.file_path
            if row.asset_type is AssetType.FINAL_OUTPUT and _document(found) and found.is_file():
                return found
    return next((path for path in visible_files(home.outputs / run_id) if _document(path)), None)


def _document(path: Path) -> bool:
    return path.suffix.lower() in DOCUMENTS


def opener(environ: dict[str, str] | None = None, platform: str | None = None) -> str | None:
    """The program that opens files here, or None (no desktop, nothing on PATH)."""
    environ = dict(os.environ) if environ is None else environ
    platform = platform or sys.platform
    if platform == "darwin":
        return shutil.which("open", path=environ.get("PATH"))
    if platform.startswith("win"):
        return "start"
    if not (environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY")):
        return None
    return shutil.which("xdg-open", path=environ.get("PATH"))


def open_run(
    home_option: str | None, run_id: str, folder: bool, print_only: bool, markdown: bool = False
) -> dict[str, object]:
    """Open the run's report: its self-contained HTML where there is one (charts inline), its
    markdown with `markdown`, or its outputs folder; what was opened, and with what."""
    import typer

    home = require_home(resolve_home(home_option))
    outputs = home.outputs / run_id
    folders = (home.runs / run_id, home.archive_runs / run_id, outputs)
    if not any(path.is_dir() for path in folders):
        raise UnknownRun(run_id)
    target = outputs if folder else report_path(home, run_id)
    if target is not None and not folder and not markdown and target.suffix.lower() == ".md":
        page = target.with_suffix(".html")
        target = page if page.is_file() else target
    if target is None or not target.exists():
        raise RunStateError(
            f"run {run_id} has no report yet (outputs/{run_id}/ holds no document): "
            f"`multiverse status {run_id}` says where it is"
        )
    program = None if print_only else opener()
    opened = program is not None and typer.launch(str(target), wait=True) == 0
    return {
        "run_id": run_id,
        "path": str(target),
        "opened": opened,
        "opener": program if opened else None,
    }


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
