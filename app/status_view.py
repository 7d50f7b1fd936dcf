"""`multiverse status`: the runs, or one run's phase/stage/task tree (text, JSON, or live).

A global table that cannot be read is said first, as `db/x.md:7: problem`, and every run it
holds up is shown `paused:` with it; if it is `db/process_runs.md`, the runs are listed from
their folders under runs/ with an unknown status. The list of runs ends with the requests lately
answered without a run (SIMPLE_TASK replies in inbox/done/); in `--json` they follow the runs as
entries of `"kind": "simple_reply"`. Status never writes anything.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from multiverse.errors import TableError, UnknownRun, UserError, shown_error
from multiverse.home import Home, require_home, resolve_home, run_folder_ids
from multiverse.models import FINAL_STATUSES, RUN_ID, Status
from multiverse.runs import (
    ApprovalBook,
    add_run_times,
    add_tree_times,
    archived_count,
    archived_run,
    duration,
    elapsed_by_id,
    node_suffix,
    run_paths,
    run_phrase,
)
from multiverse.store import (
    GLOBAL_TABLES,
    MAJOR_STAGES,
    PHASES,
    PROCESS_RUNS,
    TASKS,
    TOOL_TASKS,
    TableSpec,
    TableStore,
    clip,
)
from orchestrator.inbox import Answered, recent_replies

if TYPE_CHECKING:  # rich is imported only by the live view, to keep the CLI's start fast
    from rich.console import RenderableType

MARKS = {
    Status.PENDING: "·",
    Status.AWAITING_CONFIRMATION: "?",
    Status.COMPLETED: "✓",
    Status.FAILED: "✗",
    Status.CANCELLED: "–",
}
UNKNOWN_MARK = "‖"  # a run whose status cannot be read (db/process_runs.md is broken)
PAUSED_NOTE = "runs that need it are paused until the file is fixed (nothing in it was changed)"
_RUN_FOLDER = re.compile(RUN_ID)
_COLUMNS = PROCESS_RUNS.columns
_RUN_TABLES: dict[str, TableSpec[Any]] = {
    "phases": PHASES,
    "stages": MAJOR_STAGES,
    "tasks": TASKS,
    "tool_tasks": TOOL_TASKS,
}


@dataclass(frozen=True)
class Survey:
    """The global tables as status found them: process_runs' rows and the broken ones."""

    rows: list[dict[str, Any]] | None  # None: db/process_runs.md cannot be read
    broken: dict[str, str]  # file name → `db/x.md:7: problem`, in GLOBAL_TABLES order
    rebuilt: bool = False  # db/process_runs.md is missing and rows come from run folders

    def lines(self) -> list[str]:
        """One line per broken global table, then one if process_runs.md is missing."""
        lines = [f"{reason} — {PAUSED_NOTE}" for reason in self.broken.values()]
        if self.rebuilt:
            lines.append(
                f"db/{PROCESS_RUNS.filename} is missing: the daemon rebuilds it from the run "
                "folders under runs/ when it runs (nothing is lost)"
            )
        return lines

    def paused(self, status: str | None) -> str | None:
        """Why a run with this status is held up (the first broken global table), or None.

        A final run needs no table; one waiting for its answer needs only process_runs.md.
        """
        if not self.broken or (status is not None and Status(status) in FINAL_STATUSES):
            return None
        if status == Status.AWAITING_CONFIRMATION and PROCESS_RUNS.filename not in self.broken:
            return None
        return next(iter(self.broken.values()))


def survey(home: Home, store: TableStore) -> Survey:
    """Read every global table once; a broken one is noted, never raised."""
    rows: list[dict[str, Any]] | None = None
    broken: dict[str, str] = {}
    for spec in GLOBAL_TABLES:
        try:
            found = store.snapshot(spec, home.db / spec.filename).rows
        except TableError as error:
            broken[spec.filename] = shown_error(home.root, error)
            continue
        if spec is PROCESS_RUNS:
            rows = [row.model_dump(mode="json") for row in found]
    if rows == [] and not (home.db / PROCESS_RUNS.filename).exists():
        rows = folder_rows(home, run_folders(home))
        return Survey(rows, broken, rebuilt=bool(rows))
    return Survey(rows, broken)


def run_folders(home: Home) -> list[str]:
    """The run_ids of the folders under runs/, sorted (none when runs/ cannot be read)."""
    try:
        return run_folder_ids(home.runs)
    except OSError:
        return []


def folder_rows(home: Home, run_ids: list[str]) -> list[dict[str, Any]]:
    """Rows standing for these run folders: the request from request.md, status unknown."""
    return [
        dict.fromkeys(_COLUMNS) | {"run_id": run_id, "user_request": _request(home, run_id)}
        for run_id in run_ids
    ]


def _request(home: Home, run_id: str) -> str:
    try:
        data = home.run(run_id).request.read_bytes()
    except OSError as error:
        return f"(request.md cannot be read: {error.strerror})"
    return data.decode("utf-8", errors="replace").strip()


def _note_paused(rows: list[dict[str, Any]], found: Survey) -> list[dict[str, Any]]:
    for row in rows:
        reason = found.paused(row["status"])
        if reason is not None:
            row["paused"] = reason
    return rows


def _note_held(home: Home, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A run held for a review of its plan gets `held`: what lets it go on (`resume`)."""
    waiting = [
        row
        for row in rows
        if row["status"] == Status.AWAITING_CONFIRMATION and _has_hold(home, row["run_id"])
    ]
    if not waiting:  # the common case: orchestrator.evidence (and what it imports) is not needed
        return rows
    from orchestrator.evidence import SignalBox, open_holds, waiting_line

    for row in waiting:
        try:
            holds = open_holds(SignalBox(home.run(row["run_id"]).signals))
        except TableError:
            continue  # a torn record: the daemon reports it
        if holds:
            row["held"] = waiting_line(holds[0], row["run_id"])
    return rows


def _note_approvals(home: Home, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A run whose action waits for your approval gets `waiting`: the action, shortened, and
    the commands that answer it (and no "running" time: the run waits for you)."""
    for row in rows:
        if row["status"] is None or Status(row["status"]) in FINAL_STATUSES:
            continue
        root = home.run(row["run_id"]).root
        if not (root / "approvals").is_dir():
            continue  # the common case: nothing was ever asked
        try:
            pending = ApprovalBook(root).pending()
        except UserError:
            continue  # an unreadable request: `status RUN` and the daemon say so
        if pending:
            run_id = row["run_id"]
            row["waiting"] = (
                f"waiting for your approval: {pending[0].shown(80)} — "
                f"`multiverse approve {run_id}` or `multiverse deny {run_id}`"
                + (f" ({len(pending)} actions wait)" if len(pending) > 1 else "")
            )
    return rows


def _has_hold(home: Home, run_id: str) -> bool:
    """Whether the run's signals hold any hold record (a listing; the records are read later)."""
    try:
        names = os.listdir(home.run(run_id).signals)
    except OSError:
        return False
    return any(name.startswith("hold-") for name in names)


def runs_data(home: Home, store: TableStore, found: Survey | None = None) -> list[dict[str, Any]]:
    """Every process_runs row as a dict of its columns, plus `paused` where a table holds it up.

    If db/process_runs.md cannot be read, the run folders stand in, with status None.
    """
    found = found or survey(home, store)
    rows = found.rows if found.rows is not None else folder_rows(home, run_folders(home))
    add_run_times(home, rows, datetime.now(UTC))
    return _note_approvals(home, _note_held(home, _note_paused(rows, found)))


def run_data(
    home: Home, store: TableStore, run_id: str, found: Survey | None = None
) -> dict[str, Any]:
    """One run's row (or its folder's, see `runs_data`) with its phases, stages and tasks."""
    found = found or survey(home, store)
    if found.rows is not None:
        runs = [row for row in found.rows if row["run_id"] == run_id]
    elif _RUN_FOLDER.fullmatch(run_id) and home.run(run_id).request.exists():
        runs = folder_rows(home, [run_id])
    else:
        runs = []
    if not runs and (archived := archived_run(store, home, run_id)) is not None:
        runs = [archived.model_dump(mode="json") | {"archived": True}]
    if not runs:
        raise UnknownRun(run_id)
    db = run_paths(home, run_id).db
    data: dict[str, Any] = {
        "run": _note_approvals(home, _note_held(home, _note_paused(runs, found)))[0]
    }
    broken: list[str] = []
    for name, spec in _RUN_TABLES.items():
        try:
            rows = store.table(spec, db / spec.filename).rows()
        except TableError as error:  # the tree shows what it can, and says what it cannot
            rows, broken = [], [*broken, shown_error(home.root, error)]
        data[name] = [row.model_dump(mode="json") for row in rows]
    if broken:
        data["run"]["broken"] = broken
    origin = _origin(run_paths(home, run_id).root)
    if origin:
        data["run"]["forked_from"] = origin
    nodes = [(depth, key) for depth, key, _, _ in tree_rows(data)]
    add_tree_times(home, data, nodes, datetime.now(UTC))
    return data


def _origin(root: Path) -> str | None:
    """`RUN at STEP` for a run made by `multiverse fork` (its forked_from.json), else None."""
    try:
        said = json.loads((root / "forked_from.json").read_text(encoding="utf-8"))
        return f"{said['origin']} at {said['step']}"
    except (OSError, ValueError, KeyError, TypeError):
        return None


REPLY_KIND = "simple_reply"
REPLY_MARK = "↩"


def reply_entry(home: Home, answered: Answered) -> dict[str, Any]:
    """One answered simple request as a status entry: its reply, request, first line, time."""
    when = datetime.fromtimestamp(answered.answered_at, UTC)
    return {
        "kind": REPLY_KIND,
        "reply": home.relative(answered.reply),
        "request": home.relative(answered.request) if answered.request else None,
        "first_line": answered.first_line,
        "answered_at": when.strftime("%Y-%m-%d %H:%M:%S UTC"),
    }


def replies_data(home: Home) -> list[dict[str, Any]]:
    """The requests lately answered without a run, oldest first (read only)."""
    return [reply_entry(home, answered) for answered in recent_replies(home)]


def render_replies(replies: list[dict[str, Any]]) -> str:
    """The answered simple requests, one line each: reply, time and the request's first line."""
    lines = [f"answered without a run (the last {len(replies)}):"]
    for reply in replies:
        asked = clip(reply["first_line"], 60) or "(the request is not beside it)"
        lines.append(f"{REPLY_MARK} {reply['reply']}  {reply['answered_at']}  {asked}")
    return "\n".join(lines)


def render_list(entries: list[dict[str, Any]], archived: int = 0) -> str:
    """The runs, then the requests answered without a run (entries of `"kind": "simple_reply"`),
    then how many runs are archived (not listed)."""
    runs = [entry for entry in entries if entry.get("kind") != REPLY_KIND]
    replies = [entry for entry in entries if entry.get("kind") == REPLY_KIND]
    listing = render_runs(runs) if runs or not archived else "no live runs"
    if archived:
        listing += f"\n({archived} archived: `multiverse runs --archived` lists them)"
    return "\n\n".join([listing, *([render_replies(replies)] if replies else [])])


def _mark(status: str | None) -> str:
    return UNKNOWN_MARK if status is None else MARKS[Status(status)]


def render_runs(runs: list[dict[str, Any]]) -> str:
    """A plain table of the runs, newest last; a held-up run gets a `paused:` line under it."""
    if not runs:
        return "no runs yet: drop a request into inbox/ or use `multiverse submit`"
    lines = []
    now = datetime.now(UTC)
    for run in runs:
        where = " › ".join(
            run[k] for k in ("current_phase_id", "current_stage_id", "current_task_id") if run[k]
        )
        where = "archived" if run.get("archived") else where
        request = clip(run["user_request"], 60)
        lines.append(
            f"{_mark(run['status'])} {run['run_id']}  {run['status'] or '?':<21}  "
            f"{where or '-':<24}  {run_phrase(run, now):<36}  {request}"
        )
        if run.get("paused"):
            lines.append(f"    paused: {run['paused']}")
        if run.get("held"):
            lines.append(f"    held: {run['held']}")
        if run.get("waiting"):
            lines.append(f"    {run['waiting']}")
    return "\n".join(lines)


def tree_rows(data: dict[str, Any]) -> Iterator[tuple[int, str, str, Status]]:
    """The run's tree as (depth, id, name, status): phases at 1, stages, tasks, tool tasks at 4."""
    for phase in data["phases"]:
        yield 1, phase["phase_id"], phase["phase_name"], Status(phase["status"])
        for stage in (s for s in data["stages"] if s["phase_id"] == phase["phase_id"]):
            yield 2, stage["stage_id"], stage["stage_name"], Status(stage["status"])
            for task in (t for t in data["tasks"] if t["stage_id"] == stage["stage_id"]):
                yield 3, task["task_id"], task["task_name"], Status(task["status"])
                for tool in data["tool_tasks"]:
                    if tool["parent_task_id"] == task["task_id"]:
                        yield 4, tool["tool_task_id"], tool["tool_type"], Status(tool["status"])


def _request_excerpt(run: dict[str, Any]) -> str:
    return clip(run["user_request"], 70)


def render_tree(data: dict[str, Any]) -> str:
    """The run's phase › stage › task › tool task tree with a mark per status."""
    run = data["run"]
    lines = [f"{run['run_id']}  {run['status'] or '?'}  {_request_excerpt(run)}"]
    phrase = run_phrase(run, datetime.now(UTC))
    if phrase:
        lines.append(f"  {phrase}")
    if run.get("paused"):
        lines.append(f"  paused: {run['paused']}")
    if run.get("held"):
        lines.append(f"  held: {run['held']}")
    if run.get("waiting"):
        lines.append(f"  {run['waiting']}")
    lines += [f"  cannot be read: {problem}" for problem in run.get("broken", [])]
    if run.get("forked_from"):
        lines.append(f"  forked from {run['forked_from']}")
    if run.get("in_flight"):
        lines.append(f"  in flight: {_flight(run['in_flight'])}")
    seconds = elapsed_by_id(data)
    for depth, key, name, status in tree_rows(data):
        lines.append(f"{'  ' * depth}{MARKS[status]} {key} {name}{node_suffix(seconds.get(key))}")
    return "\n".join(lines)


def _flight(flight: dict[str, Any]) -> str:
    """The step in flight, e.g. `EXECUTE_TASK T3 · 12s`."""
    what = f"{flight['step']} {flight['target'] or ''}".strip()
    return f"{what} · {duration(flight['seconds'])}"


STYLES = {
    Status.PENDING: "dim",
    Status.AWAITING_CONFIRMATION: "bold yellow",
    Status.COMPLETED: "green",
    Status.FAILED: "bold red",
    Status.CANCELLED: "magenta",
}


def live_tree(data: dict[str, Any]) -> RenderableType:
    """The tree of `render_tree` for the live view: statuses in colour, the current work bold."""
    from rich.console import Group
    from rich.spinner import Spinner
    from rich.text import Text
    from rich.tree import Tree

    run = data["run"]
    current = {run[k] for k in ("current_phase_id", "current_stage_id", "current_task_id")}

    seconds = elapsed_by_id(data)

    def label(key: str, name: str, mark: Status) -> Text:
        text = Text.assemble(
            (f"{MARKS[mark]} ", STYLES[mark]), (key, "bold" if key in current else "")
        )
        text.append(f" {name}", style="bold" if key in current else "")
        text.append(node_suffix(seconds.get(key)), style="dim")
        return text

    status = run["status"]
    heading = Text.assemble(
        (run["run_id"], "bold"),
        "  ",
        (status or "?", STYLES[Status(status)] if status else "bold yellow"),
        f"  {_request_excerpt(run)}",
    )
    if run.get("paused"):
        heading.append(f"\n  paused: {run['paused']}", style="bold yellow")
    if run.get("held"):
        heading.append(f"\n  held: {run['held']}", style="bold yellow")
    for problem in run.get("broken", []):
        heading.append(f"\n  cannot be read: {problem}", style="bold red")
    flight = run.get("in_flight")
    root = Tree(Group(heading, Spinner("dots", Text(_flight(flight)))) if flight else heading)
    parents = [root]  # parents[d]: the last node drawn at depth d (the run is depth 0)
    for depth, key, name, status in tree_rows(data):
        del parents[depth:]
        parents.append(parents[-1].add(label(key, name, status)))
    return root


def _snapshot_data(home: Home, store: TableStore, run_id: str | None) -> tuple[list[str], Any]:
    """The lines about the global tables, and the runs (or the run's tree)."""
    found = survey(home, store)
    if run_id:
        return found.lines(), run_data(home, store, run_id, found)
    return found.lines(), runs_data(home, store, found) + replies_data(home)


def _render(
    lines: list[str], data: Any, run_id: str | None, as_json: bool, archived: int = 0
) -> str:
    if as_json:
        return json.dumps(data, ensure_ascii=False, indent=2)
    if run_id:
        return "\n".join([*lines, render_tree(data)])
    return "\n".join([*lines, render_list(data, archived)])


def _live_view(lines: list[str], data: Any, run_id: str | None, as_json: bool) -> RenderableType:
    from rich.console import Group
    from rich.text import Text

    if run_id and not as_json:
        return Group(*(Text(line, style="bold yellow") for line in lines), live_tree(data))
    return Text("\n".join([*lines, _render([], data, run_id, as_json)]))


def show_status(
    home_option: str | None, run_id: str | None, watch: bool, as_json: bool
) -> str | None:
    """Print the status once, or redraw it live until Ctrl-C (rich); the status of the run
    shown last (None for the list of runs), for the exit code.

    With `--json` the lines about broken global tables go to stderr, so stdout stays JSON.
    """
    home = require_home(resolve_home(home_option))
    store = TableStore()
    lines, data = _snapshot_data(home, store, run_id)
    if not watch:
        if as_json:
            for line in lines:
                print(line, file=sys.stderr)
        archived = 0 if run_id or as_json else archived_count(home)
        print(_render(lines, data, run_id, as_json, archived))
        return data["run"]["status"] if run_id else None
    from rich.live import Live

    stop = threading.Event()
    try:
        with Live(_live_view(lines, data, run_id, as_json), auto_refresh=False) as live:
            while not stop.wait(0.5):  # a display refresh, not a wait for work
                lines, data = _snapshot_data(home, store, run_id)
                live.update(_live_view(lines, data, run_id, as_json), refresh=True)
                status = data["run"]["status"] if run_id else None
                if status is not None and Status(status) in FINAL_STATUSES:
                    break
    except KeyboardInterrupt:
        pass
    return data["run"]["status"] if run_id else None
