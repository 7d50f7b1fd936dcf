"""How a run ends early: fail-fast (SPEC §8: identify, record at every level, report, halt) and
cancelling at any time (SPEC §3.4, §13).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import structlog

from multiverse.errors import TableError
from multiverse.models import MajorStage, Phase, Status, Task, ToolTask
from multiverse.roles import Message, MessageKind
from orchestrator.crew import Collaborators
from orchestrator.decide import (
    CANCELLED,
    DecisionKind,
    Evidence,
    FailureRecord,
    Mark,
    RunView,
    Step,
)
from orchestrator.evidence import HELD, SignalBox, archive_response, read_response

log = structlog.get_logger(__name__)


class StepFailed(Exception):
    """A FAILED signal from a role or from the system, raised inside a step."""

    def __init__(self, record: FailureRecord) -> None:
        self.record = record
        super().__init__(record.error)


def fail_run(crew: Collaborators, run_id: str, record: FailureRecord | None, reason: str) -> None:
    """Record the failure everywhere it can be written, report it once, mark the run FAILED."""
    box = SignalBox(crew.home.run(run_id).signals)
    record = record or box.read("failure", FailureRecord) or _where_it_was(crew, run_id, reason)
    if "failure" not in box.names():
        box.write("failure", record)
    log.error("run_failed", run_id=run_id, role=record.role, error=record.error)
    _mark_levels(crew, run_id, record)
    if "failure_reported" not in box.names():
        earlier = sum(1 for name in box.history() if name.startswith("failure-"))
        crew.speaker.tell(_report(crew, run_id, record), once=f"failure-{earlier + 1}")
        box.write("failure_reported", Mark())
    _hold_unhandled_answer(crew, run_id)
    crew.process_runs.update(
        run_id,
        status=Status.FAILED,
        current_phase_id=record.phase_id,
        current_stage_id=record.stage_id,
        current_task_id=record.task_id,
    )


def _where_it_was(crew: Collaborators, run_id: str, reason: str) -> FailureRecord:
    """A failure found in the files (a broken table, a FAILED row): place it where the run was."""
    run = crew.process_runs.get(run_id)
    phase_id, stage_id, task_id = (
        (run.current_phase_id, run.current_stage_id, run.current_task_id)
        if run
        else (None, None, None)
    )
    return FailureRecord(
        role="system", phase_id=phase_id, stage_id=stage_id, task_id=task_id, error=reason
    )


def _hold_unhandled_answer(crew: Collaborators, run_id: str) -> None:
    """An answer the run had not handled yet is kept aside, and given back by a retry."""
    paths = crew.home.run(run_id)
    answer = read_response(paths.user_response)
    if answer is not None:
        archive_response(paths, "retry" if answer.kind is DecisionKind.RETRY else HELD)


def _mark_levels(crew: Collaborators, run_id: str, record: FailureRecord) -> None:
    """Tool task, task, stage, phase → FAILED; a table that cannot be read is left untouched."""
    tables = crew.run(run_id)
    levels = (
        (tables.tools, record.tool_task_id),
        (tables.tasks, record.task_id),
        (tables.stages, record.stage_id),
        (tables.phases, record.phase_id),
    )
    for table, key in levels:
        if key is None:
            continue
        try:
            row = table.get(key)
            if row is not None and row.status is Status.PENDING:
                table.update(key, status=Status.FAILED)
        except TableError as error:
            # Never overwrite what a person wrote: the broken file stays byte-identical.
            log.warning("failure_not_recorded_in_table", run_id=run_id, table=str(error.path))


def _report(crew: Collaborators, run_id: str, record: FailureRecord) -> Message:
    facts = {
        "role": record.role,
        "phase": record.phase_id or "",
        "stage": record.stage_id or "",
        "task": record.task_id or "",
        "tool_task": record.tool_task_id or "",
        "purpose": record.purpose,
        "error": record.error,
    }
    return Message(kind=MessageKind.FAILURE, run_id=run_id, facts=facts)




class CancelRecord(Evidence):
    """The person cancelled the run; what had finished by then, in words."""

    finished: str = ""
    since: str = ""  # UTC, for people


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
