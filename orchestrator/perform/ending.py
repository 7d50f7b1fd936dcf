"""How a run ends early: fail-fast (SPEC §8: identify, record at every level, report, halt) and
cancelling at any time (SPEC §3.4, §13).

Also here: `multiverse retry RUN` (SPEC §8): a FAILED run goes on from its failed step.

A person asks by writing RETRY into the run's user_response.md (the CLI does the same). Two
steps, each safe to repeat after a crash:
- HANDLE_RETRY checks that the cause is gone (`retry_blockers`); if so it records the request
  as evidence `retry-N`, else it says why not; either way the answer is set aside.
- REOPEN sets the earlier failure aside as history (`signals/history/failure-N`), puts every
  FAILED row of the run's tables back to PENDING, says so, and makes the run PENDING: the
  master loop then redoes exactly the failed step. COMPLETED rows and outputs are kept, and a
  model call already answered is served by the cache, never paid twice.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import structlog

from multiverse.atomic import write_temp
from multiverse.errors import ConfigError, StorageError, TableError, shown_error
from multiverse.home import Home, RunPaths
from multiverse.models import (
    TASK_ID,
    TOOL_TASK_ID,
    MajorStage,
    Phase,
    Status,
    Task,
    ToolTask,
    can_transition,
)
from multiverse.roles import Message, MessageKind
from multiverse.store import GLOBAL_TABLES, RUN_TABLES, Table, TableStore
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
from orchestrator.evidence import (
    HELD,
    HISTORY,
    SignalBox,
    archive_response,
    give_back_held,
    read_response,
    waiting_answers,
)

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
    log.info("run_failed", run_id=run_id, role=record.role, error=record.error)  # said below
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
        role="system", phase_id=phase_id, stage_id=stage_id, task_id=task_id, error=reason,
        purpose=_work_at(crew, run_id, task_id),
    )  # fmt: skip


def task_words(task: Task) -> str:
    """A task in words, as a failure report names it: `First analysis: Read the request …`."""
    return f"{task.task_name}: {task.task_purpose}" if task.task_purpose else task.task_name


def _work_at(crew: Collaborators, run_id: str, task_id: str | None) -> str:
    """The failed work in words: the task the run was at, else its next step."""
    try:
        task = crew.run(run_id).tasks.get(task_id) if task_id else None
    except TableError:
        task = None
    if task is not None:
        return task_words(task)
    return "the run's next step, which could not go on (the error below says why)"


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


# A disk with less room than this cannot be trusted to hold a run's next steps.
MIN_FREE_BYTES = 1024 * 1024


def retry_blockers(home: Home, store: TableStore, run_id: str) -> list[str]:
    """Why run `run_id` cannot be retried now (empty: it can). Reads, and one probe write."""
    problems = []
    paths = home.run(run_id)
    for spec in RUN_TABLES:
        problems += _unreadable(home, store.table(spec, paths.db / spec.filename))
    for spec in GLOBAL_TABLES:
        problems += _unreadable(home, store.table(spec, home.db / spec.filename))
    problems += _disk_problems(home, run_id)
    problems += _budget_problems(home, run_id)
    return problems


def _unreadable(home: Home, table: Table[Any]) -> list[str]:
    try:
        table.rows()
    except TableError as error:
        return [f"{shown_error(home.root, error)} (fix the file first)"]
    return []


def _disk_problems(home: Home, run_id: str) -> list[str]:
    """Whether the folders the run writes take a write now (one hidden probe file each)."""
    paths = home.run(run_id)
    for folder in (home.db, paths.root, paths.outputs):
        if not folder.is_dir():
            continue
        try:
            os.unlink(write_temp(folder / "retry-probe", b"x"))
        except StorageError as error:
            return [str(error)]
        except OSError as error:
            return [str(StorageError(folder, error))]
    try:
        free = os.statvfs(home.root)
    except OSError:
        return []
    room = free.f_bavail * free.f_frsize
    if room < MIN_FREE_BYTES:
        return [f"the disk holding {home.root} has only {room // 1024} KiB free (free some space)"]
    return []


def _budget_problems(home: Home, run_id: str) -> list[str]:
    """A run stopped by its budget fails again at once unless the budget was raised."""
    from multiverse.config import load_runtime_mapping
    from multiverse.gateway import Budget, UsageLedger, over_budget

    try:
        budget = load_runtime_mapping(home.root).budget
        ledger = UsageLedger(home.run(run_id).root, Budget(**budget.model_dump()))
        reason = over_budget(ledger.totals(), ledger.budget, at_limit=True)
    except (ConfigError, TableError) as error:
        return [str(error)]
    if reason is None:
        return []
    return [f"{reason}: raise `budget:` in runtime-mapping.yaml first"]


def wants_a_look(paths: RunPaths) -> bool:
    """Whether a FAILED run has something to do: an answer (given or waiting in answers/), or
    a retry not yet finished."""
    if paths.user_response.exists() or waiting_answers(paths):
        return True
    box = SignalBox(paths.signals)
    names = box.names()
    retries = max(
        (int(name[6:]) for name in names if name.startswith("retry-") and name[6:].isdigit()),
        default=0,
    )
    return bool(retries) and not ("failure" in names and f"failure-{retries}" in box.history())


def handle_retry(crew: Collaborators, view: RunView, step: Step) -> None:
    """An answer to a FAILED run: RETRY is recorded (or refused with the reason)."""
    assert step.decision is not None
    paths = crew.home.run(view.run_id)
    if step.decision.kind is not DecisionKind.RETRY:
        _tell(
            crew,
            view.run_id,
            f"Run `{view.run_id}` has FAILED, so it takes no other answer than RETRY "
            f"(`multiverse retry {view.run_id}`); the answer was set aside.",
        )
        archive_response(paths, "refused")
        return
    problems = retry_blockers(crew.home, crew.store, view.run_id)
    if problems:
        listing = "\n".join(f"- {problem}" for problem in problems)
        _tell(
            crew,
            view.run_id,
            f"I cannot retry run `{view.run_id}` yet; the cause is still there:\n\n{listing}\n\n"
            f"Fix that, then ask again: `multiverse retry {view.run_id}`.",
        )
        log.info("retry_refused", run_id=view.run_id, problems=problems)
        archive_response(paths, "retry-refused")
        return
    SignalBox(paths.signals).write(f"retry-{step.revision}", Mark(revision=step.revision))
    archive_response(paths, "retry")


def reopen(crew: Collaborators, view: RunView, step: Step) -> None:
    """Retry N: the failure into history, FAILED rows back to PENDING, the run PENDING."""
    number = step.revision
    paths = crew.home.run(view.run_id)
    box = SignalBox(paths.signals)
    box.move_to_history("failure", f"failure-{number}")
    box.move_to_history("failure_reported", f"failure_reported-{number}")
    # FAILED result signals first: a row reopened before a crash must not meet one later.
    for name in box.names():
        _set_aside_failed_result(box, name, number)
    tables = crew.run(view.run_id)
    for table in (tables.tools, tables.tasks, tables.stages, tables.phases):
        _reopen_rows(table)
    crew.reserve.ensure()  # space is back: hold some again for the next full disk
    answer = read_response(paths.user_response)
    if answer is not None and answer.kind is DecisionKind.RETRY:  # set aside before a crash?
        archive_response(paths, "retry")
    give_back_held(paths)  # an answer the run had not handled when it failed
    told = f"retry-told-{number}"
    if told not in box.names():
        _tell_retry(crew, view.run_id, number, box.read_history(f"failure-{number}", FailureRecord))
        box.write(told, Mark(revision=number))
    crew.process_runs.compare_and_set(view.run_id, Status.FAILED, status=Status.PENDING)


def _reopen_rows(table: Table[Any]) -> None:
    """Every FAILED row of a run table back to PENDING (the failed step and its levels)."""

    def apply(rows: list[Any]) -> list[Any]:
        return [
            row.model_copy(update={"status": Status.PENDING})
            if row.status is Status.FAILED and can_transition(row.status, Status.PENDING)
            else row
            for row in rows
        ]

    table.store.modify(table.spec, table.path, apply)


def _set_aside_failed_result(box: SignalBox, name: str, number: int) -> None:
    """A task's or tool task's FAILED result signal becomes history: the step is done again."""
    if not re.fullmatch(f"{TASK_ID}|{TOOL_TASK_ID}", name):
        return
    try:
        result = box.result(name)
    except TableError:
        result = None  # unreadable: set aside all the same, the step is redone
    if result is None or result.status == "FAILED":
        box.move_to_history(name, f"{name}-failed-{number}")


def _tell_retry(
    crew: Collaborators, run_id: str, number: int, failure: FailureRecord | None
) -> None:
    place = " › ".join(
        f"{label} {value}"
        for label, value in (
            ("phase", failure.phase_id if failure else None),
            ("stage", failure.stage_id if failure else None),
            ("task", failure.task_id if failure else None),
            ("tool task", failure.tool_task_id if failure else None),
        )
        if value
    )
    history = crew.home.relative(crew.home.run(run_id).signals / HISTORY)
    crew.speaker.tell(
        Message(
            kind=MessageKind.RETRY,
            run_id=run_id,
            facts={
                "retry": str(number),
                "place": place,
                "error": failure.error if failure else "",
                "history": f"{history}/failure-{number}.json",
            },
        ),
        once=f"retry-{number}",
    )


def _tell(crew: Collaborators, run_id: str, text: str) -> None:
    crew.speaker.tell(Message(kind=MessageKind.NOTICE, run_id=run_id, facts={"text": text}))
