"""The Orchestrator's collaborators, what every step needs: the home, the table store, the roles
and the Speaker (`crew` where a step receives them).

Also here: telling people what a merge put back after their save (SPEC §3.1); catalog rows
written into db/knowledge_base_catalog.md, merged with a person's edits; the one notice that
`db/process_runs.md` was rebuilt, whichever thread saw it first.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import structlog

from communicator import Speaker
from multiverse.agent_package import Route, handoff_routes
from multiverse.atomic import SpaceReserve
from multiverse.config import DaemonConfig, RuntimeMapping
from multiverse.home import Home
from multiverse.models import (
    CatalogEntry,
    PhaseTemplate,
    ProcessRun,
    UserInstruction,
)
from multiverse.roles import CommunicatorRole, ExecutorRole, Message, MessageKind, PlannerRole
from multiverse.store import (
    KNOWLEDGE_CATALOG,
    PHASE_TEMPLATE,
    PROCESS_RUNS,
    TOMBSTONE_KEEP_SECONDS,
    USER_INSTRUCTIONS,
    Restoration,
    Table,
    TableStore,
    Tombstones,
    compact_tombstones,
)
from orchestrator.evidence import RunTables
from orchestrator.past_runs import HistoryIndex, PastRequests, RequestBook, warm_index

log = structlog.get_logger(__name__)
SHOWN = 5


def restoration_messages(home: Home, restoration: Restoration) -> list[Message]:
    """One NOTICE per run the restoration concerns (run_id None: rows of no run)."""
    where = _relative(home, restoration)
    owner = _run_of_file(home, restoration)
    rows: dict[str | None, list[str]] = defaultdict(list)
    cells: dict[str | None, list[str]] = defaultdict(list)
    for row in restoration.rows:
        rows[owner or getattr(row, "run_id", None)].append(row.key)
    for row, values in restoration.cells:
        shown = ", ".join(f"{column} = {_short(value)}" for column, value in values.items())
        cells[owner or getattr(row, "run_id", None)].append(f"{row.key} ({shown})")
    messages = []
    for run_id in dict.fromkeys([*rows, *cells]):
        parts = []
        if rows.get(run_id):
            parts.append(f"rows it had written ({_listing(rows[run_id])})")
        if cells.get(run_id):
            parts.append(f"values it had written ({_listing(cells[run_id])})")
        text = (
            f"A save of `{where}` (an editor holding an older copy?) erased {' and '.join(parts)}. "
            "The daemon put them back; your own edits are kept. To remove a row on purpose, use "
            f"`multiverse delete-row {where} KEY`."
        )
        messages.append(Message(kind=MessageKind.NOTICE, run_id=run_id, facts={"text": text}))
    if restoration.kept_aside is not None:
        kept = _relative(home, replace(restoration, path=restoration.kept_aside))
        text = (
            f"Two saves of `{where}` landed while the daemon wrote it, the second made from the "
            f"daemon's version of that instant: it lacks some edits of the first. The first is "
            f"kept at `{kept}`: copy back what you miss, then delete it."
        )
        messages.append(Message(kind=MessageKind.NOTICE, run_id=owner, facts={"text": text}))
    return messages


def _relative(home: Home, restoration: Restoration) -> str:
    try:
        return restoration.path.relative_to(home.root).as_posix()
    except ValueError:
        return str(restoration.path)


def _run_of_file(home: Home, restoration: Restoration) -> str | None:
    """The run a run table belongs to (runs/<run_id>/db/...), None for a global table."""
    parts = _relative(home, restoration).split("/")
    if len(parts) >= 3 and parts[0] == "runs" and parts[2] == "db":
        return parts[1]
    return None


def _short(value: Any) -> str:
    text = str(value.value if hasattr(value, "value") else value)
    return text if len(text) <= 40 else text[:39] + "…"


def _listing(items: list[str]) -> str:
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


class CatalogRows:
    """Writes catalog rows at once, remembering what it wrote (the base of a three-way merge)."""

    def __init__(self, store: TableStore, path: Path) -> None:
        self.store = store
        self.path = path
        # The row last written for each file: the base of a three-way merge with a person's edit.
        self._written: dict[str, CatalogEntry] = {}
        self._guard = threading.Lock()

    def write(self, entries: list[CatalogEntry]) -> None:
        """Upsert these rows into the catalog file now."""
        with self._guard:
            written = dict(self._written)
        self.store.modify_indexed(
            KNOWLEDGE_CATALOG, self.path, lambda rows, index: upsert(rows, index, entries, written)
        )
        with self._guard:
            self._written.update((entry.file_path, entry) for entry in entries)


def upsert(
    rows: list[CatalogEntry],
    index: Mapping[str, int],
    entries: list[CatalogEntry],
    written: Mapping[str, CatalogEntry] | None = None,
) -> list[CatalogEntry]:
    """Rows with each entry replacing the row of the same file_path, or appended.

    Merged cell by cell with the row last `written` for the file: a cell a person changed since
    (the file's value is not the one written) keeps the person's value, so a file catalogued
    again never undoes an edit; the other cells take the entry's values.
    """
    appended: dict[str, int] = {}
    for entry in entries:
        where = index.get(entry.file_path, appended.get(entry.file_path))
        if where is None:
            appended[entry.file_path] = len(rows)
            rows.append(entry)
            continue
        current, before = rows[where], (written or {}).get(entry.file_path)
        if current == entry or before == entry:
            continue
        if before is None:
            rows[where] = entry
            continue
        kept = {
            name: getattr(current, name)
            for name in type(entry).model_fields
            if getattr(current, name) != getattr(before, name)  # the person's edit
        }
        rows[where] = entry.model_copy(update=kept) if kept else entry
    return rows




class RegisterNotice:
    """Says that the register of runs was missing (or lacked rows) once per sighting."""

    def __init__(self, home: Home, speaker: Speaker, path: Path) -> None:
        self.home = home
        self.speaker = speaker
        self.path = path
        self._lock = threading.RLock()
        self._looking = 0  # depth of the registry's looks in progress (this lock's holder)
        self._pending = False

    @contextmanager
    def looking(self) -> Iterator[None]:
        """The registry's look: sightings made meanwhile are said at its end, by it."""
        with self._lock:
            self._looking += 1
            try:
                yield
            finally:
                self._looking -= 1

    def seen_missing(self, run_ids: Callable[[], list[str]]) -> None:
        """Record that the file was found missing; say so now unless a look will."""
        with self._lock:
            self._pending = True
            if not self._looking and self.path.exists():
                self._pending = False
                self.say(run_ids(), was_missing=True)

    def take(self) -> bool:
        """Whether a sighting waits to be said (and it is now the caller's to say)."""
        with self._lock:
            pending, self._pending = self._pending, False
            return pending

    def say(self, run_ids: list[str], *, was_missing: bool) -> None:
        """Tell the person the register was rebuilt (missing) or had rows put back."""
        where = self.home.relative(self.path)
        more = f" and {len(run_ids) - 10} more" if len(run_ids) > 10 else ""
        shown = ", ".join(run_ids[:10]) + more
        if was_missing:
            text = (
                f"`{where}` was missing: I rebuilt it from the run folders under runs/ "
                f"({len(run_ids)} run(s): {shown}). Runs that were waiting go on as before."
            )
        else:
            text = (
                f"`{where}` had no row for {len(run_ids)} run folder(s) under runs/ ({shown}): "
                "their rows are restored from the folders. To remove a run's row on purpose, "
                f"use `multiverse delete-row {where} RUN_ID`."
            )
        log.info("process_runs_restored", run_ids=run_ids, file_was_missing=was_missing)
        self.speaker.tell(Message(kind=MessageKind.NOTICE, facts={"text": text}))


DEFAULT_TOOL_TYPES = ("web_search", "data_visualization")


@dataclass(frozen=True)
class Team:
    """The roles runtime-mapping.yaml chooses, taken whole when the file changes (the
    channels and the Speaker's console stay as the daemon started them)."""

    planner: PlannerRole
    executor: ExecutorRole
    communicator: CommunicatorRole
    tool_types: tuple[str, ...] = DEFAULT_TOOL_TYPES
    search_provider: str | None = None


# runtime-mapping.yaml read again: the new roles and mapping, why an edit was refused (said
# once), or None when nothing changed (`app.team.Reloader`).
Reload = Callable[[], tuple[Team, RuntimeMapping] | str | None]


def reconfigured(crew: Collaborators, reload: Reload) -> DaemonConfig | None:
    """runtime-mapping.yaml read again: a valid edit's roles taken for the steps that start
    from now (its daemon settings returned); an invalid edit said, the last good one kept."""
    outcome = reload()
    if outcome is None:
        return None
    if isinstance(outcome, str):
        log.info("mapping_refused", error=outcome)  # said on the console below
        crew.speaker.console(
            f"runtime-mapping.yaml was not applied: {outcome}. The last good configuration is "
            "kept; fix the file and save it again."
        )
        return None
    team, mapping = outcome
    crew.use(team)
    log.info("mapping_reloaded", tool_types=team.tool_types)
    crew.speaker.console(
        "runtime-mapping.yaml changed: the steps that start from now use it (channels change "
        "at the next `multiverse start`)"
    )
    return mapping.daemon


@dataclass
class Collaborators:
    """The Orchestrator's fixed collaborators; it never knows which implementation it has."""

    home: Home
    planner: PlannerRole
    executor: ExecutorRole
    speaker: Speaker
    store: TableStore = field(default_factory=TableStore)
    tool_types: tuple[str, ...] = DEFAULT_TOOL_TYPES
    search_provider: str | None = None  # the web_search provider the mapping configures
    # A role's agent package where it is not the shipped one (its card's handoffs are read).
    package_dirs: dict[str, Path] = field(default_factory=dict)
    reserve: SpaceReserve = field(init=False)
    catalog_rows: CatalogRows = field(init=False)
    _runs: dict[str, RunTables] = field(init=False, default_factory=dict, repr=False)
    register_notice: RegisterNotice = field(init=False, repr=False)
    history: HistoryIndex = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.reserve = SpaceReserve(self.home.space_reserve)
        if self.store.journal.tombstones is None:
            self.store.journal.tombstones = Tombstones(self.home.deleted_rows)
        if self.store.on_restore is None:
            self.store.on_restore = self.report_restoration
        self.history = HistoryIndex(self.home)
        self.register_notice = RegisterNotice(
            self.home, self.speaker, self.home.db / PROCESS_RUNS.filename
        )
        self.catalog_rows = CatalogRows(self.store, self.home.db / KNOWLEDGE_CATALOG.filename)

    def use(self, team: Team) -> None:
        """Work with these roles from the next call on: a step in flight keeps the role it
        called, the steps that start after take the new ones."""
        self.planner, self.executor = team.planner, team.executor
        self.speaker.role = team.communicator
        self.tool_types, self.search_provider = team.tool_types, team.search_provider

    def routes(self) -> frozenset[Route]:
        """The handoffs the roles' agent cards give now (read afresh, SPEC §10.1), with the
        ones SPEC makes mandatory."""
        return handoff_routes(self.package_dirs)

    def warm_indexes(self) -> None:
        """Build the indexes the next request will need, so it does not wait for them.

        The ranking index of past requests (built again after each intake, as the new run
        joins the past), and the catalog grouped by run, which a plan's context reads and
        each later write keeps up to date at the cost of the rows it changed.
        """
        warm_index(self.past_runs())
        self.catalog.rows_with("run_id", ())

    def past_runs(self, but: str | None = None) -> PastRequests:
        """Every run the home holds but `but`: the live rows, then the archived ones."""
        live = RequestBook.of(row for row in self.process_runs.rows() if row.run_id != but)
        return PastRequests([live, *self.history.requests()])

    def report_restoration(self, restoration: Restoration) -> None:
        """Say what a merge put back after someone's save (console and the runs' messages)."""
        if restoration.file_missing and restoration.path == self.process_runs.path:
            # A deleted register of runs, recreated by whichever write came first: said once,
            # by this write or by the registry's look in progress (`register_notice.py`).
            self.register_notice.seen_missing(lambda: [r.run_id for r in self.process_runs.rows()])
            return
        for message in restoration_messages(self.home, restoration):
            self.speaker.tell(message)

    def forget_tombstoned(self) -> int:
        """Apply the tombstones to this daemon's journal, then drop those older than an hour.

        The tombstone file would otherwise grow by a line per archived row for ever, and be
        read whole at each change; returns how many lines were dropped.
        """
        self.store.journal.forget_deleted()
        older_than = time.time() - TOMBSTONE_KEEP_SECONDS
        return compact_tombstones(self.home.deleted_rows, older_than)

    @cached_property
    def process_runs(self) -> Table[ProcessRun]:
        """db/process_runs.md."""
        return self.store.table(PROCESS_RUNS, self.home.db / PROCESS_RUNS.filename)

    @cached_property
    def instructions(self) -> Table[UserInstruction]:
        """db/user_instructions.md."""
        return self.store.table(USER_INSTRUCTIONS, self.home.db / USER_INSTRUCTIONS.filename)

    @cached_property
    def catalog(self) -> Table[CatalogEntry]:
        """db/knowledge_base_catalog.md."""
        return self.store.table(KNOWLEDGE_CATALOG, self.home.db / KNOWLEDGE_CATALOG.filename)

    @cached_property
    def phase_template(self) -> Table[PhaseTemplate]:
        """db/templates/default_phases.md."""
        return self.store.table(PHASE_TEMPLATE, self.home.phase_template)

    def run(self, run_id: str) -> RunTables:
        """The tables of one run."""
        known = self._runs.get(run_id)
        if known is not None:
            return known
        self._runs[run_id] = tables = RunTables.of(self.home.run(run_id), self.store)
        return tables
