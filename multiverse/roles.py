"""The role seam (SPEC §15): what the Orchestrator and the roles exchange (plans, assignments,
result signals, messages) and the role interfaces it talks to.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from multiverse.errors import MultiverseError
from multiverse.models import (
    PUBLISHING_PHASE,
    AssetType,
    CatalogEntry,
    MajorStage,
    Phase,
    Task,
    Timing,
    ToolTask,
    UserInstruction,
)
from multiverse.spec import RequestSpec


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
    spec: RequestSpec | None = None  # the request spec, checked against the files


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
    spec: RequestSpec | None = None  # the confirmed request spec (None before CONFIRM)
    search_provider: str | None = None  # the configured web_search provider, if any

    def phase_of(self, stage: MajorStage) -> Phase | None:
        """The phase a stage belongs to: `phase`, or the matching row of `phases`."""
        if self.phase is not None and self.phase.phase_id == stage.phase_id:
            return self.phase
        return next((phase for phase in self.phases if phase.phase_id == stage.phase_id), None)

    def is_publishing(self, stage: MajorStage) -> bool:
        """Whether `stage` is the last stage (highest execution_order) of GENERATING_OUTPUT."""
        phase = self.phase_of(stage)
        if phase is None or phase.phase_name != PUBLISHING_PHASE:
            return False
        siblings = [s for s in self.stages if s.phase_id == stage.phase_id] or [stage]
        return max(siblings, key=lambda s: s.execution_order).stage_id == stage.stage_id

    def stages_target(self) -> tuple[str, Phase]:
        """Target `stages:<phase_id>` and the phase whose stages are planned."""
        if self.phase is None:
            raise PlanFailed("stages", ["the plan context names no phase"])
        return f"stages:{self.phase.phase_id}", self.phase

    def tasks_target(self) -> tuple[str, MajorStage, Phase]:
        """Target `tasks:<stage_id>`, the stage whose tasks are planned, and its phase."""
        if self.stage is None:
            raise PlanFailed("tasks", ["the plan context names no stage"])
        target = f"tasks:{self.stage.stage_id}"
        phase = self.phase_of(self.stage)
        if phase is None:
            raise PlanFailed(target, [f"the plan context has no phase {self.stage.phase_id}"])
        return target, self.stage, phase

    def tools_target(self, timing: Timing) -> tuple[str, Task]:
        """Target `pre_tool:<task_id>` or `post_tool:<task_id>`, and the task the tools serve."""
        kind = f"{timing.value.lower()}_tool"
        if self.task is None:
            raise PlanFailed(kind, ["the plan context names no task"])
        return f"{kind}:{self.task.task_id}", self.task


class StagesPlan(Data):
    """Plan target `stages:<phase_id>`; `tasks`: the stages' tasks when one answer planned
    them with the stages (a stage left without any is planned on its own, `tasks:<stage_id>`)."""

    stages: list[MajorStage] = Field(min_length=1)
    tasks: list[Task] = Field(default_factory=list)


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
    spec: RequestSpec | None = None  # the confirmed request spec every task reads


class ToolAssignment(Data):
    """One tool task handed to the Executor."""

    home: str
    run_id: str
    request: str
    phase: Phase
    task: Task
    tool_task: ToolTask
    # The run's ACTIVE instructions: with the spec, the prefix of a model's research calls.
    instructions: list[UserInstruction] = Field(default_factory=list)
    catalog: list[CatalogEntry] = Field(default_factory=list)
    spec: RequestSpec | None = None  # the confirmed request spec (questions to search for)


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


# The user's commands, as the CLI names them (tests/test_communicator_truth.py holds the typer
# app to this list), kept here so a role can name them without importing the app layer.
COMMANDS = frozenset({
    "approve", "archive", "cancel", "confirm", "delete-row", "deny", "doctor", "fork", "init",
    "logs", "modify", "open", "pause", "resume", "retry", "runs", "show", "start", "status",
    "submit", "ui", "worker",
})  # fmt: skip
# The commands that answer each message: the only ones a message may tell the user to run.
ANSWERED_BY: dict[MessageKind, tuple[str, ...]] = {
    MessageKind.PROPOSAL: ("confirm", "modify", "cancel"),
    MessageKind.ANSWER_REFUSED: ("confirm", "modify", "cancel"),  # the question stays open
    MessageKind.FAILURE: ("retry",),
    MessageKind.APPROVAL_REQUEST: ("approve", "deny"),
    MessageKind.HOLD: ("resume", "cancel"),
}


class Message(Data):
    """A fact to tell the user; the Communicator turns it into words.

    `facts` carry what must appear verbatim (run_id, place, error log, paths).
    """

    kind: MessageKind
    run_id: str | None = None
    facts: dict[str, str] = Field(default_factory=dict)
    items: list[str] = Field(default_factory=list)
    language: str = ""  # the requester's language (ISO 639-1); "" = the run's, else English


class PlanFailed(MultiverseError):
    """A plan that could not be made or did not pass validation (a FAILED signal)."""

    def __init__(self, target: str, errors: list[str], raw_answer: str | None = None) -> None:
        self.target = target
        self.errors = errors
        self.raw_answer = raw_answer
        super().__init__(f"plan {target} failed: " + "; ".join(errors))


class PlannerRole(Protocol):
    """Writes plans; never executes them."""

    def decide_mode(
        self, request: str, has_past_runs: bool, pending_ledger: str | None = None
    ) -> ModeDecision:
        """Plan target `mode`; model calls are charged to `pending_ledger` until a run exists."""
        ...

    def plan_phase0(self, context: PlanContext) -> TasksPlan:
        """Plan target `phase0`: tasks T00, T02, T03, T04 of stage P0-S01."""
        ...

    def propose(self, context: PlanContext) -> Proposal:
        """Plan target `proposal` (with `context.modification` on MODIFY)."""
        ...

    def plan_stages(self, context: PlanContext) -> StagesPlan:
        """Plan target `stages:<phase_id>` for `context.phase`."""
        ...

    def plan_tasks(self, context: PlanContext) -> TasksPlan:
        """Plan target `tasks:<stage_id>` for `context.stage`."""
        ...

    def plan_tools(self, context: PlanContext, timing: Timing) -> ToolTasksPlan:
        """Plan targets `pre_tool:<task_id>` / `post_tool:<task_id>` for `context.task`."""
        ...


class Declined(Data):
    """A SIMPLE_TASK the Executor will not answer at once: the request becomes a run, and
    `reason` (said at submit and in the proposal) tells the user why ("" when nothing can)."""

    reason: str = ""


class ExecutorRole(Protocol):
    """Performs exactly one task or tool task and reports a result signal; never raises."""

    def execute_task(self, assignment: TaskAssignment) -> ResultSignal:
        """Do one core task: read its references, write its output file."""
        ...

    def execute_tool_task(self, assignment: ToolAssignment) -> ResultSignal:
        """Do one PRE or POST tool task."""
        ...

    def summarize(self, path: Path) -> str:
        """A one-paragraph summary of a file, for the knowledge catalog."""
        ...

    def simple_task(self, request: str, home: Path) -> str | Declined:
        """Answer a SIMPLE_TASK request directly (markdown), or decline it: make it a run."""
        ...


class CommunicatorRole(Protocol):
    """Turns a message's facts into words for the user."""

    def compose(self, message: Message) -> str:
        """The markdown text of one message; facts appear verbatim."""
        ...


class ApprovalStatus(StrEnum):
    """Where a request for approval stands."""

    PENDING = "PENDING"
    APPROVED = "APPROVED"
    DENIED = "DENIED"
    TIMED_OUT = "TIMED_OUT"


class Approval(BaseModel):
    """One action asked for, and its answer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    run_id: str
    task_id: str
    tool: str
    arguments: dict[str, Any]
    action_hash: str
    requested_at: float
    timeout_seconds: float
    status: ApprovalStatus = ApprovalStatus.PENDING
    answered_at: float | None = None
    answered_by: str | None = None

    @property
    def deadline(self) -> float:
        """When an unanswered request counts as denied (epoch seconds)."""
        return self.requested_at + self.timeout_seconds

    def expired(self, now: float) -> bool:
        """Whether the request is still unanswered past its deadline."""
        return self.status is ApprovalStatus.PENDING and now >= self.deadline

    def shown(self, limit: int = 300) -> str:
        """The action in one line: the tool and its arguments."""
        arguments = json.dumps(self.arguments, ensure_ascii=False, sort_keys=True, default=str)
        if len(arguments) > limit:
            arguments = arguments[:limit] + " …"
        return f"{self.tool} {arguments}"
