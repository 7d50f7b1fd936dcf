"""A run's state as read from its files: the only input of `next_step`."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from multiverse.approvals import Approval, ApprovalBook
from multiverse.config import PlanLevel
from multiverse.contracts import ResultSignal
from multiverse.errors import TableError
from multiverse.models import FINAL_STATUSES, MajorStage, Phase, ProcessRun, Status, Task, ToolTask
from orchestrator.collaborators import Collaborators
from orchestrator.decisions import Decision, parse_approval
from orchestrator.holds import HoldRecord, open_holds
from orchestrator.responses import read_response
from orchestrator.signals import FailureRecord, SignalBox


@dataclass(frozen=True)
class RunView:
    """Everything `next_step` may look at for one run."""

    run: ProcessRun
    phases: list[Phase] = field(default_factory=list)
    stages: list[MajorStage] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)
    tool_tasks: list[ToolTask] = field(default_factory=list)
    signals: dict[str, ResultSignal] = field(default_factory=dict)
    evidence: frozenset[str] = frozenset()
    history: frozenset[str] = frozenset()  # records set aside by retries (signals/history/)
    response: Decision | None = None
    failure: FailureRecord | None = None
    load_error: str | None = None
    approval: Approval | None = None  # the oldest action waiting for a person's yes
    approval_answer: bool | None = None  # APPROVE (True) or DENY (False) in user_response.md
    now: float = 0.0  # when the view was read (epoch seconds)
    holds: tuple[HoldRecord, ...] = ()  # open holds: the run waits for `multiverse resume`
    pause_before: frozenset[PlanLevel] = frozenset()  # plans a run holds at (daemon config)

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.run.run_id

    def revisions(self, prefix: str) -> int:
        """The highest revision N among evidence names `<prefix>-N` (0 if none)."""
        numbers = [
            int(name[len(prefix) + 1 :])
            for name in self.evidence
            if name.startswith(prefix + "-") and name[len(prefix) + 1 :].isdigit()
        ]
        return max(numbers, default=0)


def load_run_view(
    crew: Collaborators, run: ProcessRun, pause_before: frozenset[PlanLevel] = frozenset()
) -> RunView:
    """Read one run's tables and evidence; a broken run table becomes `load_error`."""
    tables = crew.run(run.run_id)
    paths = tables.paths
    box = SignalBox(paths.signals)
    evidence = frozenset(box.names())
    failure = box.read("failure", FailureRecord) if "failure" in evidence else None
    if run.status is Status.FAILED:
        # A failed run takes one answer, RETRY, and is reopened by steps of its own (§8).
        return RunView(
            run=run,
            evidence=evidence,
            history=frozenset(box.history()),
            failure=failure,
            response=read_response(paths.user_response),
        )
    if run.status in FINAL_STATUSES:
        return RunView(run=run, evidence=evidence, failure=failure)
    try:
        phases = tables.phases.rows()
        stages = tables.stages.rows()
        tasks = tables.tasks.rows()
        tools = tables.tools.rows()
        holds = tuple(open_holds(box, evidence))
    except TableError as error:
        return RunView(run=run, evidence=evidence, failure=failure, load_error=str(error))
    pending = [t.task_id for t in tasks if t.status is Status.PENDING]
    pending += [t.tool_task_id for t in tools if t.status is Status.PENDING]
    signals = {}
    for step_id in pending:
        if step_id in evidence:
            result = box.result(step_id)
            if result is not None:
                signals[step_id] = result
    # Read in every open status: CANCEL and PAUSE are words for a run at any time.
    response = read_response(paths.user_response)
    waiting = ApprovalBook(paths.root).pending()
    approval = waiting[0] if waiting else None
    answer = parse_approval(paths.user_response) if approval is not None else None
    return RunView(
        run=run,
        phases=phases,
        stages=stages,
        tasks=tasks,
        tool_tasks=tools,
        signals=signals,
        evidence=evidence,
        response=response,
        failure=failure,
        approval=approval,
        approval_answer=answer,
        now=time.time(),
        holds=holds,
        pause_before=pause_before,
    )
