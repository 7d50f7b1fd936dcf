"""The selective context of each plan prompt: pure functions from a PlanContext to the values
of a template (SPEC §10.3).

A prompt gets what the plan needs and never the whole home: the request (capped), the ACTIVE
instructions, the phase or stage at hand, and at most CATALOG_LIMIT catalog rows (path, type and
a capped summary) of the inputs and of this run, most relevant first. No file is read here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from multiverse.contracts import McpRecipe, PlanContext
from multiverse.models import (
    AssetType,
    CatalogEntry,
    MajorStage,
    Phase,
    Task,
    Timing,
    UserInstruction,
)
from multiverse.unread import is_unread
from planner.mcp import match_mcp
from planner.validation import PUBLISHING_PHASE, is_publishing_stage, request_path

CATALOG_LIMIT = 60
REQUEST_LIMIT = 4000
SUMMARY_LIMIT = 300
LIST_LIMIT = 40
PAST_REQUEST_LIMIT = 300
_HANGUL = re.compile(r"[\uac00-\ud7af]")
# Rows of this run feed the next steps most directly, then the sources, then the rules.
_GROUP = {AssetType.ORIGINAL_INPUT: 1, AssetType.GUIDELINE_DOC: 2}


def short(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, marking the cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def quoted(text: str, info: str = "") -> str:
    """`text` in a code fence longer than any backtick run inside it, so it stays data."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def json_block(data: Any) -> str:
    """`data` as JSON (UTF-8 as is) in a fence; a list has one item per line, to save tokens."""
    if isinstance(data, list) and data:
        items = ",\n".join(f"  {json.dumps(item, ensure_ascii=False)}" for item in data)
        return quoted(f"[\n{items}\n]", "json")
    return quoted(json.dumps(data, ensure_ascii=False, indent=2), "json")


def request_block(request: str) -> str:
    """The request, capped, fenced as data."""
    cut = short(request.strip(), REQUEST_LIMIT)
    note = "" if cut == request.strip() else f"\n(cut to its first {REQUEST_LIMIT} characters)"
    return quoted(cut or "(empty request)", "text") + note


def words(text: str) -> set[str]:
    """Matching terms of a text: words of two or more letters, plus Hangul character bigrams."""
    found = set(re.findall(r"\w{2,}", text.casefold()))
    for word in list(found):
        if _HANGUL.search(word):
            found.update(word[i : i + 2] for i in range(len(word) - 1))
    return found


def instructions_block(items: Iterable[UserInstruction], with_run: bool = False) -> str:
    """Instructions as JSON rows, or a sentence when there are none."""
    rows = []
    for item in items:
        row = {
            "instruction_id": item.instruction_id,
            "instruction_type": item.instruction_type,
            "content": item.content,
            "justification": short(item.justification, SUMMARY_LIMIT),
        }
        if with_run:
            row = {"run_id": item.run_id, **row}
        rows.append(row)
    return json_block(rows) if rows else "(none)"


def relevant_catalog(context: PlanContext, query: str) -> list[CatalogEntry]:
    """The catalog rows of the inputs and of this run, most relevant first, capped.

    Rows noting an input that was not read are left out: they are never a reference.
    """
    wanted = words(query)
    scored = []
    for index, entry in enumerate(context.catalog):
        if entry.run_id not in (None, context.run_id) or is_unread(entry):
            continue
        group = 0 if entry.run_id == context.run_id else _GROUP.get(entry.asset_type, 3)
        overlap = len(wanted & words(f"{entry.file_path} {entry.summary}"))
        # Within this run the newest work comes first: it is what the next step builds on.
        recency = -index if group == 0 else index
        scored.append(((group, -overlap, recency), entry))
    return [entry for _, entry in sorted(scored, key=lambda pair: pair[0])[:CATALOG_LIMIT]]


def catalog_block(context: PlanContext, query: str) -> str:
    """The relevant catalog rows as JSON, with how many were left out."""
    rows = relevant_catalog(context, query)
    data = [
        {
            "file_path": entry.file_path,
            "asset_type": entry.asset_type.value,
            "summary": short(" ".join(entry.summary.split()), SUMMARY_LIMIT),
        }
        for entry in rows
    ]
    shown = {entry.file_path for entry in rows}
    owned = [e for e in context.catalog if e.run_id in (None, context.run_id)]
    left = sum(1 for e in owned if not is_unread(e)) - len(shown)
    more = f"\n({left} less relevant catalog rows are not shown.)" if left > 0 else ""
    return (json_block(data) if data else "(the catalog has no rows yet)") + more


def learning_block(context: PlanContext) -> str:
    """The ranked past runs with their scores."""
    rows = [
        {
            "run_id": past.run_id,
            "score": round(past.score, 3),
            "user_request": short(past.user_request, PAST_REQUEST_LIMIT),
        }
        for past in context.learning.past_runs
    ]
    return json_block(rows) if rows else "(none: this is the first run)"


def mode_values(request: str, has_past_runs: bool) -> dict[str, str]:
    """Values of the `mode` template."""
    past = "yes: past runs exist" if has_past_runs else "no: there are no past runs"
    return {"request": request_block(request), "has_past_runs": past}


def proposal_values(context: PlanContext) -> dict[str, str]:
    """Values of the `proposal` template."""
    modification = context.modification
    if modification is not None and modification.strip():
        modification_block = (
            "The user answered MODIFY to the previous proposal with this text; revise the "
            "proposal to honour it:\n\n" + quoted(modification.strip(), "text")
        )
    else:
        modification_block = "(none: this is the first proposal for this request)"
    return {
        "run_id": context.run_id,
        "request": request_block(context.request),
        "modification": modification_block,
        "instructions": instructions_block(context.instructions),
        "past_instructions": instructions_block(context.past_instructions, with_run=True),
        "learning": learning_block(context),
        "catalog": catalog_block(context, context.request),
    }


def stages_values(context: PlanContext, phase: Phase) -> dict[str, str]:
    """Values of the `stages` template."""
    earlier = [
        {"stage_id": s.stage_id, "stage_name": s.stage_name, "stage_goal": s.stage_goal}
        for s in context.stages
        if s.phase_id != phase.phase_id
    ][-LIST_LIMIT:]
    return {
        "run_id": context.run_id,
        "phase_id": phase.phase_id,
        "phase_name": phase.phase_name,
        "phase_purpose": phase.phase_purpose or "(no purpose written)",
        "workspace": f"runs/{context.run_id}/workspace/{phase.phase_name}/",
        "request": request_block(context.request),
        "instructions": instructions_block(context.instructions),
        "earlier_stages": json_block(earlier) if earlier else "(none: this is the first phase)",
        "catalog": catalog_block(context, f"{context.request}\n{phase.phase_purpose}"),
    }


def output_rule(context: PlanContext, stage: MajorStage, phase: Phase) -> str:
    """Where this stage's tasks may write, in words."""
    workspace = f"runs/{context.run_id}/workspace/{phase.phase_name}/"
    if is_publishing_stage(context, stage):
        return (
            f"This is the last, publishing stage of {PUBLISHING_PHASE}: each output_path is a new "
            f"file inside outputs/{context.run_id}/ (the deliverables the user receives) or, for "
            f"intermediate parts, inside {workspace}."
        )
    return (
        f"Each output_path is a new file inside {workspace}; nothing else is allowed (only the "
        f"last stage of {PUBLISHING_PHASE} publishes to outputs/)."
    )


def tasks_values(context: PlanContext, stage: MajorStage, phase: Phase) -> dict[str, str]:
    """Values of the `tasks` template."""
    planned = [
        {"task_id": t.task_id, "task_name": t.task_name, "output_path": t.output_path}
        for t in context.tasks
        if t.stage_id != stage.stage_id
    ][-LIST_LIMIT:]
    query = f"{stage.stage_name}\n{stage.stage_goal}\n{context.request}"
    return {
        "run_id": context.run_id,
        "stage_id": stage.stage_id,
        "stage_name": stage.stage_name,
        "stage_goal": stage.stage_goal or "(no goal written)",
        "phase_name": phase.phase_name,
        "phase_purpose": phase.phase_purpose or "(no purpose written)",
        "output_rule": output_rule(context, stage, phase),
        "request_path": request_path(context.run_id),
        "request": request_block(context.request),
        "instructions": instructions_block(context.instructions),
        "planned_tasks": json_block(planned) if planned else "(none)",
        "catalog": catalog_block(context, query),
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
        "task_id": task.task_id,
        "task_name": task.task_name,
        "task_purpose": task.task_purpose,
        "related_references": task.related_references,
        "output_path": task.output_path,
    }
    return {
        "target": f"{timing.value.lower()}_tool:{task.task_id}",
        "run_id": context.run_id,
        "task_id": task.task_id,
        "timing": timing.value,
        "task": json_block(task_data),
        "tool_purpose": quoted(purpose.strip() or "(not written: infer it from the task)", "text"),
        "tool_types": ", ".join(context.tool_types),
        "recipes": recipes_block(recipes, timing),
        "suggestion": suggestion,
        "request": request_block(short(context.request, REQUEST_LIMIT // 4)),
    }
