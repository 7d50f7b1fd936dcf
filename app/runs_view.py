"""`multiverse runs`: the runs filtered by status and creation date, newest last.

Live runs by default; `--archived` adds the archived ones (`multiverse.runs.archive`), marked. The
newest `limit` are shown (0: all), and a line says how many older ones matched too.

Also here: `multiverse open RUN`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.status_view import folder_rows, render_runs, run_folders, runs_data, survey
from multiverse.errors import RunStateError, UnknownRun, UserError
from multiverse.home import Home, require_home, resolve_home, visible_files
from multiverse.models import FINAL_STATUSES, AssetType, Status
from multiverse.runs import add_run_times, archived_rows, created_from_id, shards_of
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
    home_option: str | None, run_id: str, folder: bool, print_only: bool
) -> dict[str, object]:
    """Open the run's report (or its outputs folder); what was opened, and with what."""
    import typer

    home = require_home(resolve_home(home_option))
    outputs = home.outputs / run_id
    folders = (home.runs / run_id, home.archive_runs / run_id, outputs)
    if not any(path.is_dir() for path in folders):
        raise UnknownRun(run_id)
    target = outputs if folder else report_path(home, run_id)
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
