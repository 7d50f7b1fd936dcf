"""The role interfaces the Orchestrator talks to (SPEC §15: roles behind interfaces).

Each role has a builtin offline implementation and a model-backed one; which one serves is
decided by runtime-mapping.yaml when the roles are built, never by the Orchestrator.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from multiverse.contracts import (
    Message,
    ModeDecision,
    PlanContext,
    Proposal,
    ResultSignal,
    StagesPlan,
    TaskAssignment,
    TasksPlan,
    ToolAssignment,
    ToolTasksPlan,
)
from multiverse.errors import MultiverseError
from multiverse.models import Timing


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

    def simple_task(self, request: str, home: Path) -> str | None:
        """Answer a SIMPLE_TASK request directly (markdown), or None: it cannot, make it a run."""
        ...


class CommunicatorRole(Protocol):
    """Turns a message's facts into words for the user."""

    def compose(self, message: Message) -> str:
        """The markdown text of one message; facts appear verbatim."""
        ...
