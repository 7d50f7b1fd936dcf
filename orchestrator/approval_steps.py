"""The Orchestrator's side of the approval bridge (SPEC §11): asking, and taking an answer
written as APPROVE or DENY into user_response.md."""

from __future__ import annotations

from multiverse.approvals import Approval, ApprovalBook, record_answer
from multiverse.contracts import Message, MessageKind
from orchestrator.collaborators import Collaborators
from orchestrator.responses import archive_response
from orchestrator.steps import Step
from orchestrator.view import RunView


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
