"""What the Orchestrator and the roles exchange: plans, assignments, result signals, messages.

A leaf of plain data (besides the row models): the Orchestrator builds these from the tables,
hands them to a role, and records what comes back. Roles never see the tables themselves.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from multiverse.models import (
    AssetType,
    CatalogEntry,
    MajorStage,
    Phase,
    Task,
    Timing,
    ToolTask,
    UserInstruction,
)


class Data(BaseModel):
    """Base of the exchanged data: strict, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Mode(StrEnum):
    """How a new request is handled (SPEC §5)."""

    SIMPLE_TASK = "SIMPLE_TASK"
    INITIAL_RUN = "INITIAL_RUN"
    CONTINUOUS_RUN = "CONTINUOUS_RUN"


class ModeDecision(Data):
    """The Planner's answer to the `mode` target."""

    mode: Mode
    reason: str


class PastRun(Data):
    """One past run ranked by similarity of its request to the new one."""

    run_id: str
    score: float
    user_request: str


class LearningContext(Data):
    """The past runs most similar to this one, best first (empty for INITIAL_RUN)."""

    past_runs: list[PastRun] = Field(default_factory=list)


class McpStep(Data):
    """One step of an MCP recipe: exactly one tool type and what it is for."""

    tool_type: str
    purpose: str


class McpRecipe(Data):
    """A multi-call recipe from guidelines/mcp_list.md."""

    name: str
    applies_when: str
    timing: Timing
    steps: list[McpStep]


class ProposedInstruction(Data):
    """One instruction the Planner proposes for the run's constitution."""

    instruction_type: str = Field(min_length=1)
    content: str = Field(min_length=1)
    justification: str = ""
    supersedes: list[str] = Field(default_factory=list)


class Proposal(Data):
    """The amendment proposal of Phase 0 (rendered into feedback_for_user.md)."""

    understanding: str
    instructions: list[ProposedInstruction] = Field(min_length=1)
    conflicts: list[str] = Field(default_factory=list)
    made_offline: bool = False


class PlanContext(Data):
    """The selective context a plan is made from; built by the Orchestrator from the tables."""

    home: str
    run_id: str
    request: str
    instructions: list[UserInstruction] = Field(default_factory=list)
    past_instructions: list[UserInstruction] = Field(default_factory=list)
    learning: LearningContext = LearningContext()
    catalog: list[CatalogEntry] = Field(default_factory=list)
    phases: list[Phase] = Field(default_factory=list)
    phase: Phase | None = None
    stages: list[MajorStage] = Field(default_factory=list)
    stage: MajorStage | None = None
    tasks: list[Task] = Field(default_factory=list)
    task: Task | None = None
    modification: str | None = None  # the latest MODIFY text (the one this proposal answers)
    modifications: list[str] = Field(default_factory=list)  # every MODIFY text so far, in order
    tool_types: list[str] = Field(default_factory=list)
    signal_outputs: list[str] = Field(default_factory=list)


class StagesPlan(Data):
    """Plan target `stages:<phase_id>`."""

    stages: list[MajorStage] = Field(min_length=1)


class TasksPlan(Data):
    """Plan targets `phase0` and `tasks:<stage_id>`."""

    tasks: list[Task] = Field(min_length=1)


class ToolTasksPlan(Data):
    """Plan targets `pre_tool:<task_id>` and `post_tool:<task_id>`."""

    tool_tasks: list[ToolTask] = Field(min_length=1)


class ProducedFile(Data):
    """A file a task or tool task wrote, to be registered in the catalog."""

    path: str
    asset_type: AssetType
    summary: str


class ResultSignal(Data):
    """What the Executor reports for one task or tool task (SPEC §7.5.2)."""

    status: Literal["COMPLETED", "FAILED"]
    post_tool_required: bool = False
    outputs: list[ProducedFile] = Field(default_factory=list)
    error: str | None = None


class TaskAssignment(Data):
    """One core task handed to the Executor."""

    home: str
    run_id: str
    request: str
    phase: Phase
    stage: MajorStage
    task: Task
    instructions: list[UserInstruction] = Field(default_factory=list)
    catalog: list[CatalogEntry] = Field(default_factory=list)


class ToolAssignment(Data):
    """One tool task handed to the Executor."""

    home: str
    run_id: str
    request: str
    phase: Phase
    task: Task
    tool_task: ToolTask
    catalog: list[CatalogEntry] = Field(default_factory=list)


class MessageKind(StrEnum):
    """Everything the Communicator may say (SPEC §10.7)."""

    PROPOSAL = "PROPOSAL"
    ANSWER_RECEIVED = "ANSWER_RECEIVED"
    ANSWER_REFUSED = "ANSWER_REFUSED"
    CANCELLED = "CANCELLED"
    FAILURE = "FAILURE"
    RETRY = "RETRY"  # a failed run resumes from its failed step (SPEC §8)
    COMPLETION = "COMPLETION"
    SIMPLE_REPLY = "SIMPLE_REPLY"
    APPROVAL_REQUEST = "APPROVAL_REQUEST"
    HOLD = "HOLD"  # a run holds for a person's review of its plan until `multiverse resume`
    NOTICE = "NOTICE"


class Message(Data):
    """A fact to tell the user; the Communicator turns it into words.

    `facts` carry what must appear verbatim (run_id, place, error log, paths).
    """

    kind: MessageKind
    run_id: str | None = None
    facts: dict[str, str] = Field(default_factory=dict)
    items: list[str] = Field(default_factory=list)
