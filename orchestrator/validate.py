"""Checks the Orchestrator applies to what roles return before it touches a table."""

from __future__ import annotations

from multiverse.contracts import ResultSignal
from multiverse.models import MajorStage, Status, Task, ToolTask
from orchestrator.collaborators import Collaborators
from orchestrator.failfast import StepFailed
from orchestrator.signals import FailureRecord, SignalBox
from orchestrator.steps import Step
from orchestrator.view import RunView


def _plan_failure(run_id: str, where: str, error: str) -> StepFailed:
    return StepFailed(FailureRecord(role="planner", error=f"invalid plan for {where}: {error}"))


def checked_tasks(tasks: list[Task], run_id: str, stage_id: str) -> list[Task]:
    """The planned tasks, refused unless they belong to this run and stage and are PENDING."""
    for task in tasks:
        if task.run_id != run_id or task.stage_id != stage_id or task.status is not Status.PENDING:
            raise _plan_failure(run_id, stage_id, f"task {task.task_id} does not belong here")
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
        return tool.tool_task_purpose if tool else ""
    task = next((t for t in view.tasks if t.task_id == step.task_id), None)
    return task.task_purpose if task else ""
