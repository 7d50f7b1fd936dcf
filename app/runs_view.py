"""`multiverse runs`: the runs filtered by status and creation date, newest last.

Live runs by default; `--archived` adds the archived ones (`multiverse.archive`), marked. The
newest `limit` are shown (0: all), and a line says how many older ones matched too.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from app.status_view import folder_rows, render_runs, run_folders, runs_data, survey
from multiverse.archive import archived_rows
from multiverse.errors import UserError
from multiverse.home import require_home, resolve_home
from multiverse.models import FINAL_STATUSES, Status
from multiverse.schemas import PROCESS_RUNS
from multiverse.status_times import add_run_times, created_from_id
from multiverse.store import TableStore

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
