"""The Orchestrator's collaborators, what every step needs: the home, the table store, the roles
and the Speaker (`crew` where a step receives them)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property

from communicator.speaker import Speaker
from multiverse.disk_reserve import SpaceReserve
from multiverse.home import Home, RunPaths
from multiverse.journal import (
    TOMBSTONE_KEEP_SECONDS,
    Restoration,
    Tombstones,
    compact_tombstones,
)
from multiverse.models import (
    CatalogEntry,
    MajorStage,
    Phase,
    PhaseTemplate,
    ProcessRun,
    Task,
    ToolTask,
    UserInstruction,
)
from multiverse.roles import ExecutorRole, PlannerRole
from multiverse.schemas import (
    KNOWLEDGE_CATALOG,
    MAJOR_STAGES,
    PHASE_TEMPLATE,
    PHASES,
    PROCESS_RUNS,
    TASKS,
    TOOL_TASKS,
    USER_INSTRUCTIONS,
)
from multiverse.store import Table, TableStore
from orchestrator.catalog_rows import CatalogRows
from orchestrator.history_index import HistoryIndex
from orchestrator.learning import warm_index
from orchestrator.past_requests import PastRequests, RequestBook
from orchestrator.register_notice import RegisterNotice
from orchestrator.restorations import restoration_messages

DEFAULT_TOOL_TYPES = ("web_search", "data_visualization")


@dataclass(frozen=True)
class RunTables:
    """The four tables of one run."""

    paths: RunPaths
    phases: Table[Phase]
    stages: Table[MajorStage]
    tasks: Table[Task]
    tools: Table[ToolTask]


@dataclass
class Collaborators:
    """The Orchestrator's fixed collaborators; it never knows which implementation it has."""

    home: Home
    planner: PlannerRole
    executor: ExecutorRole
    speaker: Speaker
    store: TableStore = field(default_factory=TableStore)
    tool_types: tuple[str, ...] = DEFAULT_TOOL_TYPES
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
        paths = self.home.run(run_id)
        self._runs[run_id] = tables = RunTables(
            paths,
            self.store.table(PHASES, paths.db / PHASES.filename),
            self.store.table(MAJOR_STAGES, paths.db / MAJOR_STAGES.filename),
            self.store.table(TASKS, paths.db / TASKS.filename),
            self.store.table(TOOL_TASKS, paths.db / TOOL_TASKS.filename),
        )
        return tables
