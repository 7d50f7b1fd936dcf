"""A model's answer turned into plan rows: code writes every id, order, path and status.

The list order of an answer is its execution order. Stages get `<phase_id>-S01…`, tasks
`<stage_id>-T01…`, tool tasks `<task_id>-PRE-01…` / `-POST-01…`, all PENDING in the run. A task's
references are the numbered files it chose; each task after the first also reads the previous
task's output (the chain the SPEC asks for, without the model typing a path), and a task left
without any reads the request. A deliverable also reads the original inputs and, when the
request asks for a chart not drawn yet, has it drawn first (planner.model.deliverable).
The validators of planner.validation still check the result.
"""

from __future__ import annotations

from multiverse.contracts import (
    PlanContext,
    Proposal,
    ProposedInstruction,
    StagesPlan,
    TasksPlan,
    ToolTasksPlan,
)
from multiverse.models import (
    MajorStage,
    Phase,
    Task,
    Timing,
    ToolTask,
    stage_id_of,
    task_id_of,
    tool_task_id_of,
)
from planner.model.answers import (
    ProposalAnswer,
    StagesAnswer,
    TasksAnswer,
    ToolTasksAnswer,
)
from planner.model.deliverable import chart_purpose, source_inputs
from planner.model.outputs import output_paths
from planner.model.references import References
from planner.validation import request_path


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
