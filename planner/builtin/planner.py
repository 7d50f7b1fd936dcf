"""BuiltinPlanner: the offline PlannerRole; every plan it makes passes the shared validation."""

from __future__ import annotations

from pathlib import Path

import structlog

from multiverse.contracts import (
    ModeDecision,
    PlanContext,
    Proposal,
    StagesPlan,
    TasksPlan,
    ToolTasksPlan,
)
from multiverse.models import Timing
from multiverse.roles import PlanFailed
from planner.builtin import phase0, proposal, stages, tasks, tools
from planner.mcp import load_mcps
from planner.mode import decide_mode
from planner.targets import stages_target, tasks_target, tools_target
from planner.validation import (
    validate_phase0,
    validate_proposal,
    validate_stages,
    validate_tasks,
    validate_tool_tasks,
)

log = structlog.get_logger(__name__)


def _checked(target: str, run_id: str, errors: list[str]) -> None:
    """Raise PlanFailed when the builtin's own plan did not pass validation."""
    if errors:
        log.error("plan_invalid", target=target, run_id=run_id, errors=errors)
        raise PlanFailed(target, errors)
    log.info("plan_made", target=target, run_id=run_id, engine="builtin")


class BuiltinPlanner:
    """Deterministic offline plans from the phase template, the catalog and the request."""

    def decide_mode(
        self, request: str, has_past_runs: bool, pending_ledger: str | None = None
    ) -> ModeDecision:
        """Plan target `mode`, by the documented heuristic of planner.mode (no model call)."""
        return decide_mode(request, has_past_runs)

    def plan_phase0(self, context: PlanContext) -> TasksPlan:
        """Plan target `phase0`: tasks T00, T02, T03, T04 of stage P0-S01."""
        plan = phase0.plan_phase0(context)
        _checked("phase0", context.run_id, validate_phase0(plan, context))
        return plan

    def propose(self, context: PlanContext) -> Proposal:
        """Plan target `proposal` (revised by `context.modification` on MODIFY)."""
        made = proposal.propose(context)
        _checked("proposal", context.run_id, validate_proposal(made, context))
        return made

    def plan_stages(self, context: PlanContext) -> StagesPlan:
        """Plan target `stages:<phase_id>` for `context.phase`."""
        target, phase = stages_target(context)
        plan = stages.plan_stages(context, phase)
        _checked(target, context.run_id, validate_stages(plan, context))
        return plan

    def plan_tasks(self, context: PlanContext) -> TasksPlan:
        """Plan target `tasks:<stage_id>` for `context.stage`."""
        target, stage, phase = tasks_target(context)
        plan = tasks.plan_tasks(context, stage, phase)
        _checked(target, context.run_id, validate_tasks(plan, context))
        return plan

    def plan_tools(self, context: PlanContext, timing: Timing) -> ToolTasksPlan:
        """Plan target `pre_tool:<task_id>` / `post_tool:<task_id>` for `context.task`."""
        target, task = tools_target(context, timing)
        recipes = load_mcps(Path(context.home))
        plan = tools.plan_tools(context, task, timing, recipes)
        _checked(target, context.run_id, validate_tool_tasks(plan, context, timing))
        return plan
