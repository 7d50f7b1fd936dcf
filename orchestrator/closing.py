"""Stage and phase completions on their way to a run's tables, written behind (`behind.py`).

A stage is COMPLETED when its last task is, and a phase when its last stage is (SPEC §7): these
statuses follow from the rows below them. So the step that finishes a stage's last task queues
the closes here instead of writing two more tables at once. Every decision of this process
sees them (`overlay`), and they reach the tables within the flush delay, in one write per table
for every close queued meanwhile. A crash that loses them leaves a PENDING stage whose tasks
are all COMPLETED, which `next_step` closes again (COMPLETE_STAGE, then COMPLETE_PHASE).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any, TypeVar

from multiverse.errors import TableError
from multiverse.models import MajorStage, Phase, Status
from multiverse.store import Table
from orchestrator.behind import WriteBehind


class Level(StrEnum):
    """Which table a close goes to."""

    STAGE = "stage"
    PHASE = "phase"


Close = tuple[str, Level, str]  # run_id, level, stage_id or phase_id
RowT = TypeVar("RowT", MajorStage, Phase)
# The table a level of a run is written to: major_stages.md or phases.md.
TableOf = Callable[[str, Level], "Table[MajorStage] | Table[Phase]"]


class PendingCloses:
    """Stage and phase completions not yet written."""

    def __init__(self, table_of: TableOf) -> None:
        self.table_of = table_of
        # The value is the closed row, ready for `overlay`; the write closes the row on disk.
        self.behind: WriteBehind[Close, MajorStage | Phase] = WriteBehind("closes", self._write)

    def close(self, run_id: str, row: MajorStage | Phase) -> None:
        """Queue the completion of a stage or phase row (as the step that finished it saw it)."""
        if isinstance(row, MajorStage):
            self.behind.put((run_id, Level.STAGE, row.stage_id), _closed(row))
        else:
            self.behind.put((run_id, Level.PHASE, row.phase_id), _closed(row))

    def overlay(
        self, run_id: str, stages: list[MajorStage], phases: list[Phase]
    ) -> tuple[list[MajorStage], list[Phase]]:
        """The run's stages and phases as they are once the queued closes are written."""
        queued = [row for (run, _, _), row in self.behind.pending().items() if run == run_id]
        if not queued:
            return stages, phases
        closed_stages = {r.stage_id: r for r in queued if isinstance(r, MajorStage)}
        closed_phases = {r.phase_id: r for r in queued if isinstance(r, Phase)}
        pending = Status.PENDING
        return (
            [closed_stages.get(s.stage_id, s) if s.status is pending else s for s in stages],
            [closed_phases.get(p.phase_id, p) if p.status is pending else p for p in phases],
        )

    def flush(self) -> None:
        """Write every queued close now (a table that fails keeps its closes queued)."""
        self.behind.flush()

    def forget(self, run_id: str) -> None:
        """Drop the run's queued closes (after its failure was recorded, nothing more goes)."""
        for key in self.behind.pending():
            if key[0] == run_id:
                self.behind.discard(key)

    def _write(self, batch: dict[Close, MajorStage | Phase]) -> None:
        groups: dict[tuple[str, Level], set[str]] = {}
        for run_id, level, row_id in batch:
            groups.setdefault((run_id, level), set()).add(row_id)
        failures: list[TableError] = []
        for (run_id, level), row_ids in groups.items():
            try:
                _close_rows(self.table_of(run_id, level), row_ids)
            except TableError as error:
                failures.append(error)  # the other tables are still written
        if failures:
            raise failures[0]


def _close_rows(table: Table[MajorStage] | Table[Phase], row_ids: set[str]) -> None:
    """Mark the PENDING rows among `row_ids` COMPLETED (others were closed or failed meanwhile)."""

    def apply(rows: list[Any], index: Mapping[str, int]) -> list[Any]:
        for row_id in row_ids:
            position = index.get(row_id)
            if position is not None:
                rows[position] = _closed(rows[position])
        return rows

    table.store.modify_indexed(table.spec, table.path, apply)


def _closed(row: RowT) -> RowT:
    """The row COMPLETED, if it is still PENDING (a FAILED row stays as it is)."""
    if row.status is not Status.PENDING:
        return row
    return row.model_copy(update={"status": Status.COMPLETED})
