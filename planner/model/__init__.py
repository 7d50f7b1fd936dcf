"""The model-backed Planner (SPEC §10.3): plans made by a model through the gateway.

ModelPlanner: the PlannerRole served by a model through the gateway (SPEC §10.3, §10.4).

Each plan target is one JSON call (see planner.model.context): the system message is the agent
package's AGENT.md, loaded afresh on every call, the user message the target's template filled
with the selective context (planner.model.context). The model answers only what needs judgement;
code writes the ids, orders, chains and paths (planner.model.answers), and the plan is checked
with the same validators as the builtin planner's, so an invalid plan goes back to the model
with the errors. A target whose tier no model serves here is planned by the builtin planner.

The request spec (SPEC §6a) is one such call, whose schema is made for the home
(`multiverse.spec.draft`: the files and each table's columns as enums, so a small model cannot
name a column that does not exist), its answer checked by the one validator as the rules'
reading is. The rules read the request first and their reading is given to the model as a
starting point to correct. Two things the model cannot undo: a file the rules read as left out
stays left out, and a call that fails leaves the rules' spec, logged, never a lost proposal.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

import structlog
from pydantic import BaseModel

from multiverse.agent_package import AgentPackage, load_agent_package, role_package_dir
from multiverse.config import RuntimeMapping, Tier, TierConfig
from multiverse.gateway import LlmError, ModelCalls
from multiverse.home import Home
from multiverse.models import PUBLISHING_PHASE, Timing
from multiverse.roles import (
    ModeDecision,
    PlanContext,
    PlanFailed,
    Proposal,
    StagesPlan,
    TasksPlan,
    ToolTasksPlan,
)
from multiverse.spec import (
    HomeScan,
    RequestSpec,
    describe_home,
    draft_model,
    draft_of_spec,
    run_prefix,
    scan_home,
    spec_of_draft,
)
from planner.builtin import (
    BuiltinPlanner,
    charts_said,
    load_mcps,
    modifications,
    not_simple_because,
    read_spec,
    request_spec,
    settle_mode,
    settle_spec,
)
from planner.builtin import decide_mode as heuristic_mode
from planner.model.answers import (
    StagesAnswer,
    chart_tools,
    phase_answer,
    tasks_answer,
    to_phase,
    to_stages,
    to_tasks,
    to_tool_tasks,
    tool_tasks_answer,
    with_charts,
)
from planner.model.context import (
    PROMPTS_PACKAGE,
    Asker,
    PlanJob,
    checker,
    digest,
    mode_values,
    phase_values,
    quoted,
    reference_candidates,
    request_block,
    stages_values,
    tasks_values,
    tools_values,
)
from planner.validation import (
    validate_phase,
    validate_stages,
    validate_tasks,
    validate_tool_tasks,
)

log = structlog.get_logger(__name__)

# The answer is a short JSON object; room for a few charts and questions, not for a runaway.
SPEC_TOKENS = 900
GUIDELINES_LIMIT = 4000  # characters of guidelines shown (their format rules are what matter)


def make_spec(asker: Asker, package: AgentPackage, context: PlanContext) -> RequestSpec:
    """The checked spec of the run's request and every MODIFY since, as the model reads it
    (the rules' reading when no model serves the card's tier or the call fails)."""
    return model_spec(asker, package, context) or request_spec(context)


def model_spec(asker: Asker, package: AgentPackage, context: PlanContext) -> RequestSpec | None:
    """The checked spec as the model reads it; None when the rules' reading stands (no model
    serves the card's tier, the tables answer every question at once, or the call failed)."""
    home = Home(Path(context.home))
    scan = scan_home(home, context.search_provider)
    texts = modifications(context)
    rules = read_spec(context.request, texts, scan, home.root)
    if not asker.serves(package.card.tier):
        return None
    if rules.mode == "simple" and not charts_said([context.request, *texts]):
        return None  # every question is a cell or a computation the tables answer at once
    job = PlanJob(
        target="spec",
        template="spec",
        values=spec_values(context, scan, rules),
        schema=draft_model(scan),
        check=None,
        start=package.card.tier,
        scope=f"{context.run_id}:spec",
        tokens=SPEC_TOKENS,
        run_id=context.run_id,
        variant=f"modify-{digest(chr(10).join(texts))}" if texts else "default",
    )
    try:
        answer = asker.ask(package, job)
    except (PlanFailed, LlmError) as failed:
        errors = failed.errors[:5] if isinstance(failed, PlanFailed) else [str(failed)]
        log.warning("spec_fallback_rules", run_id=context.run_id, errors=errors)
        return None
    drafted = spec_of_draft(answer, context.request, scan, rules)
    return settle_spec(_held_to_the_words(_keep_left_out(drafted, rules), rules,
                                          [context.request, *texts]), scan, home.root)  # fmt: skip


def prefix_of(context: PlanContext) -> str:
    """The run's prefix of a plan: the request, the frozen spec, the ACTIVE instructions."""
    return run_prefix(context.request, context.spec, context.instructions)


def _held_to_the_words(spec: RequestSpec, rules: RequestSpec, texts: list[str]) -> RequestSpec:
    """The model's spec kept to what the words say: the requester's language as the rules read
    it (the script, or a language asked); the length, the deliverable and the reader the
    request's own words name ("a two-page memo for the board"), and the rules' length where
    the model gives none; and no chart where no chart was asked for."""
    update: dict[str, object] = {"language": rules.language}
    if rules.length_reading.phrase or spec.length_words is None:
        update |= {"length_words": rules.length_words, "length_reading": rules.length_reading}
    if rules.deliverable_reading.phrase:
        update |= {"deliverable": rules.deliverable,
                   "deliverable_reading": rules.deliverable_reading}  # fmt: skip
    if rules.audience and rules.audience_reading.phrase:
        update |= {"audience": rules.audience, "audience_reading": rules.audience_reading}
    changed = sorted(key for key, value in update.items() if getattr(spec, key) != value)
    if changed:
        log.info("spec_model_held_to_the_words", fields=changed)
    if spec.charts and not rules.charts and not charts_said(texts):
        update["charts"] = []
        log.info("spec_model_chart_dropped", charts=len(spec.charts), reason="not asked")
    return spec.model_copy(update=update)


def spec_values(context: PlanContext, scan: HomeScan, rules: RequestSpec) -> dict[str, str]:
    """Values of the `spec` template."""
    texts = modifications(context)
    said = "\n\n".join(quoted(text, f"modify-{n}") for n, text in enumerate(texts, 1))
    guidelines = "\n\n".join(f"`{item.path}`:\n{quoted(item.text, 'text')}"
                             for item in scan.guidelines)  # fmt: skip
    if len(guidelines) > GUIDELINES_LIMIT:
        guidelines = guidelines[:GUIDELINES_LIMIT] + "\n(cut)"
    return {
        "run_id": context.run_id,
        "request": request_block(context.request),
        "modifications": said or "(none)",
        "home": describe_home(scan),
        "guidelines": guidelines or "(none)",
        "reading": json.dumps(draft_of_spec(rules), ensure_ascii=False, indent=1),
    }


def _keep_left_out(spec: RequestSpec, rules: RequestSpec) -> RequestSpec:
    """The model's spec with every file the rules read as left out still left out."""
    missed = [
        group.model_copy(update={"files": [f for f in group.files if f not in spec.excluded()]})
        for group in rules.left_out
    ]
    missed = [group for group in missed if group.files]
    if not missed:
        return spec
    dropped = {path for group in missed for path in group.files}
    return spec.model_copy(
        update={
            "left_out": [*spec.left_out, *missed],
            "sources": [path for path in spec.sources if path not in dropped],
        }
    )



P = TypeVar("P", bound=BaseModel)
A = TypeVar("A", bound=BaseModel)
MODE_TIER = Tier.LOW
# About the tokens each answer needs (the tier's max_tokens caps them): room for the answer,
# not for a runaway. A cut answer is asked again once with the tier's whole max_tokens.
MODE_TOKENS = 200
STAGES_TOKENS = 700
TASKS_TOKENS = 1400
PHASE_TOKENS = 2000  # a phase's stages with their tasks, in one answer
TOOLS_TOKENS = 600
# A deliverable of two pages or less (asked, or its kind's default the proposal promised) is
# planned by code, as offline (stages, tasks, tool tasks): a model's plan of it only adds calls
# (a small one copied the prompt's example stages into every phase, and planned five tasks
# extracting the same table). The model reads the request into the spec, writes, and words.
SHORT_WORDS = 1000


def short_work(context: PlanContext) -> bool:
    """Whether the confirmed deliverable is short enough to be planned by code."""
    spec = context.spec
    return spec is not None and spec.length()[0] <= SHORT_WORDS
PROPOSAL_TOKENS = 1500


class ModelPlanner:
    """The model-backed Planner; a target whose tier is not model-backed goes to the builtin."""

    def __init__(
        self,
        gateway: ModelCalls,
        mapping: RuntimeMapping,
        tier_configs: Mapping[Tier, TierConfig],
        home: Path,
        *,
        agent_dir: Path | None = None,
        prompts_dir: Path | None = None,
    ) -> None:
        self.mapping = mapping
        self.home = home
        self.agent_dir = agent_dir
        self.asker = Asker(gateway, tier_configs, prompts_dir)
        self.builtin = BuiltinPlanner(home)

    def package(self) -> AgentPackage:
        """The Planner's agent package, loaded afresh (SPEC §10.1: on every spawn)."""
        return load_agent_package(self.agent_dir or role_package_dir("planner"), self.mapping)

    def decide_mode(
        self, request: str, has_past_runs: bool, pending_ledger: str | None = None
    ) -> ModeDecision:
        """Plan target `mode`: a cheap LOW-tier call held to the heuristic's evidence, made
        only where a model's judgement can change the answer."""
        if not self.asker.serves(MODE_TIER):
            return self.builtin.decide_mode(request, has_past_runs)
        if not_simple_because(request) is not None:
            # A deliverable, several lines or many words make a run whatever a model says, and
            # which run is the fact of past runs (settle_mode): the heuristic decides, no call.
            return heuristic_mode(request, has_past_runs)
        job = PlanJob(
            target="mode",
            template="mode",
            values=mode_values(request, has_past_runs),
            schema=ModeDecision,
            check=None,
            start=MODE_TIER,
            scope=f"mode:{digest(request)}",
            tokens=MODE_TOKENS,
            pending_ledger=pending_ledger,
        )
        try:
            verdict = self.asker.ask(self.package(), job)
        except (PlanFailed, LlmError) as failed:
            # Deciding the mode must not lose a request: the documented heuristic decides.
            errors = failed.errors[:5] if isinstance(failed, PlanFailed) else [str(failed)]
            log.warning("mode_fallback_heuristic", errors=errors)
            return self.builtin.decide_mode(request, has_past_runs)
        settled = settle_mode(verdict, request, has_past_runs)
        if settled.mode is not verdict.mode:
            log.info("mode_overridden", said=verdict.mode.value, mode=settled.mode.value,
                     reason=settled.reason)  # fmt: skip
        return settled

    def plan_phase0(self, context: PlanContext) -> TasksPlan:
        """Plan target `phase0`: the builtin plan.

        Phase 0's shape is fixed by SPEC §6 (tasks T00, T02, T03, T04 with fixed outputs the
        Orchestrator relies on), so a model could only add cost and the risk of a wrong plan.
        """
        return self.builtin.plan_phase0(context)

    def propose(self, context: PlanContext) -> Proposal:
        """Plan target `proposal` (revised by `context.modification` on MODIFY): the model
        reads the request into the spec, and the proposal is that spec's rendering, its
        instructions derived from it by code (one call; nothing asked can be dropped)."""
        package = self.package()
        if not self.asker.serves(package.card.tier):
            return self._offline("proposal", context, self.builtin.propose)
        return self.builtin.propose(context, model_spec(self.asker, package, context))

    def plan_stages(self, context: PlanContext) -> StagesPlan:
        """Plan target `stages:<phase_id>` for `context.phase`: with the stages' tasks in the
        same answer, but in the publishing phase (its last stage's tasks have rules of their
        own: what the user receives, the charts drawn first)."""
        target, phase = context.stages_target()
        package = self.package()
        if not self.asker.serves(package.card.tier) or short_work(context):
            return self._offline(target, context, self.builtin.plan_stages)
        if phase.phase_name != PUBLISHING_PHASE:
            references = reference_candidates(context, phase.phase_purpose)
            return self._planned(
                package, context, target, "phase", phase_values(context, phase, references),
                phase_answer(references.paths),
                lambda answer: to_phase(answer, context, phase, references),
                lambda plan: validate_phase(plan, context), PHASE_TOKENS,
            )  # fmt: skip
        return self._planned(
            package, context, target, "stages", stages_values(context, phase), StagesAnswer,
            lambda answer: to_stages(answer, context, phase),
            lambda plan: validate_stages(plan, context), STAGES_TOKENS,
        )  # fmt: skip

    def plan_tasks(self, context: PlanContext) -> TasksPlan:
        """Plan target `tasks:<stage_id>` for `context.stage`."""
        target, stage, phase = context.tasks_target()
        package = self.package()
        if not self.asker.serves(package.card.tier):
            return self._offline(target, context, self.builtin.plan_tasks)
        if short_work(context):
            # Code's plan; a model Executor writes the deliverable, so the charts asked are drawn
            # by code first (the builtin Executor draws them in its own deliverable).
            return with_charts(self._offline(target, context, self.builtin.plan_tasks), context)
        references = reference_candidates(context, f"{stage.stage_name}\n{stage.stage_goal}")
        publishing = context.is_publishing(stage)
        return self._planned(
            package, context, target, "tasks",
            tasks_values(context, stage, phase, references, publishing),
            tasks_answer(references.paths, publishing),
            lambda answer: to_tasks(answer, context, stage, phase, references),
            lambda plan: validate_tasks(plan, context), TASKS_TOKENS,
        )  # fmt: skip

    def plan_tools(self, context: PlanContext, timing: Timing) -> ToolTasksPlan:
        """Plan targets `pre_tool:<task_id>` / `post_tool:<task_id>` for `context.task`."""
        target, task = context.tools_target(timing)
        if not context.tool_types:
            # No answer could pass validation: failing now saves three paid calls.
            raise PlanFailed(target, ["the runtime mapping provides no tool types"])
        package = self.package()
        charts = chart_tools(context, task, timing)
        if charts is not None:
            return charts
        if not self.asker.serves(package.card.tier) or short_work(context):
            return self._offline(
                target, context, lambda given: self.builtin.plan_tools(given, timing)
            )
        return self._planned(
            package, context, target, "tools",
            tools_values(context, task, timing, load_mcps(self.home)),
            tool_tasks_answer(context.tool_types),
            lambda answer: to_tool_tasks(answer, context, task, timing),
            lambda plan: validate_tool_tasks(plan, context, timing), TOOLS_TOKENS,
        )  # fmt: skip

    def _planned(
        self, package: AgentPackage, context: PlanContext, target: str, template: str,
        values: dict[str, str], schema: type[A], convert: Callable[[A], P],
        validate: Callable[[P], list[str]], tokens: int,
    ) -> P:  # fmt: skip
        """The plan of one target by the model: the answer fitted to `schema`, converted into
        plan rows and validated (an invalid plan goes back to the model with the errors)."""
        job = PlanJob(
            target=target,
            template=template,
            values=values,
            schema=schema,
            check=checker(convert, validate),
            start=package.card.tier,
            scope=f"{context.run_id}:{target}",
            tokens=tokens,
            prefix=prefix_of(context),
            run_id=context.run_id,
        )
        return convert(self.asker.ask(package, job))

    def _offline(self, target: str, context: PlanContext, plan: Callable[[PlanContext], P]) -> P:
        """A plan by the builtin planner, when no model serves the card's tier here."""
        log.info("planner_tier_builtin", target=target, run_id=context.run_id)
        return plan(context)


__all__ = [
    "PROMPTS_PACKAGE",
    "ModelPlanner",
]
