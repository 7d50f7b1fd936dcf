"""The builtin offline Planner (SPEC §10.5), and the request spec read by its rules.

BuiltinPlanner: the offline PlannerRole; every plan it makes passes the shared validation.

Also here: the builtin Phase 0 plan (SPEC §6); the builtin stage plans; the builtin tool plans.

Also here, the offline mode heuristic (SPEC §5): is a request a simple command or a structured run?

The rule, in order:

1. SIMPLE_TASK when the request (after an optional front-matter block) is a single line of at
   most 15 words that is a simple command or question and does not ask for a deliverable:
   - English commands *start* with a simple verb: list, show, convert, count, summarize /
     summarise, find, "what is in" / "what's in"; a question starts with a question word
     (what, which, how, when, where, who, is, are, was, were, do, does, did) or ends with "?".
   - Korean puts the verb last ("assets 목록 보여줘", "a.csv를 마크다운으로 변환해줘"), so a Korean
     command stem (목록, 보여, 변환, 요약, 세어, 알려, 찾아) or question word (뭐, 무엇, 얼마,
     몇, 어느, 어떤) may stand anywhere in the line; so may a closing "?".
   SIMPLE_TASK is a first word, not the last: the Executor performs the request or declines it,
   and a declined request becomes a run as in rule 2 (the Orchestrator's intake).
   - Deliverable words: report, memo, analysis, strategy, plan, presentation, proposal, deck
     (whole English words, singular: "summarize the reports" reads sources, "write a report"
     asks for a deliverable) and 보고서, 분석, 전략, 메모, 기획, 제안서, 발표.
2. Otherwise CONTINUOUS_RUN when past runs exist (their learning context applies), else
   INITIAL_RUN.
3. The builtin Planner of a home (`planner.builtin.question_mode`) also reads a request
   that rule 2 makes a run, of at most three lines and naming no deliverable, with the offline
   rules against the home's tables: when every question it asks is a lookup or a computation
   the tables answer now, it is a SIMPLE_TASK however many words it has.

A model's verdict (the model-backed Planner) is held to the same evidence by `settle_mode`: a
SIMPLE_TASK on a request that rule 1 says is not simple becomes a run, and whether a run is
INITIAL or CONTINUOUS is the fact of rule 2, not the model's guess.

Front matter `mode:` overrides are the Orchestrator's business, not this module's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import structlog

from multiverse.models import (
    PHASE0_STAGE,
    MajorStage,
    Phase,
    Task,
    Timing,
    stage_id_of,
    tool_tasks_of,
)
from multiverse.roles import (
    McpRecipe,
    Mode,
    ModeDecision,
    PlanContext,
    PlanFailed,
    Proposal,
    StagesPlan,
    TasksPlan,
    ToolTasksPlan,
)
from multiverse.spec import RequestSpec
from offline import charts_said
from planner.builtin import proposal, tasks
from planner.builtin.proposal import (
    answered_at_once,
    modifications,
    read_spec,
    request_spec,
    settle_spec,
)
from planner.builtin.tasks import (
    MCP_FILE,
    first_line,
    folder_files,
    guideline_docs,
    load_mcps,
    match_mcp,
)
from planner.validation import (
    PHASE0_TASK_IDS,
    phase0_outputs,
    request_path,
    validate_phase0,
    validate_proposal,
    validate_stages,
    validate_tasks,
    validate_tool_tasks,
)

MAX_SIMPLE_WORDS = 15
SIMPLE_VERBS = ("list", "show", "convert", "count", "summarize", "summarise", "find")
QUESTION_WORDS = ("what", "what's", "which", "how", "when", "where", "who", "is", "are", "was")
QUESTION_WORDS_MORE = ("were", "do", "does", "did")
SIMPLE_PHRASES = ("what is in", "what's in")
KOREAN_COMMANDS = ("목록", "보여", "변환", "요약", "세어", "알려", "찾아")
KOREAN_QUESTIONS = ("뭐", "무엇", "얼마", "몇", "어느", "어떤")
DELIVERABLE_WORDS = (
    "report",
    "memo",
    "analysis",
    "strategy",
    "plan",
    "presentation",
    "proposal",
    "deck",
)
KOREAN_DELIVERABLES = ("보고서", "분석", "전략", "메모", "기획", "제안서", "발표")
_DELIVERABLE = re.compile(r"\b(" + "|".join(DELIVERABLE_WORDS) + r")\b", re.IGNORECASE)
_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\n.*?\n---[ \t]*(\n|\Z)", re.DOTALL)


def strip_front_matter(request: str) -> str:
    """The request without a leading `---` front-matter block."""
    return _FRONT_MATTER.sub("", request, count=1)


def simple_command(line: str) -> str | None:
    """The simple command or question a line starts with (English) or holds (Korean), else None."""
    folded = line.casefold()
    for phrase in SIMPLE_PHRASES:
        if folded.startswith(phrase):
            return phrase
    first = re.split(r"[\s:,.?]+", folded, maxsplit=1)[0]
    if first in SIMPLE_VERBS or first in QUESTION_WORDS + QUESTION_WORDS_MORE:
        return first
    for stem in KOREAN_COMMANDS + KOREAN_QUESTIONS:
        if stem in line:
            return stem
    if line.rstrip().endswith("?"):
        return "?"
    return None


def deliverable_asked(text: str) -> str | None:
    """The first deliverable word found in `text`, else None."""
    match = _DELIVERABLE.search(text)
    if match:
        return match.group(1).lower()
    for word in KOREAN_DELIVERABLES:
        if word in text:
            return word
    return None


def request_lines(request: str) -> list[str]:
    """The request's non-empty lines, without front matter."""
    return [line.strip() for line in strip_front_matter(request).splitlines() if line.strip()]


def not_simple_because(request: str) -> str | None:
    """Why the request is a structured one whatever a model says, or None when it may be simple.

    The heuristic's own evidence minus its want of a simple verb: a model that answers simple
    tasks may take a short question ("which country sells most?"); a deliverable, several lines
    or many words are never a simple task.
    """
    return _why_not_simple(request_lines(request), need_command=False)


def run_mode(has_past_runs: bool) -> Mode:
    """The mode of a structured request (rule 2)."""
    return Mode.CONTINUOUS_RUN if has_past_runs else Mode.INITIAL_RUN


def settle_mode(decision: ModeDecision, request: str, has_past_runs: bool) -> ModeDecision:
    """A model's verdict checked against the heuristic's evidence (see the module's doc)."""
    if decision.mode is Mode.SIMPLE_TASK:
        why_not = not_simple_because(request)
        if why_not is None:
            return decision
        reason = (
            f"the model said SIMPLE_TASK ({decision.reason.strip()}), but the request is not "
            f"a simple command: {why_not}; so it is a run"
        )
        return ModeDecision(mode=run_mode(has_past_runs), reason=reason)
    mode = run_mode(has_past_runs)
    if decision.mode is mode:
        return decision
    past = "past runs exist" if has_past_runs else "there are no past runs"
    return ModeDecision(mode=mode, reason=f"{decision.reason.strip()} ({past}: {mode.value})")


def decide_mode(request: str, has_past_runs: bool) -> ModeDecision:
    """Apply the documented heuristic; `reason` says which rule fired."""
    lines = request_lines(request)
    why_not = _why_not_simple(lines)
    if why_not is None:
        command = simple_command(lines[0])
        words = len(lines[0].split())
        reason = (
            f"a single line of {words} words with the simple command or question {command!r} "
            "that asks for no deliverable"
        )
        return ModeDecision(mode=Mode.SIMPLE_TASK, reason=reason)
    if has_past_runs:
        reason = f"a structured request ({why_not}); past runs exist, so their lessons apply"
        return ModeDecision(mode=Mode.CONTINUOUS_RUN, reason=reason)
    reason = f"a structured request ({why_not}); there are no past runs"
    return ModeDecision(mode=Mode.INITIAL_RUN, reason=reason)


def _why_not_simple(lines: list[str], need_command: bool = True) -> str | None:
    """Why the request is not a simple command, or None when it is one.

    Without `need_command`, only the evidence of a structured request counts (a deliverable,
    several lines, many words): a short question a model judged simple may stand.
    """
    if not lines:
        return "the request is empty"
    if len(lines) > 1:
        return f"it has {len(lines)} lines"
    words = len(lines[0].split())
    if words > MAX_SIMPLE_WORDS:
        return f"it has {words} words, more than {MAX_SIMPLE_WORDS}"
    deliverable = deliverable_asked(lines[0])
    if deliverable is not None:
        return f"it asks for a deliverable: {deliverable!r}"
    if need_command and simple_command(lines[0]) is None:
        return (
            "it does not start with a simple command such as list, show or convert, "
            "nor is it a question"
        )
    return None


_NAMES = {
    "T00": (
        "Set up the run",
        "Create the run's db/ and workspace/ folders (one per phase) and its outputs/ folder.",
    ),
    "T02": (
        "Amend the central instructions",
        "Write the confirmed instructions to db/user_instructions.md as ACTIVE rows and mark "
        "the ones they replace SUPERSEDED.",
    ),
    "T03": (
        "Build the knowledge catalog",
        "Scan assets/ and guidelines/ into db/knowledge_base_catalog.md with a summary of each "
        "new or changed file.",
    ),
    "T04": (
        "First analysis",
        "Read the request and every source file and write a first analysis: what each source "
        "holds (headings, figures, key sentences) and what the request needs from it.",
    ),
}


def plan_phase0(context: PlanContext) -> TasksPlan:
    """Tasks T00, T02, T03, T04 of stage P0-S01; T04 also reads every file in assets/."""
    request = request_path(context.run_id)
    assets = folder_files(Path(context.home), "assets")
    outputs = phase0_outputs(context.run_id)
    tasks = []
    for order, task_id in enumerate(PHASE0_TASK_IDS, start=1):
        name, purpose = _NAMES[task_id]
        tasks.append(
            Task(
                task_id=task_id,
                run_id=context.run_id,
                stage_id=PHASE0_STAGE,
                task_name=name,
                task_purpose=purpose,
                related_references=[request, *assets] if task_id == "T04" else [request],
                output_path=outputs[task_id],
                execution_order=order,
            )
        )
    return TasksPlan(tasks=tasks)


# phase_name -> (stage_name, stage_goal) in execution order. Each goal says what the stage
# produces and which later work uses it (SPEC §7.2).
STAGE_SHAPES: dict[str, tuple[tuple[str, str], ...]] = {
    "ANALYZING": (
        (
            "Source fact extraction",
            "Produces one facts file per group of sources (headings, figures with their "
            "context, key sentences); the consolidated analysis of the next stage reads them.",
        ),
        (
            "Consolidated analysis",
            "Produces one analysis summary that merges the per-source facts (themes, compared "
            "figures, open questions); STRATEGIZING builds its assessment on it.",
        ),
    ),
    "STRATEGIZING": (
        (
            "Strategic assessment",
            "Produces a strategy document (strengths, weaknesses, opportunities, threats, "
            "prioritised options, a recommended direction) from the analysis; REFINING_CONTENT "
            "turns it into argued content.",
        ),
    ),
    "REFINING_CONTENT": (
        (
            "Content refinement",
            "Produces refined content blocks (claim, evidence with figures, implication) fusing "
            "analysis and strategy; GENERATING_OUTPUT assembles the deliverable from them.",
        ),
    ),
    "GENERATING_OUTPUT": (
        (
            "Assembly plan",
            "Produces the assembly plan of the deliverable (sections, which block feeds each, "
            "format rules); the publishing stage follows it.",
        ),
        (
            "Publish deliverables",
            "Produces the final deliverables in outputs/<run_id>/ from the assembly plan and the "
            "refined content; the user receives them at completion.",
        ),
    ),
}


def stage_shape(phase: Phase) -> tuple[tuple[str, str], ...]:
    """The stages of a phase; a phase unknown to the template gets one synthesis stage."""
    known = STAGE_SHAPES.get(phase.phase_name)
    if known is not None:
        return known
    purpose = phase.phase_purpose.strip() or f"the work of {phase.phase_name}"
    goal = (
        f"Produces one synthesis document for {phase.phase_name} ({purpose}); the next phase "
        "builds on it."
    )
    return ((f"{phase.phase_name.replace('_', ' ').title()} synthesis", goal),)


def plan_stages(context: PlanContext, phase: Phase) -> StagesPlan:
    """The stages of `phase`, ids `<phase_id>-S01`…, PENDING, in order."""
    shape = stage_shape(phase)
    stages = [
        MajorStage(
            stage_id=stage_id_of(phase.phase_id, order),
            run_id=context.run_id,
            phase_id=phase.phase_id,
            stage_name=name,
            stage_goal=goal.replace("<run_id>", context.run_id),
            execution_order=order,
        )
        for order, (name, goal) in enumerate(shape, start=1)
    ]
    return StagesPlan(stages=stages)


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
    tool_tasks = tool_tasks_of(context.run_id, task.task_id, timing,
                               [(d.tool_type, d.name, d.purpose) for d in drafts])  # fmt: skip
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


log = structlog.get_logger(__name__)


def _checked(target: str, run_id: str, errors: list[str]) -> None:
    """Raise PlanFailed when the builtin's own plan did not pass validation."""
    if errors:
        log.error("plan_invalid", target=target, run_id=run_id, errors=errors)
        raise PlanFailed(target, errors)
    log.info("plan_made", target=target, run_id=run_id, engine="builtin")


QUESTION_LINES = 3  # a request of more lines is no quick question


def question_mode(request: str, home: Path) -> ModeDecision | None:
    """SIMPLE_TASK for a request the heuristic makes a run but whose every question the home's
    tables answer now (a long question, several questions); None otherwise."""
    lines = request_lines(request)
    if not lines or len(lines) > QUESTION_LINES or deliverable_asked(request) is not None:
        return None
    spec = answered_at_once(request, home)
    if spec is None:
        return None
    asked = [q.lookup or q.compute for q in spec.questions]
    tables = sorted({item.file for item in asked if item is not None})
    reason = f"{len(spec.questions)} question(s) the tables answer now ({', '.join(tables)})"
    return ModeDecision(mode=Mode.SIMPLE_TASK, reason=reason)


class BuiltinPlanner:
    """Deterministic offline plans from the phase template, the catalog and the request.

    Given the home, the mode decision also reads the request's questions against its tables.
    """

    def __init__(self, home: Path | None = None) -> None:
        self.home = home

    def decide_mode(
        self, request: str, has_past_runs: bool, pending_ledger: str | None = None
    ) -> ModeDecision:
        """Plan target `mode`, by the documented heuristic of planner.builtin (no model call);
        a question the home's tables answer at once is a SIMPLE_TASK however long it is."""
        decided = decide_mode(request, has_past_runs)
        if decided.mode is Mode.SIMPLE_TASK or self.home is None:
            return decided
        return question_mode(request, self.home) or decided

    def plan_phase0(self, context: PlanContext) -> TasksPlan:
        """Plan target `phase0`: tasks T00, T02, T03, T04 of stage P0-S01."""
        plan = plan_phase0(context)
        _checked("phase0", context.run_id, validate_phase0(plan, context))
        return plan

    def propose(self, context: PlanContext, spec: RequestSpec | None = None) -> Proposal:
        """Plan target `proposal` (revised by `context.modification` on MODIFY): the rendering
        of the rules' spec, or of `spec` when a model read the request."""
        made = proposal.propose(context, guideline_docs(context), spec)
        _checked("proposal", context.run_id, validate_proposal(made, context))
        return made

    def plan_stages(self, context: PlanContext) -> StagesPlan:
        """Plan target `stages:<phase_id>` for `context.phase`."""
        target, phase = context.stages_target()
        plan = plan_stages(context, phase)
        _checked(target, context.run_id, validate_stages(plan, context))
        return plan

    def plan_tasks(self, context: PlanContext) -> TasksPlan:
        """Plan target `tasks:<stage_id>` for `context.stage`."""
        target, stage, phase = context.tasks_target()
        plan = tasks.plan_tasks(context, stage, phase)
        _checked(target, context.run_id, validate_tasks(plan, context))
        return plan

    def plan_tools(self, context: PlanContext, timing: Timing) -> ToolTasksPlan:
        """Plan target `pre_tool:<task_id>` / `post_tool:<task_id>` for `context.task`."""
        target, task = context.tools_target(timing)
        recipes = load_mcps(Path(context.home))
        plan = plan_tools(context, task, timing, recipes)
        _checked(target, context.run_id, validate_tool_tasks(plan, context, timing))
        return plan


__all__ = [
    "MCP_FILE",
    "BuiltinPlanner",
    "charts_said",
    "load_mcps",
    "match_mcp",
    "modifications",
    "read_spec",
    "request_spec",
    "settle_spec",
]
