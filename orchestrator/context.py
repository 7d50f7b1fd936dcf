"""Building the selective context a role gets: never the whole home (SPEC §7.2, §10.3)."""

from __future__ import annotations

from multiverse.contracts import LearningContext, PlanContext, TaskAssignment, ToolAssignment
from multiverse.models import CatalogEntry, InstructionStatus, UserInstruction
from orchestrator.collaborators import Collaborators
from orchestrator.history import archived_catalog, instructions_of
from orchestrator.learning import learning_context_path, read_learning_context
from orchestrator.view import RunView


def request_text(crew: Collaborators, run_id: str) -> str:
    """The run's request as dropped (runs/<run_id>/request.md)."""
    return crew.run(run_id).paths.request.read_text(encoding="utf-8")


def learning(crew: Collaborators, run_id: str) -> LearningContext:
    """The run's ranked past runs."""
    return read_learning_context(learning_context_path(crew.run(run_id).paths))


def relevant_catalog(crew: Collaborators, run_id: str, related: set[str]) -> list[CatalogEntry]:
    """Catalog rows of the inputs, of this run, and of the similar past runs, in file order."""
    owners = {None, run_id, *related}
    rows = crew.catalog.rows_with("run_id", owners)
    if related:
        known = {row.file_path for row in rows}
        rows += [row for row in archived_catalog(crew, related) if row.file_path not in known]
    return rows


def active_instructions(rows: list[UserInstruction], run_ids: set[str]) -> list[UserInstruction]:
    """The ACTIVE instructions of the given runs."""
    return [r for r in rows if r.run_id in run_ids and r.status is InstructionStatus.ACTIVE]


def plan_context(
    crew: Collaborators,
    view: RunView,
    modification: str | None = None,
    modifications: list[str] | None = None,
) -> PlanContext:
    """Everything a plan of this run may be made from."""
    run_id = view.run_id
    past = learning(crew, run_id)
    past_ids = {p.run_id for p in past.past_runs}
    return PlanContext(
        home=str(crew.home.root),
        run_id=run_id,
        request=request_text(crew, run_id),
        instructions=active_instructions(crew.instructions.rows(), {run_id}),
        past_instructions=active_instructions(instructions_of(crew, past_ids), past_ids),
        learning=past,
        catalog=relevant_catalog(crew, run_id, past_ids),
        phases=view.phases,
        stages=view.stages,
        tasks=view.tasks,
        modification=modification,
        modifications=modifications if modifications is not None else [],
        tool_types=list(crew.tool_types),
    )


def task_assignment(
    crew: Collaborators, view: RunView, phase_id: str, stage_id: str, task_id: str
) -> TaskAssignment:
    """One core task with its phase, stage and the run's constitution."""
    run_id = view.run_id
    return TaskAssignment(
        home=str(crew.home.root),
        run_id=run_id,
        request=request_text(crew, run_id),
        phase=next(p for p in view.phases if p.phase_id == phase_id),
        stage=next(s for s in view.stages if s.stage_id == stage_id),
        task=next(t for t in view.tasks if t.task_id == task_id),
        instructions=active_instructions(crew.instructions.rows(), {run_id}),
        catalog=relevant_catalog(crew, run_id, set()),
    )


def tool_assignment(
    crew: Collaborators, view: RunView, phase_id: str, task_id: str, tool_task_id: str
) -> ToolAssignment:
    """One tool task with its parent task."""
    run_id = view.run_id
    return ToolAssignment(
        home=str(crew.home.root),
        run_id=run_id,
        request=request_text(crew, run_id),
        phase=next(p for p in view.phases if p.phase_id == phase_id),
        task=next(t for t in view.tasks if t.task_id == task_id),
        tool_task=next(t for t in view.tool_tasks if t.tool_task_id == tool_task_id),
        catalog=relevant_catalog(crew, run_id, set()),
    )
