"""The steps the Orchestrator can take for a run: plain data, decided by `next_step`."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from multiverse.models import Timing
from orchestrator.decide.answers import Decision


class StepKind(StrEnum):
    """Every kind of step, in roughly the order a run meets them."""

    WAIT = "WAIT"  # nothing can advance without the user (or a person's fix)
    IDLE = "IDLE"  # the run is final
    PLAN_PHASE0 = "PLAN_PHASE0"
    SET_UP_RUN = "SET_UP_RUN"  # T00
    PROPOSE = "PROPOSE"
    ASK = "ASK"
    HANDLE_RESPONSE = "HANDLE_RESPONSE"
    WRITE_INSTRUCTIONS = "WRITE_INSTRUCTIONS"  # T02
    BUILD_CATALOG = "BUILD_CATALOG"  # T03
    FIRST_ANALYSIS = "FIRST_ANALYSIS"  # T04
    COMPLETE_PHASE0 = "COMPLETE_PHASE0"
    PLAN_STAGES = "PLAN_STAGES"
    PLAN_TASKS = "PLAN_TASKS"
    PLAN_TOOLS = "PLAN_TOOLS"
    EXECUTE_TOOL_TASK = "EXECUTE_TOOL_TASK"
    EXECUTE_TASK = "EXECUTE_TASK"
    COMPLETE_TASK = "COMPLETE_TASK"
    COMPLETE_STAGE = "COMPLETE_STAGE"
    COMPLETE_PHASE = "COMPLETE_PHASE"
    COMPLETE_RUN = "COMPLETE_RUN"
    FAIL_RUN = "FAIL_RUN"
    HANDLE_RETRY = "HANDLE_RETRY"  # an answer to a FAILED run: RETRY is accepted or refused
    REOPEN = "REOPEN"  # a retry: the failed step and the levels above it back to PENDING
    ANSWER_APPROVAL = "ANSWER_APPROVAL"  # APPROVE/DENY in user_response.md for a waiting action
    HOLD = "HOLD"  # a plan is written: the run holds for a person's review (daemon.pause_before)
    ANSWER_HOLD = "ANSWER_HOLD"  # an answer to a held run: RESUME lets it go on, others refused
    CANCEL = "CANCEL"  # CANCEL asked (or a cancel begun before a crash): the run ends CANCELLED


class Step(BaseModel):
    """One step for one run; only the fields its kind needs are set."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: StepKind
    run_id: str
    phase_id: str | None = None
    stage_id: str | None = None
    task_id: str | None = None
    tool_task_id: str | None = None
    timing: Timing | None = None
    revision: int = 0
    decision: Decision | None = None
    reason: str = ""
    # A WAIT that ends by itself (an approval's deadline): look again after this many seconds.
    wake_after: float | None = None

    @property
    def is_work(self) -> bool:
        """Whether performing this step changes anything."""
        return self.kind not in (StepKind.WAIT, StepKind.IDLE)

    def describe(self) -> str:
        """A short human-readable label, for logs and `status`."""
        target = self.tool_task_id or self.task_id or self.stage_id or self.phase_id or ""
        return f"{self.kind.value} {target}".strip()
