"""The values of each plan template: pure functions from a PlanContext (SPEC §10.3).

A prompt gets what the plan needs and never the whole home: the request (capped), the ACTIVE
instructions, the phase, stage or task at hand, and the most relevant catalog rows, all fenced as
data (planner.model.context). No file is read here.

Also here: data blocks of the plan prompts; the numbered files a task plan may reference (SPEC
§7.4).

One plan call (SPEC §10.2, §10.4): prompt, JSON guard with repairs, escalation, PlanFailed.

The gateway's JSON guard sends an invalid answer back with its errors twice. A plan still invalid
after that, or an answer that ran away, is asked once more on the next tier up, when the agent
card's escalation says so and that tier is served by another model (the same model and server
would only repeat the failure; `multiverse.agent_package.tiers_to_try`); the escalation is
logged and counted in the run's usage. Otherwise (or when that fails too) it is a PlanFailed
carrying the errors and the last raw answer. Any other failed call (budget, provider, timeout,
an answer that does not fit in the tier's max_tokens) is a PlanFailed at once. Each call asks
for about the tokens its answer needs, never more than the tier allows.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import structlog
from pydantic import BaseModel

from multiverse.agent_package import AgentCard, AgentPackage, tiers_to_try
from multiverse.config import Tier, TierConfig
from multiverse.documents import is_unread
from multiverse.gateway import (
    JsonGuardFailed,
    JsonResult,
    LlmCall,
    LlmError,
    ModelCalls,
    capability_failure,
    load_prompt,
)
from multiverse.models import (
    AssetType,
    CatalogEntry,
    MajorStage,
    Phase,
    Task,
    Timing,
)
from multiverse.roles import McpRecipe, PlanContext, PlanFailed
from multiverse.spec import with_prefix
from planner.builtin import match_mcp
from planner.validation import request_path

CATALOG_LIMIT = 60
REQUEST_LIMIT = 4000
SUMMARY_LIMIT = 300
LIST_LIMIT = 40
PAST_REQUEST_LIMIT = 300
_HANGUL = re.compile(r"[\uac00-\ud7af]")
# Rows of this run feed the next steps most directly, then the sources, then the work of the
# similar past runs, then the rules.
_GROUP = {AssetType.ORIGINAL_INPUT: 1, AssetType.GUIDELINE_DOC: 3}
_PAST_GROUP = 2


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


# A past run's work a later run may build on: its analyses, strategies, content and deliverables.
_PAST_WORK = frozenset({
    AssetType.ANALYSIS_REPORT, AssetType.STRATEGY_DOC, AssetType.REFINED_CONTENT,
    AssetType.ASSEMBLY_PLAN, AssetType.FINAL_OUTPUT,
})  # fmt: skip


def offered(context: PlanContext, entry: CatalogEntry) -> bool:
    """Whether a plan may be offered a catalog row: the inputs and this run's work, and the
    work of the ranked similar past runs (SPEC §8: a CONTINUOUS_RUN builds on them); never a
    file the confirmed spec leaves out, nor an input that could not be read."""
    left_out = context.spec.excluded() if context.spec is not None else set()
    if is_unread(entry) or entry.file_path in left_out:
        return False
    if entry.run_id in (None, context.run_id):
        return True
    past = {run.run_id for run in context.learning.past_runs}
    return entry.run_id in past and entry.asset_type in _PAST_WORK


def relevant_catalog(
    context: PlanContext, query: str, limit: int = CATALOG_LIMIT
) -> list[CatalogEntry]:
    """The catalog rows a plan may use, most relevant first, capped: this run's newest work,
    the inputs, the past runs' work (the closest run first), the guidelines, the rest."""
    wanted = words(query)
    score = {run.run_id: run.score for run in context.learning.past_runs}
    scored = []
    for index, entry in enumerate(context.catalog):
        if not offered(context, entry):
            continue
        if entry.run_id == context.run_id:
            group: tuple[int, float] = (0, 0.0)
        elif entry.run_id is not None:
            group = (_PAST_GROUP, -score.get(entry.run_id, 0.0))
        else:
            group = (_GROUP.get(entry.asset_type, 4), 0.0)
        overlap = len(wanted & words(f"{entry.file_path} {entry.summary}"))
        # Within this run the newest work comes first: it is what the next step builds on.
        recency = -index if group[0] == 0 else index
        scored.append(((*group, -overlap, recency), entry))
    return [entry for _, entry in sorted(scored, key=lambda pair: pair[0])[:limit]]


def catalog_block(context: PlanContext, query: str, limit: int = CATALOG_LIMIT) -> str:
    """The relevant catalog rows as JSON, with how many were left out."""
    rows = relevant_catalog(context, query, limit)
    data = [
        {
            "file_path": entry.file_path,
            "asset_type": entry.asset_type.value,
            "summary": short(" ".join(entry.summary.split()), SUMMARY_LIMIT),
        }
        for entry in rows
    ]
    shown = {entry.file_path for entry in rows}
    left = sum(1 for e in context.catalog if offered(context, e)) - len(shown)
    more = f"\n({left} less relevant catalog rows are not shown.)" if left > 0 else ""
    return (json_block(data) if data else "(the catalog has no rows yet)") + more


REFERENCE_LIMIT = 24
REFERENCE_SUMMARY_LIMIT = 200


@dataclass(frozen=True)
class References:
    """The candidate files of one tasks call, numbered from 1, and their descriptions."""

    paths: list[str]
    lines: list[str]

    def block(self) -> str:
        """The numbered list, fenced as data."""
        return quoted("\n".join(self.lines), "text")

    def path(self, number: int) -> str:
        """The file of a (validated) number."""
        return self.paths[number - 1]


def reference_candidates(context: PlanContext, about: str) -> References:
    """The request file, then the catalog rows most relevant to `about` (a stage's name and
    goal, or a phase's purpose), capped."""
    request = request_path(context.run_id)
    paths = [request]
    lines = [f"1. {request}: the user's request (always available)"]
    query = f"{about}\n{context.request}"
    for entry in relevant_catalog(context, query, REFERENCE_LIMIT):
        if entry.file_path in paths:
            continue
        paths.append(entry.file_path)
        summary = short(" ".join(entry.summary.split()), REFERENCE_SUMMARY_LIMIT)
        about = f": {summary}" if summary else ""
        kind = entry.asset_type.value
        if entry.run_id not in (None, context.run_id):
            kind += f" of the similar past run {entry.run_id}"
        lines.append(f"{len(paths)}. {entry.file_path} ({kind}){about}")
    return References(paths, lines)


# A small model reads every prompt: the stages and the proposal see the most relevant rows only.
PROMPT_CATALOG_LIMIT = 20


def mode_values(request: str, has_past_runs: bool) -> dict[str, str]:
    """Values of the `mode` template."""
    past = "yes" if has_past_runs else "no"
    return {"request": request_block(request), "has_past_runs": past}


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
        "earlier_stages": json_block(earlier) if earlier else "(none: this is the first phase)",
        "catalog": catalog_block(context, query, PROMPT_CATALOG_LIMIT),
    }


def phase_values(context: PlanContext, phase: Phase, references: References) -> dict[str, str]:
    """Values of the `phase` template: the `stages` template's, and the numbered files."""
    values = stages_values(context, phase)
    del values["catalog"]  # the numbered files are the catalog this call sees
    return {**values, "references": references.block(),
            "example_reference": "2" if len(references.paths) > 1 else "1"}  # fmt: skip


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
    }


PROMPTS_PACKAGE = "planner.prompts"


log = structlog.get_logger(__name__)

A = TypeVar("A", bound=BaseModel)
P = TypeVar("P", bound=BaseModel)


def digest(text: str) -> str:
    """A short, stable fingerprint of a text, for cache scopes and variants."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def checker(
    convert: Callable[[A], P], validate: Callable[[P], list[str]]
) -> Callable[[A], list[str]]:
    """The JSON guard's check: the validation errors of the plan the answer converts into."""

    def check(answer: A) -> list[str]:
        return validate(convert(answer))

    return check


@dataclass(frozen=True)
class PlanJob(Generic[A]):
    """One plan call: what to ask, how to check the answer, and where it belongs."""

    target: str
    template: str
    values: dict[str, str]
    schema: type[A]
    check: Callable[[A], list[str]] | None
    start: Tier
    scope: str
    # About the tokens the answer needs; the tier's max_tokens caps it.
    tokens: int
    run_id: str | None = None
    pending_ledger: str | None = None
    variant: str = "default"
    # The run's prefix (multiverse.spec.run_prefix), first in the system message; "" for the
    # calls before a run has one (the mode and the spec, whose prompts hold the request).
    prefix: str = ""


class Asker:
    """Makes plan calls through the gateway on the model-backed tiers."""

    def __init__(
        self,
        gateway: ModelCalls,
        tier_configs: Mapping[Tier, TierConfig],
        prompts_dir: Path | None = None,
    ) -> None:
        self.gateway = gateway
        self.tier_configs = dict(tier_configs)
        self.prompts_dir = prompts_dir

    def serves(self, tier: Tier) -> bool:
        """Whether a model serves `tier` here."""
        return tier in self.tier_configs

    def tiers(self, card: AgentCard, start: Tier) -> list[Tier]:
        """The start tier, then the card's escalation tier when another model serves it."""
        return tiers_to_try(card, start, self.tier_configs)

    def messages(self, package: AgentPackage, job: PlanJob[A]) -> tuple[str, list[dict[str, str]]]:
        """The call's prompt_version and its messages: the run's prefix and AGENT.md, then the
        rendered template."""
        template = load_prompt(PROMPTS_PACKAGE, job.template, self.prompts_dir)
        user = template.render(job.values)
        version = f"{package.prompt_version}+{template.tag}"
        return version, [
            {"role": "system", "content": with_prefix(job.prefix, package.prompt)},
            {"role": "user", "content": user},
        ]

    def ask(self, package: AgentPackage, job: PlanJob[A]) -> A:
        """The validated answer of one plan call, escalated once if the card says so."""
        version, messages = self.messages(package, job)
        failed: LlmError | None = None
        for tier in self.tiers(package.card, job.start):
            if failed is not None:
                self.gateway.escalated(package.name, job.start.value, tier.value, str(failed),
                                       job.run_id, job.pending_ledger)  # fmt: skip
            config = self.tier_configs[tier]
            call = LlmCall(
                role=package.name,
                agent_version=package.agent_version,
                prompt_version=version,
                variant=job.variant,
                scope=job.scope,
                run_id=job.run_id,
                pending_ledger=job.pending_ledger,
                tier=tier.value,
                **config.call_fields(),
                messages=messages,
                max_tokens=config.answer_tokens(job.tokens),
            )
            try:
                result = self.gateway.complete_json(call, job.schema, job.check)
            except LlmError as error:
                if not capability_failure(error):
                    raise PlanFailed(job.target, [str(error)]) from error
                failed = error
                errors = error.errors if isinstance(error, JsonGuardFailed) else [str(error)]
                log.warning("plan_answer_invalid", target=job.target, run_id=job.run_id,
                            tier=tier.value, errors=errors[:5])  # fmt: skip
                continue
            _log_made(job, tier, result)
            return result.value
        if isinstance(failed, JsonGuardFailed):
            raise PlanFailed(job.target, failed.errors, raw_answer=failed.raw_answer)
        if failed is None:
            raise RuntimeError(f"plan {job.target}: no tier was tried")
        raise PlanFailed(job.target, [str(failed)]) from failed


def _log_made(job: PlanJob[A], tier: Tier, result: JsonResult[A]) -> None:
    log.info(
        "plan_made",
        target=job.target,
        run_id=job.run_id,
        engine="model",
        tier=tier.value,
        model=result.answer.model,
        cached=result.answer.cached,
        used_repair=result.used_repair,
        repair_attempts=result.repair_attempts,
    )
