"""Where archived runs live, and reading them (SPEC §13 `multiverse archive`).

A final run can be moved out of the live tables and folders (`orchestrator.archiving`): its rows
go to the dated shard `db/archive/<YYYY-MM-DDTHH>/` (the hour in its run_id; the same three
global tables in the same format), its folder to `runs/archive/<run_id>/`. Its deliverables stay in
`outputs/<run_id>/`. Archived runs stay readable (`show`, `open`, `logs`, `status RUN`), and the
learning context and catalog lookups still read them. Live rows win over archived ones with the
same key (a crash between two steps of an archive can leave both for a moment).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from multiverse.home import Home, RunPaths
from multiverse.models import RUN_ID, ProcessRun, Row
from multiverse.store import PROCESS_RUNS, TableSpec, TableStore

R = TypeVar("R", bound=Row)
# An hour's shard, or a day's (shards of archives made before 2026-11-24).
_SHARD = re.compile(r"\d{4}-\d{2}-\d{2}(T\d{2})?")
_RUN_ID = re.compile(RUN_ID)


class Moved(BaseModel):
    """One run archived: its shard of the tables and its folder now."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    run_id: str
    shard: str
    folder: str


class Refused(BaseModel):
    """One run left live, and why."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    run_id: str
    status: str | None
    reason: str


class ArchiveResult(BaseModel):
    """What an archive moved and what it left live."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    archived: list[Moved] = []
    refused: list[Refused] = []
    dry_run: bool = False


def shard_of(run_id: str) -> str:
    """The shard a run's rows are archived in: `YYYY-MM-DDTHH`, the hour of its creation.

    An hour, not a day or a month: archiving rewrites the shard tables whole, so their size is
    what an archive costs. A busy home's day (12,000 runs in bench/history_scale.py) made each
    archive batch rewrite 6.5 MB of day shard; an hour's runs keep it small.
    """
    return f"{run_id[4:8]}-{run_id[8:10]}-{run_id[10:12]}T{run_id[13:15]}"


def shards_of(run_id: str) -> tuple[str, str]:
    """The shards a run's archived rows may be in: its hour's, then its day's (the shards of
    archives made before 2026-11-24 were a day each; they are read, never written)."""
    hour = shard_of(run_id)
    return hour, hour[:10]


def shard_dirs(home: Home) -> list[Path]:
    """The archive shards of the home, oldest first."""
    try:
        names = os.listdir(home.archive_db)
    except OSError:
        return []
    return [home.archive_db / name for name in sorted(names) if _SHARD.fullmatch(name)]


def archived_rows(store: TableStore, home: Home, spec: TableSpec[R]) -> list[R]:
    """Every archived row of one global table, shard after shard."""
    rows: list[R] = []
    for shard in shard_dirs(home):
        path = shard / spec.filename
        if path.exists():
            rows.extend(store.snapshot(spec, path).rows)
    return rows


def any_archived(home: Home) -> bool:
    """Whether any run is archived (the listing of runs/archive/ stops at the first)."""
    try:
        with os.scandir(home.archive_runs) as entries:
            return any(entry.name.startswith("run-") for entry in entries)
    except OSError:
        return False


def archived_count(home: Home) -> int:
    """How many runs are archived (a listing of runs/archive/, nothing parsed)."""
    try:
        names = os.listdir(home.archive_runs)
    except OSError:
        return 0
    return sum(name.startswith("run-") for name in names)


def is_archived(home: Home, run_id: str) -> bool:
    """Whether the run's folder is in runs/archive/ and no longer in runs/."""
    return not (home.runs / run_id).exists() and (home.archive_runs / run_id).is_dir()


def run_paths(home: Home, run_id: str) -> RunPaths:
    """The run's paths where its folder is now: runs/<id>/, else runs/archive/<id>/."""
    if is_archived(home, run_id):
        return RunPaths(home.archive_runs / run_id, home.outputs / run_id)
    return home.run(run_id)


def archived_path(file_path: str, run_id: str) -> str:
    """A home-relative path as it reads once the run is archived (runs/<id>/… moves)."""
    prefix = f"runs/{run_id}/"
    if file_path.startswith(prefix):
        return f"runs/archive/{run_id}/{file_path[len(prefix) :]}"
    return file_path


def merged(live: list[Any], archived: list[Any], key: str) -> list[Any]:
    """Live rows, then the archived rows whose key no live row has."""
    seen = {getattr(row, key) for row in live}
    return live + [row for row in archived if getattr(row, key) not in seen]


def is_run_id(text: str) -> bool:
    """Whether `text` has the form of a run id (`run-YYYYMMDD-…`)."""
    return _RUN_ID.fullmatch(text) is not None


def archived_run(store: TableStore, home: Home, run_id: str) -> ProcessRun | None:
    """The archived row of a run (read from its shard only), or None."""
    if not is_run_id(run_id):
        return None
    for shard in shards_of(run_id):
        path = home.archive_db / shard / PROCESS_RUNS.filename
        if path.exists() and (row := store.table(PROCESS_RUNS, path).get(run_id)) is not None:
            return row
    return None
