"""Where each run's attention is now: the `current_*` columns of process_runs.md (SPEC §7).

The pointer is for people watching; no decision reads it (`next_step` works from the run's own
tables), and a position lost in a crash is recorded again by the next step. So moves are written
behind (`write_behind.py`): a position that a newer move replaced before the flush is never written.
Status changes (FAILED, COMPLETED, CANCELLED) write their own pointer; they first `settle` the
run so that a later flush cannot put an old position back.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from multiverse.models import FINAL_STATUSES, ProcessRun
from multiverse.schemas import PROCESS_RUNS
from multiverse.store import TableStore
from orchestrator.write_behind import WriteBehind

Pointer = tuple[str | None, str | None, str | None]  # phase_id, stage_id, task_id


class Attention:
    """Records the runs' attention pointers behind the steps."""

    def __init__(self, store: TableStore, path: Path) -> None:
        self.store = store
        self.path = path
        self.behind: WriteBehind[str, Pointer] = WriteBehind(path.name, self._write)

    def move(self, run_id: str, pointer: Pointer, recorded: Pointer) -> None:
        """The run's attention moved to `pointer`; `recorded` is what its row says now."""
        if pointer == recorded:
            self.behind.discard(run_id)
        else:
            self.behind.put(run_id, pointer)

    def where(self, run_id: str) -> Pointer | None:
        """The run's position not yet written, if any."""
        return self.behind.get(run_id)

    def settle(self, run_id: str) -> None:
        """Forget the run's unwritten position (its next write sets the pointer itself)."""
        self.behind.discard(run_id)

    def flush(self) -> None:
        """Write every unwritten position now."""
        self.behind.flush()

    def _write(self, moves: dict[str, Pointer]) -> None:
        self.store.modify_indexed(
            PROCESS_RUNS, self.path, lambda rows, index: _moved(rows, index, moves)
        )


def _moved(
    rows: list[ProcessRun], index: Mapping[str, int], moves: Mapping[str, Pointer]
) -> list[ProcessRun]:
    for run_id, (phase, stage, task) in moves.items():
        position = index.get(run_id)
        if position is None or rows[position].status in FINAL_STATUSES:
            continue  # deleted by a person, or finished: its final write set the pointer
        rows[position] = rows[position].model_copy(
            update={"current_phase_id": phase, "current_stage_id": stage, "current_task_id": task}
        )
    return rows
