"""A model's answer turned into plan rows: code writes every id, order, path and status.

The list order of an answer is its execution order. Stages get `<phase_id>-S01…`, tasks
`<stage_id>-T01…`, tool tasks `<task_id>-PRE-01…` / `-POST-01…`, all PENDING in the run. A task's
references are the numbered files it chose; each task after the first also reads the previous
task's output (the chain the SPEC asks for, without the model typing a path), and a task left
without any reads the request. A deliverable also reads the original inputs and, when the
request asks for a chart not drawn yet, has it drawn first (planner.model.bookkeeping).
The validators of planner.validation still check the result.

Also here: what code adds to a deliverable task of a model's plan, so the memo rests on the
sources; output paths of a model's task plan, made by code (SPEC §7.4).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from multiverse.models import (
    AssetType,
    MajorStage,
    Phase,
    Task,
    Timing,
    ToolTask,
    stage_id_of,
    task_id_of,
    tool_task_id_of,
)
from multiverse.roles import (
    PlanContext,
    Proposal,
    ProposedInstruction,
    StagesPlan,
    TasksPlan,
    ToolTasksPlan,
)
from planner.model.answers import (
    ProposalAnswer,
    StagesAnswer,
    TaskAnswer,
    TasksAnswer,
    ToolTasksAnswer,
)
from planner.model.context import References
from planner.validation import is_publishing_stage, request_path

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


def chart_purpose(context: PlanContext) -> str:
    """The PRE tool purpose of a deliverable, or "" when no chart is asked or one exists."""
    sentence = asked_chart(context.request)
    if sentence is None or drew_chart(context):
        return ""
    return f"Draw the chart the request asks for from the data, before the memo: {sentence}"


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
    marks = deliverable_marks(items, is_publishing_stage(context, stage))
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
    tools = [
        ToolTask(
            tool_task_id=tool_task_id_of(task.task_id, timing.value, order),
            run_id=context.run_id,
            parent_task_id=task.task_id,
            timing=timing,
            tool_type=item.tool_type,
            tool_task_name=item.name,
            tool_task_purpose=item.purpose,
            execution_order=order,
        )
        for order, item in enumerate(answer.tool_tasks, start=1)
    ]
    return ToolTasksPlan(tool_tasks=tools)


def to_proposal(answer: ProposalAnswer) -> Proposal:
    """The proposal, marked as made by a model."""
    instructions = [
        ProposedInstruction(
            instruction_type=item.instruction_type,
            content=item.content,
            justification=item.justification,
            supersedes=list(item.supersedes),
        )
        for item in answer.instructions
    ]
    conflicts = [conflict for conflict in answer.conflicts if conflict]
    return Proposal(
        understanding=answer.understanding,
        instructions=instructions,
        conflicts=conflicts,
        made_offline=False,
    )
