"""Plan validation (SPEC §10.3): every plan is checked before it touches a table.

Each validator returns a list of errors, empty when the plan is valid. An error names the
offending item and says what is allowed, because a model-backed planner feeds the list back to
the model as repair instructions; the builtin planner raises PlanFailed on any.

What CONFIRM froze governs every later plan (SPEC §6a): a task that reads a file the spec
leaves out, asks for its text in another language than the one confirmed, or (a deliverable)
asks for a length far from the one confirmed, is an error the model repairs, as any
validation error is.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from multiverse.documents import is_unread
from multiverse.models import (
    PHASE0_STAGE,
    TASK_ID,
    InstructionStatus,
    MajorStage,
    Phase,
    Status,
    Task,
    Timing,
)
from multiverse.roles import PlanContext, Proposal, StagesPlan, TasksPlan, ToolTasksPlan
from multiverse.spec import RequestSpec, asked_words, languages_asked

# A deliverable's length may differ from the one confirmed by this factor either way (the
# evaluations' ±50 %): beyond it, the task asks for another deliverable.
LENGTH_SLACK = 1.5
# Words before a file's name that say it is kept out, not read ("without x.csv", "x.csv 제외").
_NOT_BEFORE = re.compile(
    r"\b(?:except|excluding|exclude|without|not|never|ignore|ignoring|leave out|leaving out|"
    r"left out|other than|besides)\b[^.;]{0,40}$",
    re.I,
)
_NOT_AFTER = re.compile(r"^[^.;]{0,12}(?:제외|빼고|말고|없이)")


def task_text(task: Task) -> str:
    """Everything a task says of its work: its name, purpose and tool purposes."""
    parts = (task.task_name, task.task_purpose, task.pre_tool_purpose, task.post_tool_purpose)
    return "\n".join(part for part in parts if part.strip())


def _named_to_read(text: str, path: str) -> bool:
    """Whether the text names the file (its path or its file name) other than to keep it out."""
    name = PurePosixPath(path).name
    pattern = rf"(?<![\w.-])(?:{re.escape(path)}|{re.escape(name)})(?![\w-])"
    for match in re.finditer(pattern, text, re.I):
        kept_out = _NOT_BEFORE.search(text[: match.start()]) or _NOT_AFTER.search(
            text[match.end() :]
        )
        if not kept_out:
            return True
    return False


def spec_conflicts(task: Task, spec: RequestSpec, deliverable: bool) -> list[str]:
    """How `task` contradicts the confirmed spec, each as an error the model can act on;
    `deliverable`: the task writes what the user receives (its length is the one confirmed)."""
    errors = []
    label = f"task {task.task_id}"
    left_out = sorted(spec.excluded())
    for path in left_out:
        if path in task.related_references:
            errors.append(
                f"{label} reads {path}, which the confirmed request leaves out; take it out of "
                "the references (use only the confirmed sources)"
            )
        elif _named_to_read(task_text(task), path):
            errors.append(
                f"{label} names {path}, which the confirmed request leaves out; do not use it "
                "or name it"
            )
    text = task_text(task)
    for code in sorted(languages_asked(text) - {spec.language}):
        errors.append(
            f"{label} asks for its text in language {code!r}, but the confirmed language is "
            f"{spec.language!r}; say nothing of the language or use {spec.language!r}"
        )
    asked = asked_words([text]) if deliverable else None
    if asked is not None and spec.length_words:
        low, high = spec.length_words / LENGTH_SLACK, spec.length_words * LENGTH_SLACK
        if not low <= asked <= high:
            errors.append(
                f"{label} asks for about {asked} words, but the confirmed length is about "
                f"{spec.length_words} words; keep to the confirmed length"
            )
    return errors


PHASE0_TASK_IDS = ("T00", "T02", "T03", "T04")
_INSTRUCTION_TYPE = re.compile(r"[A-Z][A-Z0-9_]*")


def phase0_outputs(run_id: str) -> dict[str, str]:
    """The fixed output_path of each Phase 0 task (the Orchestrator relies on them)."""
    return {
        "T00": f"runs/{run_id}/workspace",
        "T02": "db/user_instructions.md",
        "T03": "db/knowledge_base_catalog.md",
        "T04": f"runs/{run_id}/workspace/ANALYZING/first_analysis.md",
    }


def request_path(run_id: str) -> str:
    """The run's request file; written at the run's entry, so always a valid reference."""
    return f"runs/{run_id}/request.md"


# -- paths ------------------------------------------------------------------------------------


def path_shape_problem(path: str) -> str | None:
    """Why `path` is not a clean home-relative path with forward slashes, or None."""
    if not path or path != path.strip():
        return "it must be a non-empty path without surrounding spaces"
    if path.startswith(("/", "~")) or re.match(r"[A-Za-z]:", path):
        return "absolute paths are refused; write it relative to the home, like assets/q3.md"
    if "\\" in path:
        return "use forward slashes, like assets/q3.md"
    if any(ord(char) < 32 or ord(char) == 127 for char in path):
        return "control characters are refused in paths"
    for part in path.split("/"):
        if part in ("", ".", ".."):
            return "'..', '.' and empty segments are refused: the path must stay inside the home"
        if part.startswith("."):
            return "hidden files and folders (names starting with '.') are refused"
    return None


def inside_home(home: Path, path: str) -> bool:
    """Whether `path` resolves (symlinks followed) to a place inside the home."""
    root = home.resolve()
    try:
        return (root / path).resolve().is_relative_to(root)
    except (OSError, ValueError, RuntimeError):  # a symlink loop or an unusable name
        return False


def reference_problem(path: str, context: PlanContext, known: set[str]) -> str | None:
    """Why `path` is not a real reference (catalog entry or existing file), or None."""
    shape = path_shape_problem(path)
    if shape is not None:
        return shape
    home = Path(context.home)
    if not inside_home(home, path):
        return "it resolves outside the home"
    if path in known or (home / path).is_file():
        return None
    return (
        "no such file: a reference must be a file_path of the knowledge catalog or an "
        f"existing file under the home ({_known_hint(context)})"
    )


def _known_hint(context: PlanContext) -> str:
    paths = [entry.file_path for entry in context.catalog]
    if not paths:
        return f"the catalog is empty; the run's request is {request_path(context.run_id)}"
    shown = ", ".join(paths[:6])
    more = f" and {len(paths) - 6} more" if len(paths) > 6 else ""
    return f"known files: {shown}{more}"


# -- shared checks ----------------------------------------------------------------------------


def _check_ids(kind: str, ids: list[str], pattern: str, form: str) -> list[str]:
    errors = [
        f"{kind} id {item!r} is not of the form {form}"
        for item in ids
        if not re.fullmatch(pattern, item)
    ]
    errors += [
        f"{kind} id {item!r} is used {count} times; each id must be unique"
        for item, count in Counter(ids).items()
        if count > 1
    ]
    return errors


def _check_orders(kind: str, pairs: list[tuple[str, int]]) -> list[str]:
    orders = sorted(order for _, order in pairs)
    expected = list(range(1, len(pairs) + 1))
    if orders == expected:
        return []
    listing = ", ".join(f"{item}={order}" for item, order in pairs)
    return [
        f"{kind} execution_order values are {listing}; they must be exactly "
        f"1..{len(pairs)}, each once, without gaps"
    ]


def _check_row(
    kind: str, item: str, run_id: str, status: Status, context: PlanContext
) -> list[str]:
    errors = []
    if run_id != context.run_id:
        errors.append(f"{kind} {item}: run_id {run_id!r} must be {context.run_id!r}")
    if status is not Status.PENDING:
        errors.append(f"{kind} {item}: status {status.value} must be PENDING in a new plan")
    return errors


def _missing(kind: str, what: str) -> list[str]:
    return [f"cannot validate the {kind} plan: the plan context names no {what}"]


# -- phase 0 ----------------------------------------------------------------------------------


def validate_phase0(plan: TasksPlan, context: PlanContext) -> list[str]:
    """Check the Phase 0 plan: exactly T00, T02, T03, T04 of stage P0-S01 with fixed outputs."""
    ids = [task.task_id for task in plan.tasks]
    errors = []
    if sorted(ids) != list(PHASE0_TASK_IDS):
        errors.append(
            f"phase 0 tasks are {', '.join(ids)}; they must be exactly T00, T02, T03, T04 "
            "(there is no T01), each once"
        )
    outputs = phase0_outputs(context.run_id)
    known = {e.file_path for e in context.catalog if not is_unread(e)} | {
        request_path(context.run_id)
    }
    for task in plan.tasks:
        errors += _check_row("task", task.task_id, task.run_id, task.status, context)
        if task.stage_id != PHASE0_STAGE:
            errors.append(f"task {task.task_id}: stage_id {task.stage_id!r} must be P0-S01")
        wanted = outputs.get(task.task_id)
        if wanted is not None and task.output_path != wanted:
            errors.append(f"task {task.task_id}: output_path must be {wanted!r}")
        if wanted is not None and task.execution_order != PHASE0_TASK_IDS.index(task.task_id) + 1:
            errors.append(f"task {task.task_id}: execution_order must follow T00, T02, T03, T04")
        errors += _check_references(task, context, known)
    return errors + _check_orders(
        "phase 0 task", [(t.task_id, t.execution_order) for t in plan.tasks]
    )


def _check_references(task: Task, context: PlanContext, known: set[str]) -> list[str]:
    if not task.related_references:
        return [
            f"task {task.task_id}: related_references is empty; every task needs at least one "
            f"real input file ({_known_hint(context)})"
        ]
    errors = []
    for reference in task.related_references:
        problem = reference_problem(reference, context, known)
        if problem is not None:
            errors.append(f"task {task.task_id}: reference {reference!r} is refused: {problem}")
    return errors


# -- stages -----------------------------------------------------------------------------------


def validate_stages(plan: StagesPlan, context: PlanContext) -> list[str]:
    """Check a stage plan for `context.phase`."""
    phase = context.phase
    if phase is None:
        return _missing("stage", "phase")
    ids = [stage.stage_id for stage in plan.stages]
    errors = _check_ids(
        "stage", ids, re.escape(phase.phase_id) + r"-S\d{2}", f"{phase.phase_id}-S01"
    )
    existing = {stage.stage_id for stage in context.stages}
    for stage in plan.stages:
        errors += _check_row("stage", stage.stage_id, stage.run_id, stage.status, context)
        if stage.phase_id != phase.phase_id:
            errors.append(
                f"stage {stage.stage_id}: phase_id {stage.phase_id!r} must be {phase.phase_id!r}"
            )
        if stage.stage_id in existing:
            errors.append(f"stage {stage.stage_id}: this id already exists in major_stages.md")
        if not stage.stage_goal.strip():
            errors.append(
                f"stage {stage.stage_id}: stage_goal is empty; say what the stage produces "
                "and which later work uses it"
            )
    return errors + _check_orders("stage", [(s.stage_id, s.execution_order) for s in plan.stages])


# -- tasks ------------------------------------------------------------------------------------






@dataclass(frozen=True)
class _TaskRules:
    """What the tasks of one stage may read and write."""

    stage: MajorStage
    folders: list[str]
    known: set[str]
    taken: set[str]
    earlier_ids: set[str]


def _task_rules(context: PlanContext, stage: MajorStage, phase: Phase) -> _TaskRules:
    folders = [f"runs/{context.run_id}/workspace/{phase.phase_name}/"]
    if context.is_publishing(stage):
        folders.append(f"outputs/{context.run_id}/")
    others = [t for t in context.tasks if t.stage_id != stage.stage_id]
    catalog = {entry.file_path for entry in context.catalog}
    return _TaskRules(
        stage=stage,
        folders=folders,
        known=catalog | {request_path(context.run_id)},
        taken=catalog | {t.output_path for t in others},
        earlier_ids={t.task_id for t in others},
    )


def validate_tasks(
    plan: TasksPlan, context: PlanContext, planned: frozenset[str] = frozenset()
) -> list[str]:
    """Check a task plan for `context.stage`: ids, orders, real references, allowed outputs,
    and nothing against the confirmed spec (planner.validation). `planned`: outputs of the tasks of
    earlier stages planned in the same answer, written before these run."""
    stage = context.stage
    if stage is None:
        return _missing("task", "stage")
    phase = context.phase_of(stage)
    if phase is None:
        return _missing("task", f"phase {stage.phase_id} for stage {stage.stage_id}")
    ids = [task.task_id for task in plan.tasks]
    pattern = re.escape(stage.stage_id) + r"-T\d{2}"
    errors = _check_ids("task", ids, pattern, f"{stage.stage_id}-T01")
    rules = _task_rules(context, stage, phase)
    outputs = Counter(task.output_path for task in plan.tasks)
    for task in plan.tasks:
        errors += _check_task(task, context, rules)
        # A task may read what an earlier task of the same plan writes (chained tasks).
        chained = {t.output_path for t in plan.tasks if t.execution_order < task.execution_order}
        errors += _check_references(task, context, rules.known | planned | chained)
        errors += _check_output(task, context, rules, outputs[task.output_path])
        if context.spec is not None:
            published = task.output_path.startswith(f"outputs/{context.run_id}/")
            errors += spec_conflicts(task, context.spec, published)
    return errors + _check_orders("task", [(t.task_id, t.execution_order) for t in plan.tasks])


def validate_phase(plan: StagesPlan, context: PlanContext) -> list[str]:
    """Check a phase planned in one answer: its stages, then each stage's tasks as if planned
    on its own, after the stages before it."""
    errors = validate_stages(plan, context)
    staged = context.model_copy(update={"stages": [*context.stages, *plan.stages]})
    earlier: list[Task] = []
    for stage in plan.stages:
        own = [task for task in plan.tasks if task.stage_id == stage.stage_id]
        if not own:
            errors.append(f"stage {stage.stage_id} has no task; give every stage its tasks")
            continue
        here = staged.model_copy(update={"stage": stage, "tasks": [*context.tasks, *earlier]})
        errors += validate_tasks(TasksPlan(tasks=own), here,
                                 frozenset(task.output_path for task in earlier))  # fmt: skip
        earlier += own
    strays = [t.task_id for t in plan.tasks if t.stage_id not in {s.stage_id for s in plan.stages}]
    return errors + [f"task {task_id} belongs to no stage of the plan" for task_id in strays]


def _check_task(task: Task, context: PlanContext, rules: _TaskRules) -> list[str]:
    errors = _check_row("task", task.task_id, task.run_id, task.status, context)
    if task.stage_id != rules.stage.stage_id:
        errors.append(
            f"task {task.task_id}: stage_id {task.stage_id!r} must be {rules.stage.stage_id!r}"
        )
    if task.task_id in rules.earlier_ids:
        errors.append(f"task {task.task_id}: this id already exists in tasks.md")
    if not task.task_purpose.strip():
        errors.append(f"task {task.task_id}: task_purpose is empty; state one clear action")
    return errors


def _check_output(task: Task, context: PlanContext, rules: _TaskRules, uses: int) -> list[str]:
    path, folders = task.output_path, rules.folders
    allowed = " or ".join(f"a new file inside {folder}" for folder in folders)
    label = f"task {task.task_id}: output_path {path!r}"
    problem = path_shape_problem(path)
    if problem is not None:
        return [f"{label} is refused: {problem}; it must be {allowed}"]
    if not any(path.startswith(folder) and len(path) > len(folder) for folder in folders):
        hint = (
            ""
            if len(folders) > 1
            else " (outputs/ is only for the last stage of GENERATING_OUTPUT)"
        )
        return [f"{label} is outside the allowed folder; it must be {allowed}{hint}"]
    home = Path(context.home)
    if not inside_home(home, path):
        return [f"{label} resolves outside the home; it must be {allowed}"]
    if uses > 1:
        return [
            f"{label} is the output of {uses} tasks of this plan; each task writes its own file"
        ]
    if path in rules.taken or (home / path).exists():
        return [f"{label} already exists or belongs to another task; choose a new file name"]
    return []


# -- tool tasks -------------------------------------------------------------------------------


def validate_tool_tasks(plan: ToolTasksPlan, context: PlanContext, timing: Timing) -> list[str]:
    """Check a PRE or POST tool plan for `context.task`."""
    task = context.task
    if task is None:
        return _missing("tool task", "task")
    prefix = f"{task.task_id}-{timing.value}"
    ids = [tool.tool_task_id for tool in plan.tool_tasks]
    errors = _check_ids("tool task", ids, re.escape(prefix) + r"-\d{2}", f"{prefix}-01")
    if not re.fullmatch(TASK_ID, task.task_id):
        errors.append(f"the parent task id {task.task_id!r} is not a valid task id")
    available = ", ".join(context.tool_types) or "none (the mapping provides no tool types)"
    for tool in plan.tool_tasks:
        label = f"tool task {tool.tool_task_id}"
        errors += _check_row("tool task", tool.tool_task_id, tool.run_id, tool.status, context)
        if tool.parent_task_id != task.task_id:
            errors.append(
                f"{label}: parent_task_id {tool.parent_task_id!r} must be {task.task_id!r}"
            )
        if tool.timing is not timing:
            errors.append(f"{label}: timing {tool.timing.value} must be {timing.value}")
        if tool.tool_type not in context.tool_types:
            errors.append(
                f"{label}: tool_type {tool.tool_type!r} is not available; each tool task names "
                f"exactly one of: {available}"
            )
        if not tool.tool_task_purpose.strip():
            errors.append(f"{label}: tool_task_purpose is empty; say what the tool must do")
    pairs = [(tool.tool_task_id, tool.execution_order) for tool in plan.tool_tasks]
    return errors + _check_orders("tool task", pairs)


# -- proposal ---------------------------------------------------------------------------------


def validate_proposal(proposal: Proposal, context: PlanContext) -> list[str]:
    """Check a proposal: typed, justified instructions that supersede only ACTIVE past ones."""
    errors = []
    if not proposal.understanding.strip():
        errors.append("understanding is empty; restate how the request was understood")
    past = {item.instruction_id: item for item in context.past_instructions}
    active = sorted(i for i, item in past.items() if item.status is InstructionStatus.ACTIVE)
    claimed: Counter[str] = Counter()
    for number, instruction in enumerate(proposal.instructions, start=1):
        label = f"instruction #{number} ({instruction.instruction_type})"
        if not _INSTRUCTION_TYPE.fullmatch(instruction.instruction_type):
            errors.append(
                f"{label}: instruction_type must be an UPPER_CASE word like GOAL, DELIVERABLE, "
                "FORMAT, LANGUAGE"
            )
        if not instruction.justification.strip():
            errors.append(f"{label}: justification is empty; say why this instruction is proposed")
        claimed.update(instruction.supersedes)
        errors += _check_supersedes(label, instruction.supersedes, past, active)
    errors += [
        f"instruction {item} is superseded by {count} proposed instructions; at most one may "
        "supersede it"
        for item, count in claimed.items()
        if count > 1
    ]
    return errors


def _check_supersedes(
    label: str, supersedes: Iterable[str], past: Collection[str], active: list[str]
) -> list[str]:
    allowed = ", ".join(active) or "none (no ACTIVE instruction of an earlier run is known)"
    errors = []
    for item in supersedes:
        if item not in past:
            errors.append(f"{label}: supersedes unknown instruction {item!r}; allowed: {allowed}")
        elif item not in active:
            errors.append(
                f"{label}: supersedes {item}, which is not ACTIVE any more; allowed: {allowed}"
            )
    return errors
