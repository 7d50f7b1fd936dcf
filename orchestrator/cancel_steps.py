"""Cancelling a run at any time (SPEC §3.4, §13): `multiverse cancel RUN` or CANCEL in
runs/<run_id>/user_response.md.

The run's row becomes CANCELLED with its `current_*` cleared; the run tables (phases, stages,
tasks, tool tasks) keep their rows as they were (CANCELLED is a status of process_runs only).
The `cancelled` signal is written first: once it exists the run is being cancelled, whatever
the answer file says, so a crash anywhere in between is finished by the next decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import structlog

from multiverse.contracts import Message, MessageKind
from multiverse.models import FINAL_STATUSES, MajorStage, Phase, Status, Task, ToolTask
from orchestrator.collaborators import Collaborators
from orchestrator.decisions import DecisionKind
from orchestrator.responses import archive_response
from orchestrator.signals import Evidence, SignalBox
from orchestrator.steps import Step
from orchestrator.view import RunView

log = structlog.get_logger(__name__)
CANCELLED = "cancelled"  # the evidence name: the cancel was decided


class CancelRecord(Evidence):
    """The person cancelled the run; what had finished by then, in words."""

    finished: str = ""
    since: str = ""  # UTC, for people


def cancel_wanted(view: RunView) -> bool:
    """Whether the run is to be cancelled: CANCEL answered, or a cancel begun (pure)."""
    if view.run.status in FINAL_STATUSES:
        return False
    answer = view.response
    return CANCELLED in view.evidence or (answer is not None and answer.kind is DecisionKind.CANCEL)


def finished_summary(view: RunView) -> str:
    """What had finished when the run was cancelled: `phases 1 of 5, tasks 7 of 12` (pure)."""
    if "confirmed" not in view.evidence:
        return "nothing (the proposal was not confirmed)"
    tables: tuple[tuple[str, Sequence[Phase | MajorStage | Task | ToolTask]], ...] = (
        ("phases", view.phases),
        ("stages", view.stages),
        ("tasks", view.tasks),
        ("tool tasks", view.tool_tasks),
    )
    parts = [
        f"{label} {sum(row.status is Status.COMPLETED for row in rows)} of {len(rows)}"
        for label, rows in tables
        if rows
    ]
    return ", ".join(parts) if parts else "nothing"


def cancel(crew: Collaborators, view: RunView, step: Step) -> None:
    """Record the cancel, say it once with what had finished, set the row CANCELLED.

    In this order: the record (the decision), the answer set aside, the message, the row.
    A crash in between is finished by the same step, which the record asks for again.
    """
    run_id = view.run_id
    paths = crew.home.run(run_id)
    box = SignalBox(paths.signals)
    record = box.read(CANCELLED, CancelRecord)
    if record is None:
        record = CancelRecord(
            finished=finished_summary(view),
            since=datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        )
        box.write(CANCELLED, record)
        log.info("run_cancel_recorded", run_id=run_id, status=view.run.status.value)
    if view.response is not None and view.response.kind is DecisionKind.CANCEL:
        archive_response(paths, "cancel")
    crew.speaker.tell(
        Message(kind=MessageKind.CANCELLED, run_id=run_id, facts={"finished": record.finished}),
        once=CANCELLED,
    )
    crew.process_runs.compare_and_set(
        run_id,
        view.run.status,
        status=Status.CANCELLED,
        current_phase_id=None,
        current_stage_id=None,
        current_task_id=None,
    )
    log.info("run_cancelled", run_id=run_id)
