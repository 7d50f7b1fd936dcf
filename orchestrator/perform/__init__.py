"""Performing steps (SPEC §6–§9): the step runner, the only writer of the seven tables, and what
each kind of step does (`phase0`, `master`, `ending`, `catalog`).

The step runner performs one step through a role and records the result. Any failure inside a
step (a role's FAILED signal, a plan that cannot be made, a broken run table, a crashing role)
fails the run at once (SPEC §8); a broken global table is reported and the step abandoned, to be
retried when the file changes, so that other runs keep being served. Also here: the step's start
and end in the run's timeline (`multiverse.runs`), and the run's milestones.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import structlog

from multiverse.atomic import is_disk_full
from multiverse.errors import StepInterrupted, StorageError, TableBusy, TableError, shown_error
from multiverse.models import PlanLevel
from multiverse.roles import Message, MessageKind, PlanFailed
from multiverse.runs import STEP_STARTED, StepWaiting, finish_step, note
from orchestrator.crew import Collaborators
from orchestrator.decide import DecisionKind, FailureRecord, RunView, Step, StepKind, next_step
from orchestrator.evidence import load_run_view, take_next_answer
from orchestrator.perform import ending, master, phase0
from orchestrator.perform.catalog import SUMMARY_WORKERS, refresh_inputs
from orchestrator.perform.ending import StepFailed, cancel, fail_run, retry_blockers, wants_a_look
from orchestrator.perform.master import answer_approval, answer_hold, ask_for_approval, hold

log = structlog.get_logger(__name__)

# How a step ended, in `step_finished` lines.
DONE = "done"
FAILED = "failed"
WAITING = "waiting"  # for an approval
INTERRUPTED = "interrupted"  # the daemon stopped: redone at the next start
BUSY = "busy"  # a table kept changing under its write: redone at once
PAUSED = "paused"  # a broken global table: retried when it is fixed


def target(step: Step) -> str | None:
    """The phase, stage, task or tool task the step works on, if any."""
    return step.tool_task_id or step.task_id or step.stage_id or step.phase_id


def step_started(run_root: Path, step: Step) -> None:
    """A step of the run begins."""
    note(run_root, STEP_STARTED, step=step.kind.value, target=target(step))


def step_finished(run_root: Path, step: Step, status: str, seconds: float) -> None:
    """A step of the run ended (`status`: done, failed, waiting, interrupted, paused)."""
    finish_step(run_root, seconds, step=step.kind.value, target=target(step), status=status)
    milestone = milestone_of(step) if status == DONE else None
    if milestone is not None:
        note(run_root, milestone)


def milestone_of(step: Step) -> str | None:
    """The run-level event a successful step is: confirmed, cancelled or completed."""
    if step.kind is StepKind.COMPLETE_RUN:
        return "completed"
    if step.kind.value == "CANCEL":  # the cancel of a run at any time
        return "cancelled"
    if step.kind is StepKind.HANDLE_RESPONSE and step.decision is not None:
        return {DecisionKind.CONFIRM: "confirmed", DecisionKind.CANCEL: "cancelled"}.get(
            step.decision.kind
        )
    return None



StepAction = Callable[[Collaborators, RunView, Step], None]

ACTIONS: dict[StepKind, StepAction] = {
    StepKind.PLAN_PHASE0: phase0.plan_phase0,
    StepKind.SET_UP_RUN: phase0.set_up_run,
    StepKind.PROPOSE: phase0.propose,
    StepKind.ASK: phase0.ask,
    StepKind.HANDLE_RESPONSE: phase0.handle_response,
    StepKind.WRITE_INSTRUCTIONS: phase0.write_instructions,
    StepKind.BUILD_CATALOG: phase0.build_catalog,
    StepKind.FIRST_ANALYSIS: phase0.first_analysis,
    StepKind.COMPLETE_PHASE0: phase0.complete_phase0,
    StepKind.PLAN_STAGES: master.plan_stages,
    StepKind.PLAN_TASKS: master.plan_tasks,
    StepKind.PLAN_TOOLS: master.plan_tools,
    StepKind.EXECUTE_TOOL_TASK: master.execute_tool_task,
    StepKind.EXECUTE_TASK: master.execute_task,
    StepKind.COMPLETE_TASK: master.complete_task,
    StepKind.COMPLETE_STAGE: master.complete_stage,
    StepKind.COMPLETE_PHASE: master.complete_phase,
    StepKind.COMPLETE_RUN: master.complete_run,
    StepKind.HANDLE_RETRY: ending.handle_retry,
    StepKind.REOPEN: ending.reopen,
    StepKind.ANSWER_APPROVAL: answer_approval,
    StepKind.HOLD: hold,
    StepKind.ANSWER_HOLD: answer_hold,
    StepKind.CANCEL: cancel,
}


class StepRunner:
    """Decides and performs the next step of one run at a time."""

    def __init__(
        self, crew: Collaborators, pause_before: frozenset[PlanLevel] = frozenset()
    ) -> None:
        self.crew = crew
        self.pause_before = pause_before  # the plans a run holds at (daemon.pause_before)
        self._reported_global: set[str] = set()
        self._reported_faults: set[str] = set()
        # Failures the machine did not let us record (a full disk): written when it lets us.
        self.unrecorded: dict[str, FailureRecord] = {}
        # Runs whose last step stopped at a broken global table: they wait for it to change.
        self.paused: set[str] = set()
        # Approvals this process has asked for: a restarted daemon asks again, once.
        self._asked: set[str] = set()

    def decide(self, run_id: str) -> tuple[RunView, Step] | None:
        """Read the run's files and decide its next step (None if the run is unknown)."""
        run = self.crew.process_runs.get(run_id)
        if run is None:
            return None
        tables = self.crew.run(run_id)
        take_next_answer(tables.paths)  # the daemon alone moves a waiting answer in
        view = load_run_view(tables, run, self.pause_before)
        if any(signal.post_tool_required for signal in view.signals.values()):
            # The cards say where a step's result may go next; read afresh (SPEC §10.1) when a
            # route a card may refuse is in question (POST tools), not at every decision.
            view = replace(view, routes=self.crew.routes())
        held = self.unrecorded.get(run_id)
        if held is not None:
            return view, Step(kind=StepKind.FAIL_RUN, run_id=run_id, reason=held.error)
        return view, next_step(view)

    def advance(self, run_id: str) -> Step | None:
        """Decide and perform one step of a run; returns the step performed."""
        try:
            decided = self.decide(run_id)
        except TableError as error:
            self.report_global(error)
            return None
        if decided is None or not decided[1].is_work:
            if decided is not None:
                self.note_wait(*decided)
            return decided[1] if decided else None
        view, step = decided
        self.perform(view, step)
        return step

    def note_wait(self, view: RunView, step: Step) -> None:
        """A run that waits for an approval: ask the user (once per process) what it waits for."""
        approval = view.approval
        if step.kind is not StepKind.WAIT or approval is None or approval.id in self._asked:
            return
        self._asked.add(approval.id)
        log.info("approval_asked", run_id=view.run_id, approval_id=approval.id,
                 tool=approval.tool)  # fmt: skip
        ask_for_approval(self.crew, approval)

    def perform(self, view: RunView, step: Step) -> None:
        """Perform one step; failures become a failed run, never an escaping exception.

        The log gets one line per step, as it starts: that is the line that says what was in
        flight when a process died. Its end is the run's next line (a step or a failure); a
        second line per step cost a fifth of the orchestration time of a run with fast roles.
        The run's timeline gets its start and its end (a plain append each, far cheaper).
        """
        log.info("step_started", run_id=step.run_id, step=step.describe())
        self.paused.discard(step.run_id)
        root = self.crew.home.run(step.run_id).root
        step_started(root, step)
        began = time.monotonic()
        outcome = self._perform(view, step)
        step_finished(root, step, outcome, time.monotonic() - began)

    def _perform(self, view: RunView, step: Step) -> str:
        """Perform the step; returns how it ended, in the words of the run's timeline."""
        try:
            if step.kind is StepKind.FAIL_RUN:
                record = self.unrecorded.get(step.run_id) or view.failure
                self._record_failure(step.run_id, record, step.reason)
                return DONE  # the failure it had to record ("failed" is its line)
            ACTIONS[step.kind](self.crew, view, step)
            return DONE
        except StepWaiting as waiting:
            # Recorded by the approver; the next decision is a WAIT that asks the user.
            log.info("step_waiting", run_id=step.run_id, step=step.describe(),
                     approval_id=waiting.approval.id)  # fmt: skip
            return WAITING
        except StepInterrupted as interrupted:
            # The daemon is stopping and stopped the step's child: redone at the next start.
            log.info("step_interrupted", run_id=step.run_id, step=step.describe(),
                     reason=str(interrupted))  # fmt: skip
            return INTERRUPTED
        except StepFailed as failed:
            self._fail(step, failed.record)
        except PlanFailed as error:
            self._fail_here(step, "planner", _plan_error(error), purpose=f"plan {error.target}")
        except TableBusy as busy:
            # A person's editor saved the table faster than we could write it: nothing of ours
            # was placed, and the step (safe to redo, as after a crash) is done again.
            log.info("step_table_busy", run_id=step.run_id, step=step.describe(), error=str(busy))
            return BUSY
        except StorageError as error:
            # The machine's fault, not the run's: the same fail-fast report, and `retry` later.
            if is_disk_full(error):
                self.crew.reserve.release()  # room to record the failure
            self._fail_here(
                step, "system", f"{error}. Then resume the run: multiverse retry {step.run_id}"
            )
        except TableError as error:
            if self._is_global(error):
                self.paused.add(step.run_id)
                self.report_global(error)
                return PAUSED
            self._fail_here(step, "system", str(error))
        except Exception as error:  # a role crashed: a FAILED signal of the system (SPEC §8)
            self._log_crash(step)
            self._fail_here(step, _role_of(step), f"{type(error).__name__}: {error}")
        return FAILED

    def _fail_here(self, step: Step, role: str, error: str, purpose: str = "") -> None:
        """Fail the run at the place the step was working on."""
        self._fail(
            step,
            FailureRecord(
                role=role,
                phase_id=step.phase_id,
                stage_id=step.stage_id,
                task_id=step.task_id,
                tool_task_id=step.tool_task_id,
                purpose=purpose,
                error=error,
            ),
        )

    def _fail(self, step: Step, record: FailureRecord) -> None:
        self._record_failure(step.run_id, record, record.error)

    def _record_failure(self, run_id: str, record: FailureRecord | None, reason: str) -> None:
        """Fail the run (SPEC §8); what the machine does not let us write is held and retried."""
        try:
            fail_run(self.crew, run_id, record, reason)
        except TableError as error:
            if self._is_global(error):
                self.paused.add(run_id)
                self.report_global(error)
            else:
                log.warning("failure_not_recorded", run_id=run_id, error=str(error))
        except StorageError as error:
            if is_disk_full(error) and self.crew.reserve.release():
                return self._record_failure(run_id, record, reason)
            held = record or FailureRecord(role="system", error=reason)
            self.unrecorded[run_id] = held
            self.report_machine_fault(error, run_id)
            return None
        self.unrecorded.pop(run_id, None)
        note(self.crew.home.run(run_id).root, "failed")
        return None

    def report_machine_fault(self, error: StorageError, run_id: str | None = None) -> None:
        """Say once per distinct problem that the machine refuses writes, and what to do."""
        key = str(error)
        log.info("machine_fault", error=key, run_id=run_id)  # said by the NOTICE below
        if key in self._reported_faults:
            return
        self._reported_faults.add(key)
        held = (
            f" Run `{run_id}` stopped; its failure is recorded as soon as the disk lets me, "
            f"then `multiverse retry {run_id}` resumes it."
            if run_id
            else ""
        )
        text = f"The disk refused a write: {key}.{held}"
        self.crew.speaker.tell(Message(kind=MessageKind.NOTICE, facts={"text": text}))

    def _is_global(self, error: TableError) -> bool:
        return error.path.parent.resolve() == self.crew.home.db.resolve()

    def report_blocked(self, error: TableError | StorageError) -> None:
        """Say what keeps a request in inbox/: a global table to fix, or a disk that refuses."""
        if isinstance(error, TableError):
            self.report_global(error)
        else:
            self.report_machine_fault(error)

    def report_global(self, error: TableError) -> None:
        """Say once per distinct problem that a global table needs a person's fix."""
        key = str(error)
        log.info("global_table_broken", error=key)  # said by the NOTICE below
        if key not in self._reported_global:
            self._reported_global.add(key)
            self.crew.speaker.tell(
                Message(
                    kind=MessageKind.NOTICE,
                    facts={
                        "text": (
                            "A global table cannot be read, so runs that need it are paused: "
                            f"{shown_error(self.crew.home.root, error)}. Fix the file (nothing "
                            "in it was changed); the daemon goes on as soon as it is saved."
                        )
                    },
                )
            )

    def _log_crash(self, step: Step) -> None:
        folder = self.crew.home.run(step.run_id).logs
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with (folder / "errors.log").open("a", encoding="utf-8") as handle:
                handle.write(f"--- {step.describe()}\n{traceback.format_exc()}\n")
        except OSError as error:  # the failure itself is still recorded and reported
            log.warning("crash_log_not_written", run_id=step.run_id, error=error.strerror)


def _plan_error(error: PlanFailed) -> str:
    text = "; ".join(error.errors)
    if error.raw_answer:
        text += f"\n\nRaw answer of the model:\n{error.raw_answer}"
    return text


def _role_of(step: Step) -> str:
    if step.kind.name.startswith("PLAN") or step.kind is StepKind.PROPOSE:
        return "planner"
    if step.kind.name.startswith("EXECUTE") or step.kind is StepKind.FIRST_ANALYSIS:
        return "executor"
    return "system"


__all__ = [
    "SUMMARY_WORKERS",
    "StepRunner",
    "refresh_inputs",
    "retry_blockers",
    "wants_a_look",
]
