"""A run waiting for a person: holding it for a review of its plan and taking the answer (RESUME),
and the approval bridge's side (SPEC §11): asking, and taking APPROVE or DENY.
"""

from __future__ import annotations

from datetime import UTC, datetime

import structlog

from multiverse.models import Status
from multiverse.roles import Approval, Message, MessageKind
from multiverse.runs import ApprovalBook, record_answer
from multiverse.store import MAJOR_STAGES, TASKS
from orchestrator.crew import Collaborators
from orchestrator.decide import (
    DecisionKind,
    HoldRecord,
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

log = structlog.get_logger(__name__)


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
