"""The role seam of a step: the selective context a role gets, never the whole home (SPEC §7.2,
§10.3), and the checks applied to what it returns before a table is touched.
"""

from __future__ import annotations

import structlog

from multiverse.models import (
    CatalogEntry,
    InstructionStatus,
    MajorStage,
    Status,
    Task,
    ToolTask,
    UserInstruction,
)
from multiverse.roles import (
    LearningContext,
    PlanContext,
    ResultSignal,
    TaskAssignment,
    ToolAssignment,
)
from multiverse.spec import RequestSpec
from orchestrator.crew import Collaborators
from orchestrator.decide import FailureRecord, RunView, Step
from orchestrator.evidence import SignalBox
from orchestrator.learning import (
    archived_catalog,
    instructions_of,
    learning_context_path,
    read_learning_context,
)
from orchestrator.perform.ending import StepFailed, task_words

log = structlog.get_logger(__name__)


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


def frozen_spec(crew: Collaborators, run_id: str) -> RequestSpec | None:
    """The run's request spec as CONFIRM froze it (runs/<run_id>/spec.json); None before
    CONFIRM, and for a run made before there were specs."""
    path = crew.home.run(run_id).spec
    try:
        spec = RequestSpec.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:  # a damaged file: every step still works without
        log.warning("spec_unreadable", run_id=run_id, path=str(path), error=str(error)[:300])
        return None
    return spec if spec.confirmed else None


def plan_context(
    crew: Collaborators,
    view: RunView,
    modification: str | None = None,
    modifications: list[str] | None = None,
) -> PlanContext:
    """Everything a plan of this run may be made from (the frozen spec once confirmed)."""
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
        spec=frozen_spec(crew, run_id),
        search_provider=crew.search_provider,
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
        spec=frozen_spec(crew, run_id),
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
        instructions=active_instructions(crew.instructions.rows(), {run_id}),
        catalog=relevant_catalog(crew, run_id, set()),
        spec=frozen_spec(crew, run_id),
    )


def _plan_failure(run_id: str, where: str, error: str) -> StepFailed:
    return StepFailed(FailureRecord(role="planner", error=f"invalid plan for {where}: {error}"))


def checked_tasks(tasks: list[Task], run_id: str, stage_id: str) -> list[Task]:
    """The planned tasks, refused unless they belong to this run and stage and are PENDING."""
    for task in tasks:
        if task.run_id != run_id or task.stage_id != stage_id or task.status is not Status.PENDING:
            raise _plan_failure(run_id, stage_id, f"task {task.task_id} does not belong here")
    return tasks


def checked_stage_tasks(stages: list[MajorStage], tasks: list[Task], run_id: str) -> list[Task]:
    """Tasks planned with their stages, refused unless each belongs to one of them."""
    planned = {stage.stage_id for stage in stages}
    for task in tasks:
        if task.stage_id not in planned:
            raise _plan_failure(run_id, task.stage_id, f"task {task.task_id} has no planned stage")
        checked_tasks([task], run_id, task.stage_id)
    return tasks


def checked_stages(stages: list[MajorStage], run_id: str, phase_id: str) -> list[MajorStage]:
    """The planned stages, refused unless they belong to this run and phase and are PENDING."""
    for stage in stages:
        if (
            stage.run_id != run_id
            or stage.phase_id != phase_id
            or stage.status is not Status.PENDING
        ):
            raise _plan_failure(run_id, phase_id, f"stage {stage.stage_id} does not belong here")
    return stages


def checked_tool_tasks(tools: list[ToolTask], run_id: str, task_id: str) -> list[ToolTask]:
    """The planned tool tasks, refused unless they belong to this run and task."""
    for tool in tools:
        if tool.run_id != run_id or tool.parent_task_id != task_id:
            raise _plan_failure(run_id, task_id, f"tool task {tool.tool_task_id} is misplaced")
    return tools


def executor_result(
    crew: Collaborators, view: RunView, step: Step, signal: ResultSignal
) -> ResultSignal:
    """Persist the Executor's signal as evidence; a FAILED one becomes a StepFailed."""
    step_id = step.tool_task_id or step.task_id
    assert step_id is not None
    SignalBox(crew.home.run(view.run_id).signals).write(step_id, signal)
    if signal.status == "FAILED":
        purpose = _purpose(view, step)
        raise StepFailed(
            FailureRecord(
                role="executor",
                phase_id=step.phase_id,
                stage_id=step.stage_id,
                task_id=step.task_id,
                tool_task_id=step.tool_task_id,
                purpose=purpose,
                error=signal.error or "the Executor reported FAILED without an error message",
            )
        )
    return signal


def _purpose(view: RunView, step: Step) -> str:
    if step.tool_task_id:
        tool = next((t for t in view.tool_tasks if t.tool_task_id == step.tool_task_id), None)
        return f"{tool.tool_type}: {tool.tool_task_purpose}" if tool else ""
    task = next((t for t in view.tasks if t.task_id == step.task_id), None)
    return task_words(task) if task else ""
