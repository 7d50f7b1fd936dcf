"""The values of each plan template: pure functions from a PlanContext (SPEC §10.3).

A prompt gets what the plan needs and never the whole home: the request (capped), the ACTIVE
instructions, the phase, stage or task at hand, and the most relevant catalog rows, all fenced as
data (planner.model.blocks). No file is read here.
"""

from __future__ import annotations

from multiverse.contracts import McpRecipe, PlanContext
from multiverse.models import InstructionStatus, MajorStage, Phase, Task, Timing
from planner.mcp import match_mcp
from planner.model.blocks import (
    LIST_LIMIT,
    REQUEST_LIMIT,
    catalog_block,
    instructions_block,
    json_block,
    learning_block,
    quoted,
    request_block,
    short,
)
from planner.model.references import References

# A small model reads every prompt: the stages and the proposal see the most relevant rows only.
PROMPT_CATALOG_LIMIT = 20


def mode_values(request: str, has_past_runs: bool) -> dict[str, str]:
    """Values of the `mode` template."""
    past = "yes" if has_past_runs else "no"
    return {"request": request_block(request), "has_past_runs": past}


def active_past_ids(context: PlanContext) -> list[str]:
    """The ids of the past runs' ACTIVE instructions: all a proposal may supersede."""
    return sorted(
        item.instruction_id
        for item in context.past_instructions
        if item.status is InstructionStatus.ACTIVE
    )


def proposal_values(context: PlanContext) -> dict[str, str]:
    """Values of the `proposal` template."""
    texts = [t.strip() for t in context.modifications if t.strip()]
    if not texts and (context.modification or "").strip():
        texts = [(context.modification or "").strip()]
    if texts:
        # MODIFY is cumulative: the proposal honours every text since the first, in order.
        modification_block = (
            "The user answered MODIFY to earlier proposals; revise the first proposal to honour "
            "every one of these texts, applied in order (a later one wins where they differ):\n\n"
            + "\n\n".join(quoted(text, f"modify-{n}") for n, text in enumerate(texts, 1))
        )
    else:
        modification_block = "(none: this is the first proposal)"
    active = active_past_ids(context)
    past = [i for i in context.past_instructions if i.status is InstructionStatus.ACTIVE]
    supersedes = (
        f"the ids ({', '.join(active)}) of the past instructions a proposed instruction "
        "replaces, each id at most once; [] for the others"
        if active
        else "always [] (no past instruction is ACTIVE)"
    )
    return {
        "run_id": context.run_id,
        "request": request_block(context.request),
        "modification": modification_block,
        "instructions": instructions_block(context.instructions),
        "past_instructions": instructions_block(past, with_run=True),
        "learning": learning_block(context),
        "catalog": catalog_block(context, context.request, PROMPT_CATALOG_LIMIT),
        "supersedes_rule": supersedes,
    }


def stages_values(context: PlanContext, phase: Phase) -> dict[str, str]:
    """Values of the `stages` template."""
    earlier = [
        {"stage_name": s.stage_name, "stage_goal": s.stage_goal}
        for s in context.stages
        if s.phase_id != phase.phase_id
    ][-LIST_LIMIT:]
    query = f"{context.request}\n{phase.phase_purpose}"
    return {
        "run_id": context.run_id,
        "phase_id": phase.phase_id,
        "phase_name": phase.phase_name,
        "phase_purpose": phase.phase_purpose or "(no purpose written)",
        "request": request_block(context.request),
        "instructions": instructions_block(context.instructions),
        "earlier_stages": json_block(earlier) if earlier else "(none: this is the first phase)",
        "catalog": catalog_block(context, query, PROMPT_CATALOG_LIMIT),
    }


def deliverable_rule(publishing: bool, run_id: str) -> str:
    """What the tasks call says about deliverables: only the publishing stage has them."""
    if not publishing:
        return "- Every output stays in this phase's workspace; the system names the paths."
    return (
        f'- This stage publishes to outputs/{run_id}/: add `"deliverable": true` to each task '
        "whose file the user receives (when none is marked, the last task's file is the "
        "deliverable)."
    )


def tasks_values(
    context: PlanContext,
    stage: MajorStage,
    phase: Phase,
    references: References,
    publishing: bool,
) -> dict[str, str]:
    """Values of the `tasks` template; `publishing`: the last stage of GENERATING_OUTPUT."""
    return {
        "run_id": context.run_id,
        "stage_id": stage.stage_id,
        "stage_name": stage.stage_name,
        "stage_goal": stage.stage_goal or "(no goal written)",
        "phase_name": phase.phase_name,
        "phase_purpose": phase.phase_purpose or "(no purpose written)",
        "request": request_block(context.request),
        "instructions": instructions_block(context.instructions),
        "references": references.block(),
        "deliverable_rule": deliverable_rule(publishing, context.run_id),
        # The example points at a real source when there is one, not always at the request.
        "example_reference": "2" if len(references.paths) > 1 else "1",
    }


def recipes_block(recipes: list[McpRecipe], timing: Timing) -> str:
    """The MCP recipes of this timing, with their ordered steps."""
    rows = [
        {
            "mcp_name": recipe.name,
            "applies_when": recipe.applies_when,
            "steps": [{"tool_type": s.tool_type, "purpose": s.purpose} for s in recipe.steps],
        }
        for recipe in recipes
        if recipe.timing is timing
    ]
    return json_block(rows) if rows else f"(none: guidelines/mcp_list.md has no {timing} recipe)"


def tools_values(
    context: PlanContext, task: Task, timing: Timing, recipes: list[McpRecipe]
) -> dict[str, str]:
    """Values of the `tools` template."""
    purpose = task.pre_tool_purpose if timing is Timing.PRE else task.post_tool_purpose
    usable = [r for r in recipes if all(s.tool_type in context.tool_types for s in r.steps)]
    fitting = match_mcp(usable, f"{purpose}\n{context.request}", timing)
    suggestion = (
        f"The recipe {fitting.name!r} matches this purpose by its keywords; expand it unless "
        "it clearly does not serve the task."
        if fitting is not None
        else "No recipe matches this purpose by its keywords; use one only if it clearly fits."
    )
    task_data = {
        "task_name": task.task_name,
        "task_purpose": task.task_purpose,
        "output_path": task.output_path,
    }
    return {
        "target": f"{timing.value.lower()}_tool:{task.task_id}",
        "run_id": context.run_id,
        "task_id": task.task_id,
        "timing": timing.value,
        "when": "before the task runs" if timing is Timing.PRE else "after the task ran",
        "task": json_block(task_data),
        "tool_purpose": quoted(purpose.strip() or "(not written: infer it from the task)", "text"),
        "tool_types": ", ".join(context.tool_types),
        "recipes": recipes_block(recipes, timing),
        "suggestion": suggestion,
        "example_tool": context.tool_types[0] if context.tool_types else "web_search",
        "request": request_block(short(context.request, REQUEST_LIMIT // 4)),
    }
