"""What a run accepts now (SPEC §6.5, §8, §11, §13): each answer word, taken or refused with the
reason, from the run's state alone (pure).

The CLI refuses an answer before writing it, and the daemon treats an answer the run does not
take as a refusal; both ask this one function, so they never disagree.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from multiverse.models import FINAL_STATUSES, Status
from orchestrator.decide.answers import DecisionKind
from orchestrator.decide.view import CANCELLED, RunView


class Acceptance(BaseModel):
    """The answers a run refuses now, each with why; every other answer is taken."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    run_id: str
    refused: dict[DecisionKind, str]

    def takes(self, kind: DecisionKind) -> bool:
        """Whether the run takes this answer now."""
        return kind is not DecisionKind.INVALID and kind not in self.refused

    def why_not(self, kind: DecisionKind) -> str:
        """The sentence that refuses this answer: `run <id> is COMPLETED already: …`."""
        return f"run {self.run_id} {self.refused.get(kind, 'does not take that answer')}"


def accepts(view: RunView) -> Acceptance:
    """Which answers the run takes now, and why it refuses the others."""
    run_id, status = view.run_id, view.run.status
    final = status in FINAL_STATUSES
    held = bool(view.holds) and not final
    refused: dict[DecisionKind, str] = {}
    if status is not Status.AWAITING_CONFIRMATION:
        proposal = f"is not waiting for an answer (it is {status.value})"
    elif held:
        proposal = (
            f"holds for a review of its plan: `multiverse resume {run_id}` lets it go on "
            f"(or `multiverse cancel {run_id}`)"
        )
    else:
        proposal = ""
    if proposal:
        refused[DecisionKind.CONFIRM] = refused[DecisionKind.MODIFY] = proposal
    if final:
        refused[DecisionKind.CANCEL] = f"is {status.value} already: nothing to cancel"
    if not held:
        refused[DecisionKind.RESUME] = f"is not held (it is {status.value}): nothing to resume"
    pause = _pause_refusal(view, final, held)
    if pause:
        refused[DecisionKind.PAUSE] = pause
    if status is not Status.FAILED:
        refused[DecisionKind.RETRY] = (
            f"is {status.value}: only a FAILED run can be retried"
        )
    if view.approval is None or final:
        refused[DecisionKind.APPROVE] = refused[DecisionKind.DENY] = (
            "is not waiting for an approval"
        )
    return Acceptance(run_id=run_id, refused=refused)


def _pause_refusal(view: RunView, final: bool, held: bool) -> str:
    """Why the run cannot be paused now ("" when it can)."""
    if final:
        return f"is {view.run.status.value} already: nothing to pause"
    if held:
        return f"is held already: `multiverse resume {view.run_id}` lets it go on"
    if view.run.status is Status.AWAITING_CONFIRMATION or "confirmed" not in view.evidence:
        return "waits for your answer to its proposal (or is preparing it): nothing runs until then"
    if view.approval is not None:
        return f"waits for your approval already: `multiverse approve|deny {view.run_id}`"
    if cancel_wanted(view):
        return "is being cancelled"
    return ""


def cancel_wanted(view: RunView) -> bool:
    """Whether the run is to be cancelled: CANCEL answered, or a cancel begun (pure)."""
    if view.run.status in FINAL_STATUSES:
        return False
    answer = view.response
    return CANCELLED in view.evidence or (answer is not None and answer.kind is DecisionKind.CANCEL)
