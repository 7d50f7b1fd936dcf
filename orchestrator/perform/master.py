"""The master control loop's steps (SPEC §7) and completion (SPEC §9)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import structlog

from multiverse.home import RunPaths, visible_files
from multiverse.models import PHASE0_STAGE, MajorStage, Phase, Status, Task
from multiverse.roles import Message, MessageKind
from multiverse.store import Table
from orchestrator.crew import Collaborators
from orchestrator.decide import Mark, RunView, Step
from orchestrator.evidence import SignalBox
from orchestrator.perform.catalog import register
from orchestrator.perform.roles import (
    checked_stages,
    checked_tasks,
    checked_tool_tasks,
    executor_result,
    plan_context,
    task_assignment,
    tool_assignment,
)

log = structlog.get_logger(__name__)


def attend(
    crew: Collaborators, view: RunView, phase: str | None, stage: str | None, task: str | None
) -> None:
    """Record where the run's attention is now (process_runs current_*), if it moved."""
    run = view.run
    if (run.current_phase_id, run.current_stage_id, run.current_task_id) == (phase, stage, task):
        return
    crew.process_runs.update(
        view.run_id, current_phase_id=phase, current_stage_id=stage, current_task_id=task
    )


def plan_stages(crew: Collaborators, view: RunView, step: Step) -> None:
    """The Planner plans the stages of the current phase."""
    attend(crew, view, step.phase_id, None, None)
    context = plan_context(crew, view).model_copy(
        update={"phase": next(p for p in view.phases if p.phase_id == step.phase_id)}
    )
    assert step.phase_id is not None
    plan = crew.planner.plan_stages(context)
    crew.run(view.run_id).stages.insert(*checked_stages(plan.stages, view.run_id, step.phase_id))


def plan_tasks(crew: Collaborators, view: RunView, step: Step) -> None:
    """The Planner plans the tasks of the current stage."""
    assert step.stage_id is not None
    attend(crew, view, step.phase_id, step.stage_id, None)
    context = plan_context(crew, view).model_copy(
        update={
            "phase": next(p for p in view.phases if p.phase_id == step.phase_id),
            "stage": next(s for s in view.stages if s.stage_id == step.stage_id),
        }
    )
    plan = crew.planner.plan_tasks(context)
    crew.run(view.run_id).tasks.insert(*checked_tasks(plan.tasks, view.run_id, step.stage_id))


def plan_tools(crew: Collaborators, view: RunView, step: Step) -> None:
    """The Planner plans PRE or POST tool tasks of the current task."""
    assert step.task_id is not None and step.timing is not None
    attend(crew, view, step.phase_id, step.stage_id, step.task_id)
    task = next(t for t in view.tasks if t.task_id == step.task_id)
    signal = view.signals.get(step.task_id)
    context = plan_context(crew, view).model_copy(
        update={
            "phase": next(p for p in view.phases if p.phase_id == step.phase_id),
            "stage": next(s for s in view.stages if s.stage_id == step.stage_id),
            "task": task,
            "signal_outputs": [item.path for item in signal.outputs] if signal else [],
        }
    )
    plan = crew.planner.plan_tools(context, step.timing)
    tools = checked_tool_tasks(plan.tool_tasks, view.run_id, step.task_id)
    crew.run(view.run_id).tools.insert(*tools)


def execute_tool_task(crew: Collaborators, view: RunView, step: Step) -> None:
    """The Executor runs one tool task; its files join the catalog."""
    assert step.phase_id and step.task_id and step.tool_task_id
    attend(crew, view, step.phase_id, step.stage_id, step.task_id)
    assignment = tool_assignment(crew, view, step.phase_id, step.task_id, step.tool_task_id)
    signal = executor_result(crew, view, step, crew.executor.execute_tool_task(assignment))
    register(crew, view.run_id, step.tool_task_id, signal.outputs)
    crew.run(view.run_id).tools.compare_and_set(
        step.tool_task_id, Status.PENDING, status=Status.COMPLETED
    )


def execute_task(crew: Collaborators, view: RunView, step: Step) -> None:
    """The Executor performs the core task (POST tools may follow)."""
    run_core_task(crew, view, step, post_tools=True)


def run_core_task(crew: Collaborators, view: RunView, step: Step, post_tools: bool) -> None:
    """Perform a core task through the Executor and record it.

    With POST tools to come, the signal is kept as evidence for them; otherwise the task is
    finished in the same step (its files catalogued, then COMPLETED), so the COMPLETED row is
    the evidence and a crash in between only redoes this, the step in flight.
    """
    assert step.phase_id and step.stage_id and step.task_id
    attend(crew, view, step.phase_id, step.stage_id, step.task_id)
    assignment = task_assignment(crew, view, step.phase_id, step.stage_id, step.task_id)
    signal = crew.executor.execute_task(assignment)
    if signal.status == "FAILED" or (post_tools and signal.post_tool_required):
        executor_result(crew, view, step, signal)
        return
    register(crew, view.run_id, step.task_id, signal.outputs)
    finish_task(crew, view, step)


def complete_task(crew: Collaborators, view: RunView, step: Step) -> None:
    """The task's files join the catalog; the task is COMPLETED."""
    assert step.task_id is not None
    signal = view.signals.get(step.task_id)
    if signal is not None:
        register(crew, view.run_id, step.task_id, signal.outputs)
    finish_task(crew, view, step)


def finish_task(crew: Collaborators, view: RunView, step: Step) -> None:
    """Mark the task COMPLETED, and close its stage and phase if it was their last open task.

    Closing needs no role, so it is done in this step rather than in steps of its own, each
    level written at once, in order: task, stage, phase. A crash between two of these writes
    leaves a PENDING stage (or phase) whose work is all COMPLETED, which `next_step` closes
    with a step of its own (COMPLETE_STAGE, COMPLETE_PHASE).
    """
    assert step.task_id is not None
    tables = crew.run(view.run_id)
    tables.tasks.compare_and_set(step.task_id, Status.PENDING, status=Status.COMPLETED)
    if step.stage_id == PHASE0_STAGE or _others_open(
        view.tasks, "stage_id", step.stage_id, step.task_id
    ):
        return
    assert step.stage_id is not None and step.phase_id is not None
    _close(tables.stages, step.stage_id)
    if _others_open(view.stages, "phase_id", step.phase_id, step.stage_id):
        attend(crew, view, step.phase_id, None, None)
        return
    _close(tables.phases, step.phase_id)
    attend(crew, view, None, None, None)


def _close(table: Table[MajorStage] | Table[Phase], key: str) -> None:
    """A stage or phase whose work is done becomes COMPLETED (again after a crash: no change).

    A row already COMPLETED (closed before a crash) stays; one that is FAILED is not closed.
    """
    row = table.get(key)
    if row is not None and row.status is Status.PENDING:
        table.compare_and_set(key, Status.PENDING, status=Status.COMPLETED)


def complete_stage(crew: Collaborators, view: RunView, step: Step) -> None:
    """Every task done: the stage is COMPLETED."""
    assert step.stage_id is not None
    _close(crew.run(view.run_id).stages, step.stage_id)
    attend(crew, view, step.phase_id, None, None)


def complete_phase(crew: Collaborators, view: RunView, step: Step) -> None:
    """Every stage done: the phase is COMPLETED."""
    assert step.phase_id is not None
    _close(crew.run(view.run_id).phases, step.phase_id)
    attend(crew, view, None, None, None)


DELIVERY_FILE = "delivery.json"  # GENERATING_OUTPUT/: what the publishing task did not do
_UNTRACED = {
    "en": "{count} numbers not found in the sources",
    "ko": "출처에서 찾지 못한 숫자 {count}개",
}


def delivery_report(paths: RunPaths) -> tuple[list[str], int]:
    """What the deliverable was asked and did not do, and how many of its numbers no source
    or computed fact holds, as the Executor recorded them when it published ([] and 0 when
    it recorded nothing)."""
    path = paths.phase_workspace("GENERATING_OUTPUT") / DELIVERY_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return [], 0
    except (OSError, ValueError) as error:
        log.warning("delivery_unreadable", run_id=paths.run_id, error=str(error)[:300])
        return [], 0
    if not isinstance(data, dict):
        return [], 0
    lines = data.get("not_done")
    listed = lines if isinstance(lines, list) else []
    shown = [" ".join(line.split()) for line in listed if isinstance(line, str) and line.strip()]
    count = data.get("untraced_numbers")
    untraced = count if isinstance(count, int) and not isinstance(count, bool) else 0
    return shown, max(untraced, 0)


def not_done_lines(paths: RunPaths) -> tuple[list[str], int]:
    """The COMPLETION message's lines of what was not done, the untraced numbers included."""
    lines, untraced = delivery_report(paths)
    if untraced:
        said = _UNTRACED.get(paths.language(), _UNTRACED["en"])
        lines = [*lines, said.format(count=untraced)]
    return lines, untraced


def complete_run(crew: Collaborators, view: RunView, step: Step) -> None:
    """SPEC §9: report the deliverables (and what was asked and not done), then mark the run
    COMPLETED."""
    paths = crew.home.run(view.run_id)
    box = SignalBox(paths.signals)
    if "completion_reported" not in view.evidence:
        deliverables = [crew.home.relative(path) for path in visible_files(paths.outputs)]
        not_done, untraced = not_done_lines(paths)
        facts = {"outputs": crew.home.relative(paths.outputs) + "/"}
        if not_done:
            facts["not_done"] = "\n".join(not_done)
        crew.speaker.tell(
            Message(
                kind=MessageKind.COMPLETION, run_id=view.run_id, facts=facts, items=deliverables
            ),
            once="completion",
        )
        log.info("run_completed", run_id=view.run_id, deliverables=len(deliverables),
                 not_done=not_done, untraced_numbers=untraced)  # fmt: skip
        box.write("completion_reported", Mark())
    crew.process_runs.update(
        view.run_id,
        status=Status.COMPLETED,
        current_phase_id=None,
        current_stage_id=None,
        current_task_id=None,
    )


def _others_open(
    rows: Sequence[Task] | Sequence[MajorStage], by: str, value: str | None, done: str | None
) -> bool:
    """Whether a row other than `done` with `by` == `value` is still PENDING."""
    return any(
        getattr(row, by) == value and row.key != done and row.status is Status.PENDING
        for row in rows
    )
