"""What the model answers for each plan target, and its conversion into the plan rows.

The answer models are simpler than the row models: a model gives the ids, names, purposes and
orders; what the context already knows (run_id, the phase, stage or parent task, the status) may
be left out and is filled in. The ids are asked from the model and checked: a row that does not
convert (a malformed id, an order below 1) becomes a repair error naming the item, exactly like
a plan that converts but fails validation (SPEC §10.3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from multiverse.contracts import (
    PlanContext,
    Proposal,
    ProposedInstruction,
    StagesPlan,
    TasksPlan,
    ToolTasksPlan,
)
from multiverse.models import MajorStage, Phase, Status, Task, Timing, ToolTask

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)


class Answer(BaseModel):
    """Base of a model's answer: unknown keys are errors the model is shown."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ProposalAnswer(Answer):
    """Answer to `proposal` (made_offline is ours to set, never the model's)."""

    understanding: str
    instructions: list[ProposedInstruction] = Field(min_length=1)
    conflicts: list[str] = Field(default_factory=list)


class StageAnswer(Answer):
    """One stage as the model writes it."""

    stage_id: str
    stage_name: str
    stage_goal: str = ""
    execution_order: int
    run_id: str | None = None
    phase_id: str | None = None
    status: str | None = None


class StagesAnswer(Answer):
    """Answer to `stages:<phase_id>`."""

    stages: list[StageAnswer] = Field(min_length=1)


class TaskAnswer(Answer):
    """One task as the model writes it."""

    task_id: str
    task_name: str
    task_purpose: str = ""
    related_references: list[str] = Field(default_factory=list)
    output_path: str
    pre_tool_purpose: str = ""
    post_tool_purpose: str = ""
    execution_order: int
    run_id: str | None = None
    stage_id: str | None = None
    status: str | None = None


class TasksAnswer(Answer):
    """Answer to `tasks:<stage_id>`."""

    tasks: list[TaskAnswer] = Field(min_length=1)


class ToolTaskAnswer(Answer):
    """One tool task as the model writes it."""

    tool_task_id: str
    tool_type: str
    tool_task_name: str
    tool_task_purpose: str = ""
    execution_order: int
    run_id: str | None = None
    parent_task_id: str | None = None
    timing: str | None = None
    status: str | None = None


class ToolTasksAnswer(Answer):
    """Answer to `pre_tool:<task_id>` / `post_tool:<task_id>`."""

    tool_tasks: list[ToolTaskAnswer] = Field(min_length=1)


@dataclass(frozen=True)
class Converted(Generic[P]):
    """A converted plan, or the errors that kept the answer from converting."""

    plan: P | None
    errors: list[str] = field(default_factory=list)


def describe_errors(label: str, error: ValidationError) -> list[str]:
    """One model-readable line per problem: `label: field: what is wrong`."""
    lines = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "(row)"
        lines.append(f"{label}: {where}: {item['msg'].removeprefix('Value error, ')}")
    return lines


def _build(model: type[R], fields: dict[str, Any], label: str, errors: list[str]) -> R | None:
    try:
        return model.model_validate(fields)
    except ValidationError as error:
        errors.extend(describe_errors(label, error))
        return None


def _finish(plan: type[P], key: str, rows: list[Any], errors: list[str]) -> Converted[P]:
    if errors:
        return Converted(None, errors)
    try:
        return Converted(plan.model_validate({key: rows}))
    except ValidationError as error:
        return Converted(None, describe_errors(key, error))


def to_proposal(answer: ProposalAnswer) -> Converted[Proposal]:
    """The proposal, marked as made by a model."""
    made = Proposal(
        understanding=answer.understanding,
        instructions=answer.instructions,
        conflicts=answer.conflicts,
        made_offline=False,
    )
    return Converted(made)


def to_stages(answer: StagesAnswer, context: PlanContext, phase: Phase) -> Converted[StagesPlan]:
    """Stage rows of `phase`; missing run_id, phase_id and status are filled in."""
    rows: list[MajorStage | None] = []
    errors: list[str] = []
    for number, item in enumerate(answer.stages, start=1):
        fields = {
            **item.model_dump(exclude_none=True),
            "run_id": item.run_id or context.run_id,
            "phase_id": item.phase_id or phase.phase_id,
            "status": item.status or Status.PENDING,
        }
        rows.append(_build(MajorStage, fields, f"stage #{number} ({item.stage_id!r})", errors))
    return _finish(StagesPlan, "stages", rows, errors)


def to_tasks(answer: TasksAnswer, context: PlanContext, stage_id: str) -> Converted[TasksPlan]:
    """Task rows of the stage; missing run_id, stage_id and status are filled in."""
    rows: list[Task | None] = []
    errors: list[str] = []
    for number, item in enumerate(answer.tasks, start=1):
        fields = {
            **item.model_dump(exclude_none=True),
            "run_id": item.run_id or context.run_id,
            "stage_id": item.stage_id or stage_id,
            "status": item.status or Status.PENDING,
        }
        rows.append(_build(Task, fields, f"task #{number} ({item.task_id!r})", errors))
    return _finish(TasksPlan, "tasks", rows, errors)


def to_tool_tasks(
    answer: ToolTasksAnswer, context: PlanContext, parent_task_id: str, timing: Timing
) -> Converted[ToolTasksPlan]:
    """Tool task rows of the parent task; missing run_id, parent, timing, status are filled in."""
    rows: list[ToolTask | None] = []
    errors: list[str] = []
    for number, item in enumerate(answer.tool_tasks, start=1):
        fields = {
            **item.model_dump(exclude_none=True),
            "run_id": item.run_id or context.run_id,
            "parent_task_id": item.parent_task_id or parent_task_id,
            "timing": item.timing or timing,
            "status": item.status or Status.PENDING,
        }
        label = f"tool task #{number} ({item.tool_task_id!r})"
        rows.append(_build(ToolTask, fields, label, errors))
    return _finish(ToolTasksPlan, "tool_tasks", rows, errors)
