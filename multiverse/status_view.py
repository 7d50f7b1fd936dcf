"""`multiverse status`: the runs, or one run's phase/stage/task tree (text, JSON, or live)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from multiverse.errors import UserError
from multiverse.home import Home, require_home, resolve_home
from multiverse.models import FINAL_STATUSES, Status
from multiverse.schemas import (
    MAJOR_STAGES,
    PHASES,
    PROCESS_RUNS,
    TASKS,
    TOOL_TASKS,
    TableSpec,
)
from multiverse.store import TableStore

if TYPE_CHECKING:  # rich is imported only by the live view, to keep the CLI's start fast
    from rich.console import RenderableType

MARKS = {
    Status.PENDING: "·",
    Status.AWAITING_CONFIRMATION: "?",
    Status.COMPLETED: "✓",
    Status.FAILED: "✗",
    Status.CANCELLED: "–",
}


def runs_data(home: Home, store: TableStore) -> list[dict[str, Any]]:
    """Every process_runs row as a dict of its columns."""
    table = store.table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename)
    return [row.model_dump(mode="json") for row in table.rows()]


def run_data(home: Home, store: TableStore, run_id: str) -> dict[str, Any]:
    """One run's row with its phases, stages, tasks and tool tasks."""
    run = store.table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).get(run_id)
    if run is None:
        raise UserError(f"no run {run_id} in {home.db / PROCESS_RUNS.filename}")
    db = home.run(run_id).db
    data: dict[str, Any] = {"run": run.model_dump(mode="json")}
    specs: dict[str, TableSpec[Any]] = {
        "phases": PHASES,
        "stages": MAJOR_STAGES,
        "tasks": TASKS,
        "tool_tasks": TOOL_TASKS,
    }
    for name, spec in specs.items():
        rows = store.table(spec, db / spec.filename).rows()
        data[name] = [row.model_dump(mode="json") for row in rows]
    return data


def render_runs(runs: list[dict[str, Any]]) -> str:
    """A plain table of the runs, newest last."""
    if not runs:
        return "no runs yet: drop a request into inbox/ or use `multiverse submit`"
    lines = []
    for run in runs:
        where = " › ".join(
            run[k] for k in ("current_phase_id", "current_stage_id", "current_task_id") if run[k]
        )
        request = " ".join(run["user_request"].split())[:60]
        lines.append(
            f"{MARKS[Status(run['status'])]} {run['run_id']}  {run['status']:<21}  "
            f"{where or '-':<24}  {request}"
        )
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
    return " ".join(run["user_request"].split())[:70]


def render_tree(data: dict[str, Any]) -> str:
    """The run's phase › stage › task › tool task tree with a mark per status."""
    run = data["run"]
    lines = [f"{run['run_id']}  {run['status']}  {_request_excerpt(run)}"]
    for depth, key, name, status in tree_rows(data):
        lines.append(f"{'  ' * depth}{MARKS[status]} {key} {name}")
    return "\n".join(lines)


STYLES = {
    Status.PENDING: "dim",
    Status.AWAITING_CONFIRMATION: "bold yellow",
    Status.COMPLETED: "green",
    Status.FAILED: "bold red",
    Status.CANCELLED: "magenta",
}


def live_tree(data: dict[str, Any]) -> RenderableType:
    """The tree of `render_tree` for the live view: statuses in colour, the current work bold."""
    from rich.text import Text
    from rich.tree import Tree

    run = data["run"]
    current = {run[k] for k in ("current_phase_id", "current_stage_id", "current_task_id")}

    def label(key: str, name: str, mark: Status) -> Text:
        text = Text.assemble(
            (f"{MARKS[mark]} ", STYLES[mark]), (key, "bold" if key in current else "")
        )
        text.append(f" {name}", style="bold" if key in current else "")
        return text

    root = Tree(
        Text.assemble(
            (run["run_id"], "bold"),
            "  ",
            (run["status"], STYLES[Status(run["status"])]),
            f"  {_request_excerpt(run)}",
        )
    )
    parents = [root]  # parents[d]: the last node drawn at depth d (the run is depth 0)
    for depth, key, name, status in tree_rows(data):
        del parents[depth:]
        parents.append(parents[-1].add(label(key, name, status)))
    return root


def _snapshot_data(home: Home, store: TableStore, run_id: str | None) -> Any:
    return run_data(home, store, run_id) if run_id else runs_data(home, store)


def _snapshot(home: Home, store: TableStore, run_id: str | None, as_json: bool) -> str:
    data = _snapshot_data(home, store, run_id)
    if as_json:
        return json.dumps(data, ensure_ascii=False, indent=2)
    return render_tree(data) if run_id else render_runs(data)


def _live_view(home: Home, store: TableStore, run_id: str | None, as_json: bool) -> RenderableType:
    from rich.text import Text

    if run_id and not as_json:
        return live_tree(_snapshot_data(home, store, run_id))
    return Text(_snapshot(home, store, run_id, as_json))


def show_status(home_option: str | None, run_id: str | None, watch: bool, as_json: bool) -> None:
    """Print the status once, or redraw it live until Ctrl-C (rich)."""
    home = require_home(resolve_home(home_option))
    store = TableStore()
    if not watch:
        print(_snapshot(home, store, run_id, as_json))
        return
    from rich.live import Live

    stop = threading.Event()
    table = store.table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename)
    try:
        with Live(_live_view(home, store, run_id, as_json), auto_refresh=False) as live:
            while not stop.wait(0.5):  # a display refresh, not a wait for work
                live.update(_live_view(home, store, run_id, as_json), refresh=True)
                run = table.get(run_id) if run_id else None
                if run is not None and run.status in FINAL_STATUSES:
                    break
    except KeyboardInterrupt:
        pass
