"""Where a fork cuts a run (`multiverse fork RUN --from STEP`): pure, from the run's tables.

A fork redoes a run from STEP on, so its tables are the run's as they stood just before STEP
began: the rows before STEP as they were (all COMPLETED), STEP and what follows it PENDING, and
the plans made after STEP began removed, so that they are made again:
- a phase (`P3`): it and the later phases PENDING; their stages (and tasks, tool tasks) removed;
- a stage (`P3-S02`): it and the later stages of its phase PENDING (the phase's stage plan
  stays); their tasks removed; its phase and the later phases PENDING, the later phases' stages
  removed;
- a task (`P3-S02-T03`, or Phase 0's `T03`, `T04`): it and the later tasks of its stage PENDING
  (the stage's task plan stays), their tool tasks removed; the later stages of its phase
  PENDING, their tasks removed; its stage, its phase and the later phases PENDING as above.
`next_step` then redoes exactly the steps the run took from STEP on: nothing tells it the run
is a fork. Phase 0 before T03 (the set-up, the proposal and the confirmed instructions) is
what every fork keeps; a tool task is redone with its task.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from multiverse.errors import RunStateError, UserError
from multiverse.models import (
    PHASE0_ID,
    PHASE0_STAGE,
    PHASE_ID,
    STAGE_ID,
    TASK_ID,
    TOOL_TASK_ID,
    MajorStage,
    Phase,
    Status,
    Task,
    ToolTask,
)

FIRST_STEP = "T03"  # without --from: everything after the instructions were confirmed
KEPT_TASKS = ("T00", "T02")  # the set-up and the confirmed instructions: every fork keeps them
R = TypeVar("R", Phase, MajorStage, Task, ToolTask)


@dataclass(frozen=True)
class RunRows:
    """The four tables of one run."""

    phases: list[Phase]
    stages: list[MajorStage]
    tasks: list[Task]
    tools: list[ToolTask]


@dataclass(frozen=True)
class Cut:
    """A run's tables cut at `step`: the rows a fork starts from, and what it keeps and redoes."""

    step: str
    rows: RunRows
    kept: list[str]  # ids of the rows kept COMPLETED, in table order
    redone: list[str]  # ids of the rows kept as PENDING (their plans that follow are removed)

    @property
    def kept_steps(self) -> set[str]:
        """The tasks and tool tasks kept: their files go with the fork."""
        done = [row.key for row in self.rows.tasks if row.status is Status.COMPLETED]
        return {*done, *(row.key for row in self.rows.tools if row.status is Status.COMPLETED)}


def cut(rows: RunRows, step: str | None) -> Cut:
    """The run's rows cut at `step` (None: FIRST_STEP); a UserError for a step it cannot be."""
    step = (step or FIRST_STEP).strip()
    phase, stage, task = _place(rows, step)
    phase_order = _phase_order(phase)
    stage_row = next((s for s in rows.stages if s.stage_id == stage), None)
    task_row = next((t for t in rows.tasks if t.task_id == task), None)

    def phase_state(row: Phase) -> bool | None:  # True: kept as it is; False: PENDING
        return _phase_order(row.phase_id) < phase_order

    def stage_state(row: MajorStage) -> bool | None:  # None: removed (planned after STEP)
        if row.phase_id != phase:
            return True if _phase_order(row.phase_id) < phase_order else None
        if stage_row is None:
            return None
        return _before(row, stage_row)

    stage_states = {row.stage_id: stage_state(row) for row in rows.stages}

    def task_state(row: Task) -> bool | None:
        state = stage_states.get(row.stage_id)
        if state is not False:
            return state
        if row.stage_id != stage or task_row is None:
            return None
        return _before(row, task_row)

    task_states = {row.task_id: task_state(row) for row in rows.tasks}
    cut_rows = RunRows(
        phases=_apply(rows.phases, phase_state),
        stages=_apply(rows.stages, stage_state),
        tasks=_apply(rows.tasks, task_state),
        tools=_apply(rows.tools, lambda row: True if task_states.get(row.parent_task_id) else None),
    )
    everything: list[Phase | MajorStage | Task | ToolTask] = [
        *cut_rows.phases, *cut_rows.stages, *cut_rows.tasks, *cut_rows.tools
    ]  # fmt: skip
    kept = [row.key for row in everything if row.status is Status.COMPLETED]
    redone = [row.key for row in everything if row.status is Status.PENDING]
    return Cut(step=step, rows=cut_rows, kept=kept, redone=redone)


def _place(rows: RunRows, step: str) -> tuple[str, str | None, str | None]:
    """The phase, stage and task STEP names (stage and task None for a phase)."""
    if re.fullmatch(TOOL_TASK_ID, step):
        task = step.rsplit("-", 2)[0]
        raise UserError(f"{step} is a tool task: fork from its task ({task}), which redoes it")
    if step in (PHASE0_ID, PHASE0_STAGE, *KEPT_TASKS):
        raise UserError(
            f"a fork keeps Phase 0 up to the confirmed instructions, so it cannot start at "
            f"{step}: fork from {FIRST_STEP} at the earliest (a new request starts afresh)"
        )
    if re.fullmatch(PHASE_ID, step) and any(p.phase_id == step for p in rows.phases):
        return step, None, None
    stage = next((s for s in rows.stages if s.stage_id == step), None)
    if re.fullmatch(STAGE_ID, step) and stage is not None:
        return stage.phase_id, step, None
    task_row = next((t for t in rows.tasks if t.task_id == step), None)
    if re.fullmatch(TASK_ID, step) and task_row is not None:
        owner = next((s for s in rows.stages if s.stage_id == task_row.stage_id), None)
        if owner is not None:
            return owner.phase_id, owner.stage_id, step
    phases = ", ".join(p.phase_id for p in rows.phases if p.phase_id != PHASE0_ID)
    raise UserError(
        f"{step!r} is no step of this run: give a phase ({phases or 'none yet'}), a stage "
        f"(like P3-S01) or a task (like P3-S01-T01, or {FIRST_STEP}) of its tables"
    )


def _phase_order(phase_id: str) -> int:
    return int(phase_id[1:])


def _before(row: MajorStage | Task, step: MajorStage | Task) -> bool:
    """Whether a row of the same plan comes before STEP's (False: STEP or after it)."""
    return (row.execution_order, row.key) < (step.execution_order, step.key)


def _apply(rows: Sequence[R], state: Callable[[R], bool | None]) -> list[R]:
    """The rows a fork keeps: as they were (True), PENDING (False); None ones are removed."""
    kept: list[R] = []
    for row in rows:
        wanted = state(row)
        if wanted is None:
            continue
        if wanted and row.status is not Status.COMPLETED:
            raise RunStateError(
                f"{row.key} comes before the fork's step and is {row.status.value}, not "
                f"COMPLETED: fork from {row.key} or an earlier step"
            )
        kept.append(row if wanted else row.model_copy(update={"status": Status.PENDING}))
    return kept
