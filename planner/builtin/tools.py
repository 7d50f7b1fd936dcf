"""The builtin tool plans: an MCP recipe when one fits, else one default tool task."""

from __future__ import annotations

from dataclasses import dataclass

from multiverse.contracts import McpRecipe, PlanContext, ToolTasksPlan
from multiverse.models import Task, Timing, ToolTask, tool_task_id_of
from planner.builtin.reading import first_line
from planner.mcp import match_mcp

DEFAULT_TOOL = {Timing.PRE: "web_search", Timing.POST: "data_visualization"}


@dataclass(frozen=True)
class ToolDraft:
    """A tool task before it gets its id and order."""

    tool_type: str
    name: str
    purpose: str


def tool_purpose(task: Task, timing: Timing) -> str:
    """The task's own PRE or POST tool purpose."""
    return task.pre_tool_purpose if timing is Timing.PRE else task.post_tool_purpose


def plan_tools(
    context: PlanContext, task: Task, timing: Timing, recipes: list[McpRecipe]
) -> ToolTasksPlan:
    """Tool tasks `<task_id>-<timing>-01`…: the fitting recipe's steps, or the default tool."""
    purpose = tool_purpose(task, timing)
    # Only recipes whose every step names an available tool can give a valid plan.
    usable = [r for r in recipes if all(s.tool_type in context.tool_types for s in r.steps)]
    recipe = match_mcp(usable, f"{purpose}\n{context.request}", timing)
    if recipe is not None:
        drafts = [
            ToolDraft(step.tool_type, f"{recipe.name} step {number}", _focus(step.purpose, task))
            for number, step in enumerate(recipe.steps, start=1)
        ]
    else:
        drafts = [_default(context, task, timing, purpose)]
    tool_tasks = [
        ToolTask(
            tool_task_id=tool_task_id_of(task.task_id, timing.value, order),
            run_id=context.run_id,
            parent_task_id=task.task_id,
            timing=timing,
            tool_type=draft.tool_type,
            tool_task_name=draft.name,
            tool_task_purpose=draft.purpose,
            execution_order=order,
        )
        for order, draft in enumerate(drafts, start=1)
    ]
    return ToolTasksPlan(tool_tasks=tool_tasks)


def _focus(step_purpose: str, task: Task) -> str:
    """A recipe step's purpose, tied to the task it serves."""
    return f"{step_purpose} (for task {task.task_id}: {task.task_name}, output {task.output_path})"


def _default(context: PlanContext, task: Task, timing: Timing, purpose: str) -> ToolDraft:
    if timing is Timing.PRE:
        text = (
            purpose or f"Search the web for recent information about: {first_line(context.request)}"
        )
        return ToolDraft(DEFAULT_TOOL[timing], "Web search", text)
    text = purpose or (
        f"Chart the main numeric figures of {task.output_path} as a self-contained HTML chart."
    )
    return ToolDraft(DEFAULT_TOOL[timing], "Data visualization", text)
