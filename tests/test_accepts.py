"""What a run accepts now: one pure function the CLI and the daemon both ask."""

from __future__ import annotations

from typing import Any

import pytest

from multiverse.models import ProcessRun, Status, Task
from multiverse.roles import Approval
from orchestrator.decide import (
    Decision,
    DecisionKind,
    HoldRecord,
    RunView,
    StepKind,
    accepts,
    next_step,
)

RUN = "run-20261121-101500-001"
K = DecisionKind
ANSWERS = (K.CONFIRM, K.MODIFY, K.CANCEL, K.PAUSE, K.RESUME, K.RETRY, K.APPROVE, K.DENY)
APPROVAL = Approval(
    id="a1", run_id=RUN, task_id="P1-S01-T01", tool="run_shell_command",
    arguments={"command": "ls"}, action_hash="h", requested_at=0.0, timeout_seconds=600,
)  # fmt: skip


def _view(status: Status, **fields: Any) -> RunView:
    return RunView(run=ProcessRun(run_id=RUN, user_request="memo", status=status), **fields)


CASES = {
    "proposal": (_view(Status.AWAITING_CONFIRMATION), {K.CONFIRM, K.MODIFY, K.CANCEL}),
    "held": (
        _view(
            Status.AWAITING_CONFIRMATION,
            evidence=frozenset({"confirmed", "hold-plan-tasks-P1-S01"}),
            holds=(HoldRecord(reason="plan:tasks:P1-S01"),),
        ),
        {K.CANCEL, K.RESUME},
    ),
    "running": (_view(Status.PENDING, evidence=frozenset({"confirmed"})), {K.CANCEL, K.PAUSE}),
    "approval": (
        _view(Status.PENDING, evidence=frozenset({"confirmed"}), approval=APPROVAL),
        {K.CANCEL, K.APPROVE, K.DENY},
    ),
    "cancelling": (
        _view(
            Status.PENDING,
            evidence=frozenset({"confirmed"}),
            response=Decision(kind=K.CANCEL),
        ),
        {K.CANCEL},
    ),
    "failed": (_view(Status.FAILED), {K.RETRY}),
    "completed": (_view(Status.COMPLETED), set()),
    "cancelled": (_view(Status.CANCELLED), set()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_state_takes_exactly_its_answers(case: str) -> None:
    """Every answer word is taken or refused with a reason naming the run, in every state."""
    view, taken = CASES[case]
    acceptance = accepts(view)
    assert {kind for kind in ANSWERS if acceptance.takes(kind)} == taken
    for kind in set(ANSWERS) - taken:
        assert acceptance.why_not(kind).startswith(f"run {RUN} "), kind
    assert not acceptance.takes(K.INVALID)


def test_the_reasons_say_what_to_do() -> None:
    """A refusal says why in the words the CLI prints (and names the command that helps)."""
    held = accepts(CASES["held"][0])
    assert "`multiverse resume" in held.why_not(K.CONFIRM)
    assert "is held already" in held.why_not(K.PAUSE)
    assert "nothing to cancel" in accepts(CASES["completed"][0]).why_not(K.CANCEL)
    assert "only a FAILED run can be retried" in accepts(CASES["running"][0]).why_not(K.RETRY)
    assert "is being cancelled" in accepts(CASES["cancelling"][0]).why_not(K.PAUSE)
    assert "approve|deny" in accepts(CASES["approval"][0]).why_not(K.PAUSE)


PHASE0_STARTED = [
    Task(task_id="T00", run_id=RUN, stage_id="P0-S01", task_name="T00",
         output_path="x.md", execution_order=1, status=Status.COMPLETED),
    Task(task_id="T02", run_id=RUN, stage_id="P0-S01", task_name="T02",
         output_path="x.md", execution_order=2, status=Status.PENDING),
]  # fmt: skip


@pytest.mark.parametrize("kind", [K.RESUME, K.PAUSE, K.APPROVE, K.DENY])
def test_the_daemon_refuses_at_the_proposal_what_the_run_does_not_take(kind: K) -> None:
    """An answer the proposal does not take is handled as a refusal, with the word as its text."""
    view = _view(
        Status.AWAITING_CONFIRMATION,
        evidence=frozenset({"proposal-1"}),
        response=Decision(kind=kind),
        tasks=PHASE0_STARTED,
    )
    assert not accepts(view).takes(kind)
    step = next_step(view)
    assert step.kind is StepKind.HANDLE_RESPONSE
    assert step.decision == Decision(kind=K.INVALID, text=kind.value)
