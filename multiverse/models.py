"""Row models of the seven tables (SPEC §3.2), their status codes (§3.4) and ID forms (§3.3).

A leaf module: plain data, no I/O, nothing else of ours imported.

Also here: which asset type a file a task wrote is (SPEC §3.2), as every Executor decides it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum
from functools import cache
from typing import Annotated, ClassVar, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

RUN_ID = r"run-\d{8}-\d{6}-\d{3}"
PHASE_ID = r"P[0-4]"
STAGE_ID = r"P[0-4]-S\d{2}"
TASK_ID = r"(?:T0\d|P[0-4]-S\d{2}-T\d{2})"
TOOL_TASK_ID = TASK_ID + r"-(?:PRE|POST)-\d{2}"
INSTRUCTION_ID = r"I\d{4,}"
PUBLISHING_PHASE = "GENERATING_OUTPUT"  # the phase whose last stage writes what the user gets
PHASE0_ID = "P0"  # Phase 0 is one phase with one stage (SPEC §3.3)
PHASE0_STAGE = "P0-S01"


def stage_id_of(phase_id: str, order: int) -> str:
    """The id of a phase's stage number `order` (1-based): P1-S01."""
    return f"{phase_id}-S{order:02d}"


def task_id_of(stage_id: str, order: int) -> str:
    """The id of a stage's task number `order` (1-based): P1-S01-T01."""
    return f"{stage_id}-T{order:02d}"


def tool_task_id_of(task_id: str, timing: str, order: int) -> str:
    """The id of a task's PRE or POST tool task number `order`: P1-S01-T01-PRE-01."""
    return f"{task_id}-{timing}-{order:02d}"



PlanLevel = Literal["stages", "tasks"]  # a plan a run may hold at (daemon.pause_before)

class Status(StrEnum):
    """Status of a row; which codes a table allows is decided by its model."""

    PENDING = "PENDING"
    AWAITING_CONFIRMATION = "AWAITING_CONFIRMATION"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


FINAL_STATUSES = frozenset({Status.COMPLETED, Status.FAILED, Status.CANCELLED})
# Every table but process_runs knows only these three (SPEC §3.4).
WORK_STATUSES = frozenset({Status.PENDING, Status.COMPLETED, Status.FAILED})


class InstructionStatus(StrEnum):
    """Whether a confirmed instruction is in force."""

    ACTIVE = "ACTIVE"
    SUPERSEDED = "SUPERSEDED"


class Timing(StrEnum):
    """When a tool task runs relative to its parent task."""

    PRE = "PRE"
    POST = "POST"


class AssetType(StrEnum):
    """What kind of file a catalog row describes."""

    ORIGINAL_INPUT = "ORIGINAL_INPUT"
    GUIDELINE_DOC = "GUIDELINE_DOC"
    USER_INSTRUCTIONS = "USER_INSTRUCTIONS"
    ANALYSIS_REPORT = "ANALYSIS_REPORT"
    STRATEGY_DOC = "STRATEGY_DOC"
    REFINED_CONTENT = "REFINED_CONTENT"
    TOOL_OUTPUT = "TOOL_OUTPUT"
    ASSEMBLY_PLAN = "ASSEMBLY_PLAN"
    FINAL_OUTPUT = "FINAL_OUTPUT"


def _id_checker(pattern: str, what: str) -> AfterValidator:
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"{value!r} is not a valid {what}")
        return value

    return AfterValidator(check)


RunId = Annotated[str, _id_checker(RUN_ID, "run_id (run-YYYYMMDD-HHMMSS-NNN)")]
PhaseId = Annotated[str, _id_checker(PHASE_ID, "phase_id (P0..P4)")]
StageId = Annotated[str, _id_checker(STAGE_ID, "stage_id (like P1-S01)")]
TaskId = Annotated[str, _id_checker(TASK_ID, "task_id (like T00 or P1-S01-T01)")]
ToolTaskId = Annotated[str, _id_checker(TOOL_TASK_ID, "tool_task_id (like P1-S01-T01-PRE-01)")]
InstructionId = Annotated[str, _id_checker(INSTRUCTION_ID, "instruction_id (like I0001)")]
Order = Annotated[int, Field(ge=1)]


class Row(BaseModel):
    """Base of every table row: strict about unknown fields, plain data."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    key_field: ClassVar[str]
    allowed_statuses: ClassVar[frozenset[Status]] = WORK_STATUSES

    @property
    def key(self) -> str:
        """The value of this row's key column."""
        return str(getattr(self, self.key_field))

    @model_validator(mode="before")
    @classmethod
    def _empty_is_none(cls, data: object) -> object:
        # A table cell cannot tell "" from None, so an optional field holds None, never "":
        # otherwise a row would read back different from what was written. One check per row,
        # not one call per field: rows are validated on every table write.
        if not isinstance(data, dict) or "" not in data.values():
            return data
        nullable = _nullable_fields(cls)
        return {
            name: None if value == "" and name in nullable else value
            for name, value in data.items()
        }

    @field_validator("status", check_fields=False)
    @classmethod
    def _status_allowed(cls, value: object) -> object:
        if isinstance(value, Status) and value not in cls.allowed_statuses:
            allowed = ", ".join(sorted(cls.allowed_statuses))
            raise ValueError(f"status {value.value} is not allowed here (one of: {allowed})")
        return value


@cache
def _nullable_fields(model: type[BaseModel]) -> frozenset[str]:
    """The fields of a row model that may hold None."""
    return frozenset(
        name for name, info in model.model_fields.items() if type(None) in get_args(info.annotation)
    )


class ProcessRun(Row):
    """A row of db/process_runs.md: one run and where its attention is now."""

    key_field: ClassVar[str] = "run_id"
    allowed_statuses: ClassVar[frozenset[Status]] = frozenset(Status)
    run_id: RunId
    user_request: str
    status: Status = Status.PENDING
    current_phase_id: PhaseId | None = None
    current_stage_id: StageId | None = None
    current_task_id: TaskId | None = None


class UserInstruction(Row):
    """A row of db/user_instructions.md: one confirmed instruction of a run."""

    key_field: ClassVar[str] = "instruction_id"
    instruction_id: InstructionId
    run_id: RunId
    instruction_type: str = Field(min_length=1)
    content: str = Field(min_length=1)
    status: InstructionStatus = InstructionStatus.ACTIVE
    superseded_by_id: InstructionId | None = None
    justification: str = ""


class CatalogEntry(Row):
    """A row of db/knowledge_base_catalog.md: one known file and its summary."""

    key_field: ClassVar[str] = "file_path"
    file_path: str = Field(min_length=1)
    run_id: RunId | None = None
    asset_type: AssetType
    source_task_id: str | None = None
    summary: str = ""


class Phase(Row):
    """A row of runs/<run_id>/db/phases.md."""

    key_field: ClassVar[str] = "phase_id"
    phase_id: PhaseId
    run_id: RunId
    phase_name: str = Field(min_length=1)
    phase_purpose: str = ""
    status: Status = Status.PENDING


class MajorStage(Row):
    """A row of runs/<run_id>/db/major_stages.md."""

    key_field: ClassVar[str] = "stage_id"
    stage_id: StageId
    run_id: RunId
    phase_id: PhaseId
    stage_name: str = Field(min_length=1)
    stage_goal: str = ""
    execution_order: Order
    status: Status = Status.PENDING


class Task(Row):
    """A row of runs/<run_id>/db/tasks.md: input (references), process (purpose), output."""

    key_field: ClassVar[str] = "task_id"
    task_id: TaskId
    run_id: RunId
    stage_id: StageId
    task_name: str = Field(min_length=1)
    task_purpose: str = ""
    related_references: list[str] = Field(default_factory=list)
    output_path: str = ""
    pre_tool_purpose: str = ""
    post_tool_purpose: str = ""
    execution_order: Order
    status: Status = Status.PENDING

    @field_validator("related_references")
    @classmethod
    def _one_line_each(cls, value: list[str]) -> list[str]:
        for item in value:
            if not item or "\n" in item or item != item.strip():
                raise ValueError(f"reference {item!r} must be one non-empty, trimmed line")
        return value


class ToolTask(Row):
    """A row of runs/<run_id>/db/tool_tasks.md: a PRE or POST helper step of a task."""

    key_field: ClassVar[str] = "tool_task_id"
    tool_task_id: ToolTaskId
    run_id: RunId
    parent_task_id: TaskId
    timing: Timing
    tool_type: str = Field(min_length=1)
    tool_task_name: str = Field(min_length=1)
    tool_task_purpose: str = ""
    execution_order: Order
    status: Status = Status.PENDING


def tool_tasks_of(
    run_id: str, task_id: str, timing: Timing, drafts: Iterable[tuple[str, str, str]]
) -> list[ToolTask]:
    """The PRE or POST tool task rows of one task from (tool type, name, purpose) drafts,
    numbered in their order (the builtin and the model Planners plan them alike)."""
    return [
        ToolTask(
            tool_task_id=tool_task_id_of(task_id, timing.value, order),
            run_id=run_id,
            parent_task_id=task_id,
            timing=timing,
            tool_type=tool_type,
            tool_task_name=name,
            tool_task_purpose=purpose,
            execution_order=order,
        )
        for order, (tool_type, name, purpose) in enumerate(drafts, start=1)
    ]


# Allowed status changes, written down once (STYLE rule 5). COMPLETED and CANCELLED never
# change; FAILED only when a person asks for a retry.
RUN_TRANSITIONS: dict[Status, frozenset[Status]] = {
    Status.PENDING: frozenset(
        {Status.AWAITING_CONFIRMATION, Status.COMPLETED, Status.FAILED, Status.CANCELLED}
    ),
    Status.AWAITING_CONFIRMATION: frozenset({Status.PENDING, Status.CANCELLED, Status.FAILED}),
    Status.FAILED: frozenset({Status.PENDING}),  # only by an explicit retry (SPEC §8)
}
WORK_TRANSITIONS: dict[Status, frozenset[Status]] = {
    Status.PENDING: frozenset({Status.COMPLETED, Status.FAILED}),
    Status.FAILED: frozenset({Status.PENDING}),  # only by an explicit retry (SPEC §8)
}


def can_transition(old: Status, new: Status, *, run: bool = False) -> bool:
    """Whether a row may go from `old` to `new` (process_runs rows when `run`)."""
    table = RUN_TRANSITIONS if run else WORK_TRANSITIONS
    return old == new or new in table.get(old, frozenset())


class PhaseTemplate(Row):
    """A row of db/templates/default_phases.md: one phase of the fixed method."""

    key_field: ClassVar[str] = "phase_id"
    phase_id: PhaseId
    phase_name: str = Field(min_length=1)
    phase_purpose: str = ""


PHASE_TYPES = {
    "ANALYZING": AssetType.ANALYSIS_REPORT,
    "STRATEGIZING": AssetType.STRATEGY_DOC,
    "REFINING_CONTENT": AssetType.REFINED_CONTENT,
}


def phase_key(phase: Phase) -> str:
    """The phase whose behaviour applies: Phase 0's first analysis counts as ANALYZING."""
    return "ANALYZING" if phase.phase_id == "P0" else phase.phase_name


def asset_type(phase: Phase, is_task_output: bool, in_outputs: bool) -> AssetType:
    """A written file's asset type: by phase; tool files are TOOL_OUTPUT; outputs/ is FINAL."""
    key = phase_key(phase)
    if key == PUBLISHING_PHASE and in_outputs:
        return AssetType.FINAL_OUTPUT
    if not is_task_output:
        return AssetType.TOOL_OUTPUT
    if key == PUBLISHING_PHASE:
        return AssetType.ASSEMBLY_PLAN
    return PHASE_TYPES.get(key, AssetType.TOOL_OUTPUT)
