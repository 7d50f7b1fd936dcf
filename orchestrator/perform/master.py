"""The master control loop's steps (SPEC §7) and completion (SPEC §9).

Also here: A run waiting for a person: holding it for a review of its plan and taking the answer
(RESUME), and the approval bridge's side (SPEC §11): asking, and taking APPROVE or DENY.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

import structlog

from multiverse.home import RunPaths, visible_files
from multiverse.models import PHASE0_STAGE, PUBLISHING_PHASE, MajorStage, Phase, Status, Task
from multiverse.roles import Approval, Message, MessageKind
from multiverse.runs import ApprovalBook, record_answer
from multiverse.store import MAJOR_STAGES, TASKS, Table
from orchestrator.crew import Collaborators
from orchestrator.decide import (
    POST_TOOLS_NOT_HANDED_OFF,
    DecisionKind,
    HoldRecord,
    Mark,
    ReleaseRecord,
    RunView,
    Step,
    describe,
    hold_name,
    is_user,
    plan_of,
    release_name,
)
from orchestrator.evidence import SignalBox, archive_response
from orchestrator.perform.catalog import register
from orchestrator.perform.roles import (
    checked_stage_tasks,
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
    rows = crew.run(view.run_id)
    rows.stages.insert(*checked_stages(plan.stages, view.run_id, step.phase_id))
    # Tasks planned with their stages, after them: stopped between the two, a stage without
    # tasks is planned again on its own (PLAN_TASKS), never a task without its stage.
    if plan.tasks:
        rows.tasks.insert(*checked_stage_tasks(plan.stages, plan.tasks, view.run_id))


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
    """The task's files join the catalog; the task is COMPLETED. POST tool tasks its result
    asked for and the Executor's card does not hand to the Planner are logged, never dropped
    silently."""
    assert step.task_id is not None
    signal = view.signals.get(step.task_id)
    if step.reason == POST_TOOLS_NOT_HANDED_OFF:
        task = next((t for t in view.tasks if t.task_id == step.task_id), None)
        log.warning("handoff_not_on_card", run_id=view.run_id, task_id=step.task_id,
                    role="executor", on="post_tool_required", to="planner",
                    post_tool_purpose=task.post_tool_purpose if task else "")  # fmt: skip
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
    path = paths.phase_workspace(PUBLISHING_PHASE) / DELIVERY_FILE
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




def hold(crew: Collaborators, view: RunView, step: Step) -> None:
    """Record the hold, say once what the run waits for, and show it waiting for the user.

    In this order, so that a crash in between is finished by the same step: the record is
    the hold; the PAUSE that asked for it is set aside; the message and the run's status
    only say so.
    """
    paths = crew.home.run(view.run_id)
    box = SignalBox(paths.signals)
    name = hold_name(step.reason)
    record = box.read(name, HoldRecord)
    if record is None:
        plan = plan_of(step.reason)
        spec = None if plan is None else TASKS if plan[0] == "tasks" else MAJOR_STAGES
        record = HoldRecord(
            reason=step.reason,
            table=crew.home.relative(paths.db / spec.filename) if spec else "",
            since=datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        )
        box.write(name, record)
        log.info("run_held", run_id=view.run_id, reason=step.reason)
    if is_user(record.reason) and _answered(view, DecisionKind.PAUSE):
        archive_response(paths, "pause")
    facts = {"plan": describe(record.reason), "table": record.table, "reason": record.reason}
    crew.speaker.tell(Message(kind=MessageKind.HOLD, run_id=view.run_id, facts=facts), once=name)
    crew.process_runs.compare_and_set(
        view.run_id, Status.PENDING, status=Status.AWAITING_CONFIRMATION
    )


def answer_hold(crew: Collaborators, view: RunView, step: Step) -> None:
    """RESUME releases every open hold and the run goes on; any other answer is refused.

    Release records, then the answer set aside, then the run's row back to PENDING: a crash
    in between is finished by the same step (without an answer, only the row is left to do).
    """
    paths = crew.home.run(view.run_id)
    decision = step.decision
    if decision is not None and decision.kind is not DecisionKind.RESUME:
        text = decision.text or decision.kind.value
        why = (
            "is paused, as you asked"
            if all(is_user(record.reason) for record in view.holds)
            else "holds for your review of its plan"
        )
        crew.speaker.tell(
            Message(
                kind=MessageKind.NOTICE,
                run_id=view.run_id,
                facts={
                    "text": (
                        f"Run `{view.run_id}` {why}, so it takes "
                        f"RESUME (`multiverse resume {view.run_id}`) or CANCEL; the answer "
                        f"was set aside:\n\n> {text}"
                    )
                },
            )
        )
        archive_response(paths, "refused")
        return
    box = SignalBox(paths.signals)
    for record in view.holds:
        name = release_name(record.reason)
        box.write(name, ReleaseRecord(reason=record.reason))
        log.info("run_released", run_id=view.run_id, reason=record.reason)
        crew.speaker.tell(_released(view.run_id, record), once=name)
    if decision is not None:  # before the row changes: a RESUME left behind would end a later hold
        archive_response(paths, "resume")
    crew.process_runs.compare_and_set(
        view.run_id, Status.AWAITING_CONFIRMATION, status=Status.PENDING
    )


def _answered(view: RunView, kind: DecisionKind) -> bool:
    return view.response is not None and view.response.kind is kind


def _released(run_id: str, record: HoldRecord) -> Message:
    if is_user(record.reason):
        text = f"Run `{run_id}` goes on after the pause you asked for."
        return Message(kind=MessageKind.NOTICE, run_id=run_id, facts={"text": text})
    where = f" in `{record.table}`" if record.table else ""
    text = (
        f"Run `{run_id}` goes on, as you asked, with {describe(record.reason)} as it is now{where}."
    )
    return Message(kind=MessageKind.NOTICE, run_id=run_id, facts={"text": text})


def ask_for_approval(crew: Collaborators, approval: Approval) -> None:
    """Tell the user what waits for their yes, how to answer, and until when."""
    minutes = approval.timeout_seconds / 60
    timeout = f"{minutes:g} min" if minutes >= 1 else f"{approval.timeout_seconds:g} s"
    facts = {"action": approval.shown(), "approval_id": approval.id,
             "task_id": approval.task_id, "timeout": timeout}  # fmt: skip
    crew.speaker.tell(Message(kind=MessageKind.APPROVAL_REQUEST, run_id=approval.run_id,
                              facts=facts))  # fmt: skip


def answer_approval(crew: Collaborators, view: RunView, step: Step) -> None:
    """Record the APPROVE/DENY of user_response.md for the waiting action, then set it aside."""
    paths = crew.run(view.run_id).paths
    approve = step.reason == "APPROVE"
    if view.approval is not None:
        answered = ApprovalBook(paths.root).answer(view.approval.id, approve, "user_response.md")
        record_answer(paths.root, answered)
    archive_response(paths, step.reason.lower())
