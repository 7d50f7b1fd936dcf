"""What the model answers for each plan target: only what needs judgement (SPEC §10.3).

Ids, orders, run ids, statuses, timings and output paths are the code's (the bookkeeping below),
so a model never types them. Each answer model ignores unknown keys (a model that still sends a
task_id or an output_path is not refused, and its values are not used), while the JSON schema
sent to the provider says `additionalProperties: false`. A field whose values come from a list of
the call (references, tool types) is an enum built per call: a value outside it
cannot be decoded when the provider follows the schema, and is refused with a message naming it
when the provider ignores the schema.

Also here: A model's answer turned into plan rows: code writes every id, order, path and status.

The list order of an answer is its execution order. Stages get `<phase_id>-S01…`, tasks
`<stage_id>-T01…`, tool tasks `<task_id>-PRE-01…` / `-POST-01…`, all PENDING in the run. A task's
references are the numbered files it chose; each task after the first also reads the previous
task's output (the chain the SPEC asks for, without the model typing a path), and a task left
without any reads the request. A deliverable also reads the original inputs and, when the
request asks for a chart not drawn yet, has it drawn first (below).
The validators of planner.validation still check the result.

Also here: what code adds to a deliverable task of a model's plan, so the memo rests on the
sources; output paths of a model's task plan, made by code (SPEC §7.4).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from types import GenericAlias
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
    create_model,
)

from multiverse.models import (
    AssetType,
    MajorStage,
    Phase,
    Task,
    Timing,
    stage_id_of,
    task_id_of,
    tool_tasks_of,
)
from multiverse.roles import (
    PlanContext,
    StagesPlan,
    TasksPlan,
    ToolTasksPlan,
)
from planner.model.context import References
from planner.validation import request_path

MAX_STAGES = 8
MAX_TASKS = 12
MAX_TOOL_TASKS = 8

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
"""A text the model must write."""
Note = Annotated[str, StringConstraints(strip_whitespace=True)]
"""A text the model may leave empty."""


class Answer(BaseModel):
    """Base of a model's answer: unknown keys are ignored, and the schema forbids them."""

    model_config = ConfigDict(
        extra="ignore", frozen=True, json_schema_extra={"additionalProperties": False}
    )


class StageAnswer(Answer):
    """One stage: what it is called and what it produces for later work."""

    name: Text
    goal: Text


class StagesAnswer(Answer):
    """Answer to `stages:<phase_id>`, in execution order."""

    stages: list[StageAnswer] = Field(min_length=1, max_length=MAX_STAGES)


class TaskAnswer(Answer):
    """One task; `references` are numbers of the call's list (an enum per call)."""

    name: Text
    purpose: Text
    references: list[int] = Field(default_factory=list)
    file_name: Note = ""
    pre_tool_purpose: Note = ""
    post_tool_purpose: Note = ""


class TasksAnswer(Answer):
    """Answer to `tasks:<stage_id>`, in execution order."""

    tasks: list[TaskAnswer] = Field(min_length=1, max_length=MAX_TASKS)


class ToolTaskAnswer(Answer):
    """One tool task; `tool_type` is one of the mapping's (an enum per call)."""

    tool_type: str
    name: Text
    purpose: Text


class ToolTasksAnswer(Answer):
    """Answer to `pre_tool:<task_id>` / `post_tool:<task_id>`, in execution order."""

    tool_tasks: list[ToolTaskAnswer] = Field(min_length=1, max_length=MAX_TOOL_TASKS)


def choice(allowed: Sequence[Any], what: str, coerce: Callable[[Any], Any] | None = None) -> Any:
    """A type taking only `allowed` values: an enum in the schema, a named refusal otherwise."""
    values = list(allowed)
    kind = "integer" if all(isinstance(value, int) for value in values) else "string"
    listing = ", ".join(str(value) for value in values)

    def check(value: Any) -> Any:
        value = coerce(value) if coerce is not None else value
        if value not in values:
            raise ValueError(f"{what} {value!r} is not allowed; use one of: {listing}")
        return value

    return Annotated[
        Literal[tuple(values)],
        BeforeValidator(check),
        WithJsonSchema({"type": kind, "enum": values}),
    ]


def list_of(item: Any) -> Any:
    """The type `list[item]` of a type built at run time."""
    return GenericAlias(list, (item,))


def reference_number(paths: Sequence[str]) -> Callable[[Any], Any]:
    """Reads `"2"` as 2, and a listed path as its number (a model ignoring the schema)."""
    numbers = {path: number for number, path in enumerate(paths, start=1)}

    def coerce(value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            return int(text) if text.isdigit() else numbers.get(text, value)
        return value

    return coerce


def _task_item(references: Sequence[str], publishing: bool) -> type[TaskAnswer]:
    """One task of an answer: references are numbers 1..len(references)."""
    numbers = range(1, len(references) + 1)
    reference = choice(numbers, "reference", reference_number(references))
    fields: dict[str, Any] = {"references": (list_of(reference), Field(default_factory=list))}
    if publishing:
        # Only the publishing stage may hand files to the user.
        fields["deliverable"] = (bool, False)
    return create_model("TaskAnswer", __base__=TaskAnswer, **fields)


def tasks_answer(references: Sequence[str], publishing: bool) -> type[TasksAnswer]:
    """The answer model of one tasks call: references are numbers 1..len(references)."""
    return create_model(
        "TasksAnswer",
        __base__=TasksAnswer,
        tasks=(list_of(_task_item(references, publishing)), Field(min_length=1,
                                                                   max_length=MAX_TASKS)),
    )


class PhaseStageAnswer(StageAnswer):
    """One stage of a phase planned in one answer, with its tasks."""

    tasks: list[TaskAnswer] = Field(min_length=1, max_length=MAX_TASKS)


class PhaseAnswer(Answer):
    """Answer to `stages:<phase_id>` when the stages' tasks are planned with them."""

    stages: list[PhaseStageAnswer] = Field(min_length=1, max_length=MAX_STAGES)


def phase_answer(references: Sequence[str]) -> type[PhaseAnswer]:
    """The answer model of a phase's one call: its stages, each with its tasks (never the
    publishing stage's: that phase plans its tasks stage by stage)."""
    item = _task_item(references, publishing=False)
    stage = create_model(
        "PhaseStageAnswer",
        __base__=PhaseStageAnswer,
        tasks=(list_of(item), Field(min_length=1, max_length=MAX_TASKS)),
    )
    return create_model(
        "PhaseAnswer",
        __base__=PhaseAnswer,
        stages=(list_of(stage), Field(min_length=1, max_length=MAX_STAGES)),
    )


def tool_tasks_answer(tool_types: Sequence[str]) -> type[ToolTasksAnswer]:
    """The answer model of one tools call: tool_type is one of `tool_types`."""
    item = create_model(
        "ToolTaskAnswer", __base__=ToolTaskAnswer, tool_type=(choice(tool_types, "tool_type"), ...)
    )
    return create_model(
        "ToolTasksAnswer",
        __base__=ToolTasksAnswer,
        tool_tasks=(list_of(item), Field(min_length=1, max_length=MAX_TOOL_TASKS)),
    )


SOURCE_LIMIT = 3
_CHART = re.compile(r"\b(chart|graph|plot|visuali[sz]ation|diagram)s?\b|차트|그래프|도표", re.I)


def asked_chart(request: str) -> str | None:
    """The sentence of the request that asks for a chart, else None."""
    for sentence in re.split(r"(?<=[.!?。])\s+|\n+", request):
        if _CHART.search(sentence):
            return " ".join(sentence.split())
    return None


def drew_chart(context: PlanContext) -> bool:
    """Whether a tool of this run already drew a chart (a TOOL_OUTPUT page in the catalog)."""
    return any(
        entry.run_id == context.run_id
        and entry.asset_type is AssetType.TOOL_OUTPUT
        and entry.file_path.endswith((".html", ".svg"))
        for entry in context.catalog
    )


def source_inputs(context: PlanContext, ranked: list[str]) -> list[str]:
    """The run's original inputs among `ranked` (most relevant first), at most SOURCE_LIMIT."""
    inputs = {
        entry.file_path
        for entry in context.catalog
        if entry.asset_type is AssetType.ORIGINAL_INPUT and entry.run_id is None
    }
    return [path for path in ranked if path in inputs][:SOURCE_LIMIT]


# How a deliverable's PRE purpose that draws the charts asked begins (code writes it).
DRAW_CHARTS = "Draw the chart"


def chart_tools(context: PlanContext, task: Task, timing: Timing) -> ToolTasksPlan | None:
    """The tool tasks of a purpose code wrote to draw the charts asked: one data_visualization
    (no call, no recipe of the request's other words); None for any other purpose."""
    purpose = task.pre_tool_purpose if timing is Timing.PRE else task.post_tool_purpose
    if not purpose.startswith(DRAW_CHARTS) or "data_visualization" not in context.tool_types:
        return None
    drafts = [("data_visualization", "Charts asked for", purpose)]
    return ToolTasksPlan(tool_tasks=tool_tasks_of(context.run_id, task.task_id, timing, drafts))


def chart_purpose(context: PlanContext) -> str:
    """The PRE tool purpose of a deliverable, or "" when no chart is asked or one exists: the
    confirmed spec's drawable charts (drawn by code from the spec), else the request's words."""
    if drew_chart(context):
        return ""
    spec = context.spec
    titles = [chart.title for chart in spec.charts if chart.drawable] if spec is not None else []
    if titles:
        listed = "; ".join(titles)
        return f"{DRAW_CHARTS}s the confirmed request asks for, before the memo: {listed}"
    sentence = asked_chart(context.request)
    if sentence is None:
        return ""
    return f"{DRAW_CHARTS} the request asks for from the data, before the memo: {sentence}"


def with_charts(plan: TasksPlan, context: PlanContext) -> TasksPlan:
    """A plan whose deliverable has the charts asked drawn first (a PRE tool task), when
    nothing else of the plan draws them."""
    purpose = chart_purpose(context)
    published = f"outputs/{context.run_id}/"
    if not purpose or any(t.pre_tool_purpose or t.post_tool_purpose for t in plan.tasks):
        return plan
    tasks = [t.model_copy(update={"pre_tool_purpose": purpose})
             if t.output_path.startswith(published) else t for t in plan.tasks]  # fmt: skip
    return plan.model_copy(update={"tasks": tasks})


SAFE_SUFFIXES = frozenset({"md", "txt", "csv", "json", "html", "svg", "yaml", "yml"})
DEFAULT_SUFFIX = "md"
STEM_LIMIT = 60


def file_slug(suggested: str, name: str, number: int) -> str:
    """A safe file name from the model's suggestion, else the task's name: `words_joined.md`."""
    base = (suggested.strip() or name).replace("\\", "/").rsplit("/", 1)[-1]
    stem, dot, suffix = base.rpartition(".")
    if not dot or suffix.lower() not in SAFE_SUFFIXES:
        stem, suffix = base, DEFAULT_SUFFIX
    # Word characters only: no dots, slashes or spaces can reach a path (Hangul stays).
    words = re.findall(r"[^\W_]+", stem.casefold())
    slug = "_".join(words)[:STEM_LIMIT].strip("_") or f"task_{number:02d}"
    return f"{slug}.{suffix.lower()}"


def free_path(folder: str, file_name: str, taken: set[str], home: Path) -> str:
    """`folder/file_name`, or a numbered variant when that path is taken or exists."""
    stem, _, suffix = file_name.rpartition(".")
    candidate, number = f"{folder}/{file_name}", 1
    while candidate in taken or (home / candidate).exists():
        number += 1
        candidate = f"{folder}/{stem}_{number}.{suffix}"
    return candidate


def deliverable_marks(items: Sequence[TaskAnswer], publishing: bool) -> list[bool]:
    """Which tasks publish to outputs/: the marked ones of a publishing stage, else its last."""
    if not publishing:
        return [False] * len(items)
    marks = [bool(getattr(item, "deliverable", False)) for item in items]
    if not any(marks):
        marks[-1] = True
    return marks


def output_paths(
    context: PlanContext, stage: MajorStage, phase: Phase, items: Sequence[TaskAnswer]
) -> list[str]:
    """One new, allowed output path per task of the answer, in order."""
    workspace = f"runs/{context.run_id}/workspace/{phase.phase_name}"
    published = f"outputs/{context.run_id}"
    # The rows of this stage are what the plan replaces, so their paths are free again.
    taken = {entry.file_path for entry in context.catalog} | {
        task.output_path for task in context.tasks if task.stage_id != stage.stage_id
    }
    home = Path(context.home)
    marks = deliverable_marks(items, context.is_publishing(stage))
    paths = []
    for number, (item, deliverable) in enumerate(zip(items, marks, strict=True), start=1):
        folder = published if deliverable else workspace
        path = free_path(folder, file_slug(item.file_name, item.name, number), taken, home)
        taken.add(path)
        paths.append(path)
    return paths


def to_stages(answer: StagesAnswer, context: PlanContext, phase: Phase) -> StagesPlan:
    """The stage rows of `phase`, numbered in the answer's order."""
    stages = [
        MajorStage(
            stage_id=stage_id_of(phase.phase_id, order),
            run_id=context.run_id,
            phase_id=phase.phase_id,
            stage_name=item.name,
            stage_goal=item.goal,
            execution_order=order,
        )
        for order, item in enumerate(answer.stages, start=1)
    ]
    return StagesPlan(stages=stages)


def to_phase(
    answer: PhaseAnswer, context: PlanContext, phase: Phase, references: References
) -> StagesPlan:
    """The stage rows of `phase` and their task rows, made as `to_stages` and `to_tasks` make
    them; a stage's first task also reads what the stage before it wrote last."""
    stages = to_stages(StagesAnswer(stages=list(answer.stages)), context, phase).stages
    staged = context.model_copy(update={"stages": [*context.stages, *stages]})
    tasks: list[Task] = []
    for stage, item in zip(stages, answer.stages, strict=True):
        here = staged.model_copy(update={"stage": stage, "tasks": [*context.tasks, *tasks]})
        made = to_tasks(TasksAnswer(tasks=item.tasks), here, stage, phase, references).tasks
        if tasks:
            first = made[0]
            # A first task that chose nothing read the request only for want of anything else.
            chosen = first.related_references if item.tasks[0].references else []
            read = list(dict.fromkeys([tasks[-1].output_path, *chosen]))
            made[0] = first.model_copy(update={"related_references": read})
        tasks += made
    return StagesPlan(stages=stages, tasks=tasks)


def to_tasks(
    answer: TasksAnswer,
    context: PlanContext,
    stage: MajorStage,
    phase: Phase,
    references: References,
) -> TasksPlan:
    """The task rows of `stage`, chained, with code-made output paths."""
    outputs = output_paths(context, stage, phase, answer.tasks)
    sources = source_inputs(context, references.paths)
    chart = chart_purpose(context)
    tasks: list[Task] = []
    for order, (item, output) in enumerate(zip(answer.tasks, outputs, strict=True), start=1):
        chosen = [references.path(number) for number in item.references]
        if tasks:
            chosen.insert(0, tasks[-1].output_path)
        pre_tool = item.pre_tool_purpose
        if output.startswith(f"outputs/{context.run_id}/"):
            chosen += sources
            pre_tool, chart = pre_tool or chart, ""
        tasks.append(
            Task(
                task_id=task_id_of(stage.stage_id, order),
                run_id=context.run_id,
                stage_id=stage.stage_id,
                task_name=item.name,
                task_purpose=item.purpose,
                related_references=list(dict.fromkeys(chosen)) or [request_path(context.run_id)],
                output_path=output,
                pre_tool_purpose=pre_tool,
                post_tool_purpose=item.post_tool_purpose,
                execution_order=order,
            )
        )
    return TasksPlan(tasks=tasks)


def to_tool_tasks(
    answer: ToolTasksAnswer, context: PlanContext, task: Task, timing: Timing
) -> ToolTasksPlan:
    """The PRE or POST tool task rows of `task`, numbered in the answer's order."""
    drafts = [(item.tool_type, item.name, item.purpose) for item in answer.tool_tasks]
    return ToolTasksPlan(tool_tasks=tool_tasks_of(context.run_id, task.task_id, timing, drafts))


