"""The Orchestrator's decision (SPEC §4): a run's files as plain data (`RunView`), the steps, and
the pure functions that say what comes next (`next_step`) and what a run accepts now
(`accepts`). It reads no file and imports nothing but the kernel's plain data.

The Orchestrator's decision: from a run's files to its one next step (SPEC §4, §6–§9).

Pure: no I/O, no clock. Every branch reads evidence the previous step left in the files, so a
step that finished is never repeated and the one in flight when the daemon died is redone.

Also here: the steps the Orchestrator can take for a run: plain data, decided by `next_step`.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from multiverse.agent_package import POST_TOOLS
from multiverse.models import (
    FINAL_STATUSES,
    PHASE0_ID,
    PHASE0_STAGE,
    MajorStage,
    Phase,
    PlanLevel,
    Status,
    Task,
    Timing,
    ToolTask,
)
from orchestrator.decide.view import (
    CANCELLED,
    HOLD,
    RELEASE,
    USER,
    Acceptance,
    Decision,
    DecisionKind,
    Evidence,
    FailureRecord,
    HoldRecord,
    Mark,
    ReleaseRecord,
    RunView,
    accepts,
    cancel_wanted,
    decode_answer,
    describe,
    hold_name,
    is_user,
    parse_answer,
    parse_decision,
    plan_of,
    plan_reason,
    release_name,
    render_decision,
    user_reason,
)


class StepKind(StrEnum):
    """Every kind of step, in roughly the order a run meets them."""

    WAIT = "WAIT"  # nothing can advance without the user (or a person's fix)
    IDLE = "IDLE"  # the run is final
    PLAN_PHASE0 = "PLAN_PHASE0"
    SET_UP_RUN = "SET_UP_RUN"  # T00
    PROPOSE = "PROPOSE"
    ASK = "ASK"
    HANDLE_RESPONSE = "HANDLE_RESPONSE"
    WRITE_INSTRUCTIONS = "WRITE_INSTRUCTIONS"  # T02
    BUILD_CATALOG = "BUILD_CATALOG"  # T03
    FIRST_ANALYSIS = "FIRST_ANALYSIS"  # T04
    COMPLETE_PHASE0 = "COMPLETE_PHASE0"
    PLAN_STAGES = "PLAN_STAGES"
    PLAN_TASKS = "PLAN_TASKS"
    PLAN_TOOLS = "PLAN_TOOLS"
    EXECUTE_TOOL_TASK = "EXECUTE_TOOL_TASK"
    EXECUTE_TASK = "EXECUTE_TASK"
    COMPLETE_TASK = "COMPLETE_TASK"
    COMPLETE_STAGE = "COMPLETE_STAGE"
    COMPLETE_PHASE = "COMPLETE_PHASE"
    COMPLETE_RUN = "COMPLETE_RUN"
    FAIL_RUN = "FAIL_RUN"
    HANDLE_RETRY = "HANDLE_RETRY"  # an answer to a FAILED run: RETRY is accepted or refused
    REOPEN = "REOPEN"  # a retry: the failed step and the levels above it back to PENDING
    ANSWER_APPROVAL = "ANSWER_APPROVAL"  # APPROVE/DENY in user_response.md for a waiting action
    HOLD = "HOLD"  # a plan is written: the run holds for a person's review (daemon.pause_before)
    ANSWER_HOLD = "ANSWER_HOLD"  # an answer to a held run: RESUME lets it go on, others refused
    CANCEL = "CANCEL"  # CANCEL asked (or a cancel begun before a crash): the run ends CANCELLED


class Step(BaseModel):
    """One step for one run; only the fields its kind needs are set."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: StepKind
    run_id: str
    phase_id: str | None = None
    stage_id: str | None = None
    task_id: str | None = None
    tool_task_id: str | None = None
    timing: Timing | None = None
    revision: int = 0
    decision: Decision | None = None
    reason: str = ""
    # A WAIT that ends by itself (an approval's deadline): look again after this many seconds.
    wake_after: float | None = None

    @property
    def is_work(self) -> bool:
        """Whether performing this step changes anything."""
        return self.kind not in (StepKind.WAIT, StepKind.IDLE)

    def describe(self) -> str:
        """A short human-readable label, for logs and `status`."""
        target = self.tool_task_id or self.task_id or self.stage_id or self.phase_id or ""
        return f"{self.kind.value} {target}".strip()


# The reason of a COMPLETE_TASK whose result asked for POST tool tasks the Executor's card does
# not hand to the Planner: the task completes without them, and the request is logged.
POST_TOOLS_NOT_HANDED_OFF = "post_tool_required: not handed off by the executor's card"

PHASE0_STEPS = (
    ("T02", StepKind.WRITE_INSTRUCTIONS),
    ("T03", StepKind.BUILD_CATALOG),
    ("T04", StepKind.FIRST_ANALYSIS),
)


def next_step(view: RunView) -> Step:
    """The one thing to do next for this run."""
    run_id = view.run_id
    if view.run.status is Status.FAILED:
        return _failed_run(view)
    if view.run.status in FINAL_STATUSES:
        return Step(kind=StepKind.IDLE, run_id=run_id)
    if cancel_wanted(view):  # at any time, before anything else the run could do
        return Step(kind=StepKind.CANCEL, run_id=run_id)
    failed = _failure(view)
    if failed is not None:
        return failed
    tasks = {t.task_id: t for t in view.tasks if t.stage_id == PHASE0_STAGE}
    if not tasks:
        return Step(kind=StepKind.PLAN_PHASE0, run_id=run_id, phase_id=PHASE0_ID)
    if _pending(tasks.get("T00")):
        return _phase0_step(view, StepKind.SET_UP_RUN, "T00")
    if view.run.status is Status.AWAITING_CONFIRMATION:
        return _held_step(view) or _answer_step(view)
    if "confirmed" not in view.evidence:
        return _amendment_step(view)
    waiting = _approval_step(view)
    if waiting is not None:
        return waiting
    if view.holds:  # held, but the run's row does not say so yet (a crash, a rebuilt row)
        return Step(kind=StepKind.HOLD, run_id=run_id, reason=view.holds[0].reason)
    if view.response is not None and view.response.kind is DecisionKind.PAUSE:
        number = view.revisions(f"hold-{USER}") + 1  # each pause holds once, with its own record
        return Step(kind=StepKind.HOLD, run_id=run_id, reason=user_reason(number))
    for task_id, kind in PHASE0_STEPS:
        if _pending(tasks.get(task_id)):
            return _phase0_step(view, kind, task_id)
    phase0 = next((p for p in view.phases if p.phase_id == PHASE0_ID), None)
    if phase0 is None or phase0.status is not Status.COMPLETED or len(view.phases) < 2:
        return Step(kind=StepKind.COMPLETE_PHASE0, run_id=run_id, phase_id=PHASE0_ID)
    return _master_loop(view)


def _answer_step(view: RunView) -> Step:
    """The proposal's question (SPEC §6.5): wait for the answer, or handle it."""
    decision = view.response
    if decision is None:
        return Step(kind=StepKind.WAIT, run_id=view.run_id, reason="waiting for the user's answer")
    if decision.kind is not DecisionKind.RETRY and not accepts(view).takes(decision.kind):
        # Words for other states (RESUME, PAUSE, APPROVE…): refused, the question stays.
        decision = Decision(kind=DecisionKind.INVALID, text=decision.text or decision.kind.value)
    return Step(
        kind=StepKind.HANDLE_RESPONSE,
        run_id=view.run_id,
        revision=view.revisions("proposal"),
        decision=decision,
    )


def _held_step(view: RunView) -> Step | None:
    """A confirmed run that waits for the user is held: wait for RESUME, or take the answer.

    None for the proposal's question, and for a CONFIRM that a crash left unhandled.
    """
    if "confirmed" not in view.evidence:
        return None
    decision = view.response
    if not view.holds:
        if decision is not None and decision.kind is DecisionKind.CONFIRM:
            return None
        # Released before a crash (or never held): the run's row goes back to PENDING.
        return Step(kind=StepKind.ANSWER_HOLD, run_id=view.run_id, decision=decision)
    hold = view.holds[0]
    if decision is None:
        return Step(
            kind=StepKind.WAIT,
            run_id=view.run_id,
            reason=f"held before {describe(hold.reason)}: waiting for RESUME",
        )
    return Step(
        kind=StepKind.ANSWER_HOLD, run_id=view.run_id, decision=decision, reason=hold.reason
    )


def _plan_hold(
    view: RunView, level: PlanLevel, phase_id: str, stage_id: str | None, untouched: bool
) -> Step | None:
    """Hold once before a plan runs, if `daemon.pause_before` names its level.

    Only a plan none of whose work has begun holds, and only once: its hold record stays
    after the release.
    """
    if level not in view.pause_before or not untouched:
        return None
    reason = plan_reason(level, stage_id or phase_id)
    if hold_name(reason) in view.evidence:
        return None
    return Step(
        kind=StepKind.HOLD, run_id=view.run_id, phase_id=phase_id, stage_id=stage_id, reason=reason
    )


def _approval_step(view: RunView) -> Step | None:
    """An action waits for a person's yes: their answer, a WAIT, or (past its deadline) None,
    so that the step is done again and the approver times the request out (a no)."""
    approval = view.approval
    if approval is None:
        return None
    answer = view.response
    if answer is not None and answer.kind in (DecisionKind.APPROVE, DecisionKind.DENY):
        return Step(kind=StepKind.ANSWER_APPROVAL, run_id=view.run_id, reason=answer.kind.value)
    if approval.expired(view.now):
        return None
    return Step(
        kind=StepKind.WAIT,
        run_id=view.run_id,
        task_id=approval.task_id,
        reason=f"waiting for approval {approval.id}: {approval.shown(120)}",
        wake_after=max(0.0, approval.deadline - view.now),
    )


def _failed_run(view: RunView) -> Step:
    """A FAILED run is final unless a retry was asked for (SPEC §8).

    Retry N is asked for by the evidence `retry-N`; it is done once the earlier failure is in
    the history (`failure-N`) and the run is PENDING again. A run that failed again after
    retry N has a new `failure` beside `failure-N`: it stays FAILED until the next RETRY.
    """
    retries = view.revisions("retry")
    reopened = "failure" in view.evidence and f"failure-{retries}" in view.history
    if retries and not reopened:
        return Step(kind=StepKind.REOPEN, run_id=view.run_id, revision=retries)
    if view.response is not None:
        return Step(
            kind=StepKind.HANDLE_RETRY,
            run_id=view.run_id,
            revision=retries + 1,
            decision=view.response,
        )
    return Step(kind=StepKind.IDLE, run_id=view.run_id)


def _pending(task: Task | None) -> bool:
    return task is not None and task.status is Status.PENDING


def _phase0_step(view: RunView, kind: StepKind, task_id: str) -> Step:
    return Step(
        kind=kind, run_id=view.run_id, phase_id=PHASE0_ID, stage_id=PHASE0_STAGE, task_id=task_id
    )


def _failure(view: RunView) -> Step | None:
    """A FAILED row, a failure record or an unreadable run table → fail the run (SPEC §8)."""
    if view.load_error is not None:
        return Step(kind=StepKind.FAIL_RUN, run_id=view.run_id, reason=view.load_error)
    if view.failure is not None:
        return Step(kind=StepKind.FAIL_RUN, run_id=view.run_id, reason=view.failure.error)
    tables: tuple[Sequence[ToolTask | Task | MajorStage | Phase], ...] = (
        view.tool_tasks,
        view.tasks,
        view.stages,
        view.phases,
    )
    for rows in tables:
        for row in rows:
            if row.status is Status.FAILED:
                return Step(
                    kind=StepKind.FAIL_RUN,
                    run_id=view.run_id,
                    reason=f"{row.key} is FAILED in the run's tables",
                )
    return None


def _amendment_step(view: RunView) -> Step:
    """Phase 0 before confirmation: propose (again, after MODIFY), then ask."""
    proposals = view.revisions("proposal")
    wanted = max(view.revisions("modify"), 1)
    if proposals < wanted:
        return Step(kind=StepKind.PROPOSE, run_id=view.run_id, phase_id=PHASE0_ID, revision=wanted)
    return Step(kind=StepKind.ASK, run_id=view.run_id, phase_id=PHASE0_ID, revision=proposals)


def _first_pending(rows: list[Task] | list[ToolTask]) -> Task | ToolTask | None:
    pending = [row for row in rows if row.status is Status.PENDING]
    return min(pending, key=lambda row: row.execution_order, default=None)


def _master_loop(view: RunView) -> Step:
    """SPEC §7: phase → stage → task → PRE tools → core → POST tools → done."""
    run_id = view.run_id
    phases = sorted((p for p in view.phases if p.phase_id != PHASE0_ID), key=lambda p: p.phase_id)
    phase = next((p for p in phases if p.status is Status.PENDING), None)
    if phase is None:
        return Step(kind=StepKind.COMPLETE_RUN, run_id=run_id)
    stages = [s for s in view.stages if s.phase_id == phase.phase_id]
    if not stages:
        return Step(kind=StepKind.PLAN_STAGES, run_id=run_id, phase_id=phase.phase_id)
    untouched = _untouched_stages(view, stages)
    held = _plan_hold(view, "stages", phase.phase_id, None, untouched)
    if held is not None:
        return held
    stage = min(
        (s for s in stages if s.status is Status.PENDING),
        key=lambda s: s.execution_order,
        default=None,
    )
    if stage is None:
        return Step(kind=StepKind.COMPLETE_PHASE, run_id=run_id, phase_id=phase.phase_id)
    where = Step(
        kind=StepKind.PLAN_TASKS, run_id=run_id, phase_id=phase.phase_id, stage_id=stage.stage_id
    )
    tasks = [t for t in view.tasks if t.stage_id == stage.stage_id]
    if not tasks:
        return where
    held = _plan_hold(view, "tasks", phase.phase_id, stage.stage_id, _untouched_tasks(view, tasks))
    if held is not None:
        return held
    task = _first_pending(tasks)
    if task is None:
        return where.model_copy(update={"kind": StepKind.COMPLETE_STAGE})
    assert isinstance(task, Task)
    return _task_step(view, task, where.model_copy(update={"task_id": task.task_id}))


def _untouched_stages(view: RunView, stages: list[MajorStage]) -> bool:
    """No work of these stages has begun: all PENDING, no task planned."""
    ids = {s.stage_id for s in stages}
    return all(s.status is Status.PENDING for s in stages) and not any(
        t.stage_id in ids for t in view.tasks
    )


def _untouched_tasks(view: RunView, tasks: list[Task]) -> bool:
    """No work of these tasks has begun: all PENDING, no tool task planned, no result."""
    ids = {t.task_id for t in tasks}
    return (
        all(t.status is Status.PENDING for t in tasks)
        and not any(t.parent_task_id in ids for t in view.tool_tasks)
        and not ids & view.evidence
    )


def _task_step(view: RunView, task: Task, here: Step) -> Step:
    """The next step inside one task: its PRE tools, the core, its POST tools, completion."""

    def step(kind: StepKind, **extra: object) -> Step:
        return here.model_copy(update={"kind": kind, **extra})

    own = [t for t in view.tool_tasks if t.parent_task_id == task.task_id]
    pre = [t for t in own if t.timing is Timing.PRE]
    post = [t for t in own if t.timing is Timing.POST]
    if task.pre_tool_purpose.strip() and not pre:
        return step(StepKind.PLAN_TOOLS, timing=Timing.PRE)
    tool = _first_pending(pre)
    if tool is not None:
        return step(StepKind.EXECUTE_TOOL_TASK, tool_task_id=tool.key)
    signal = view.signals.get(task.task_id)
    if signal is None:
        return step(StepKind.EXECUTE_TASK)
    if signal.post_tool_required and not post:
        if POST_TOOLS not in view.routes:
            return step(StepKind.COMPLETE_TASK, reason=POST_TOOLS_NOT_HANDED_OFF)
        return step(StepKind.PLAN_TOOLS, timing=Timing.POST)
    tool = _first_pending(post)
    if tool is not None:
        return step(StepKind.EXECUTE_TOOL_TASK, tool_task_id=tool.key)
    return step(StepKind.COMPLETE_TASK)


__all__ = [
    "CANCELLED",
    "HOLD",
    "POST_TOOLS_NOT_HANDED_OFF",
    "RELEASE",
    "USER",
    "Acceptance",
    "Decision",
    "DecisionKind",
    "Evidence",
    "FailureRecord",
    "HoldRecord",
    "Mark",
    "ReleaseRecord",
    "RunView",
    "Step",
    "StepKind",
    "accepts",
    "cancel_wanted",
    "decode_answer",
    "describe",
    "hold_name",
    "is_user",
    "next_step",
    "parse_answer",
    "parse_decision",
    "plan_of",
    "plan_reason",
    "release_name",
    "render_decision",
    "user_reason",
]
