"""What each plan target is about, taken from the plan context (shared by both planners).

Every target is named `<kind>:<id>` in logs and errors. A context that lacks what the target
needs cannot be planned from, and is a PlanFailed for that target.
"""

from __future__ import annotations

from multiverse.contracts import PlanContext
from multiverse.models import MajorStage, Phase, Task, Timing
from multiverse.roles import PlanFailed
from planner.validation import stage_phase


def stages_target(context: PlanContext) -> tuple[str, Phase]:
    """Target `stages:<phase_id>` and the phase whose stages are planned."""
    if context.phase is None:
        raise PlanFailed("stages", ["the plan context names no phase"])
    return f"stages:{context.phase.phase_id}", context.phase


def tasks_target(context: PlanContext) -> tuple[str, MajorStage, Phase]:
    """Target `tasks:<stage_id>`, the stage whose tasks are planned, and its phase."""
    stage = context.stage
    if stage is None:
        raise PlanFailed("tasks", ["the plan context names no stage"])
    target = f"tasks:{stage.stage_id}"
    phase = stage_phase(context, stage)
    if phase is None:
        raise PlanFailed(target, [f"the plan context has no phase {stage.phase_id}"])
    return target, stage, phase


def tools_target(context: PlanContext, timing: Timing) -> tuple[str, Task]:
    """Target `pre_tool:<task_id>` or `post_tool:<task_id>`, and the task the tools serve."""
    kind = f"{timing.value.lower()}_tool"
    if context.task is None:
        raise PlanFailed(kind, ["the plan context names no task"])
    return f"{kind}:{context.task.task_id}", context.task
