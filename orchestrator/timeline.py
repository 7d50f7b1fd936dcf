"""Writes a run's timeline (multiverse.timeline) around its steps and at its milestones.

The timeline is for people watching: a line that cannot be written (a full disk, a run folder
gone) is logged and skipped, never a reason to fail the step or the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import structlog

from multiverse.timeline import CREATED, STEP_FINISHED, STEP_STARTED, append_event, timeline_path
from orchestrator.decisions import DecisionKind
from orchestrator.steps import Step, StepKind

log = structlog.get_logger(__name__)

# How a step ended, in `step_finished` lines.
DONE = "done"
FAILED = "failed"
WAITING = "waiting"  # for an approval
INTERRUPTED = "interrupted"  # the daemon stopped: redone at the next start
PAUSED = "paused"  # a broken global table: retried when it is fixed


def note(run_root: Path, event: str, **fields: Any) -> None:
    """Append one event to the run's timeline; a failure to write is logged, not raised."""
    try:
        append_event(run_root, event, **fields)
    except OSError as error:
        log.warning("timeline_not_written", run=run_root.name, event=event, error=str(error))


def run_created(run_root: Path) -> None:
    """The run exists; said once (an intake resumed after a crash finds the timeline begun)."""
    if not timeline_path(run_root).exists():
        note(run_root, CREATED)


def target(step: Step) -> str | None:
    """The phase, stage, task or tool task the step works on, if any."""
    return step.tool_task_id or step.task_id or step.stage_id or step.phase_id


def step_started(run_root: Path, step: Step) -> None:
    """A step of the run begins."""
    note(run_root, STEP_STARTED, step=step.kind.value, target=target(step))


def step_finished(run_root: Path, step: Step, status: str, seconds: float) -> None:
    """A step of the run ended (`status`: done, failed, waiting, interrupted, paused)."""
    note(
        run_root,
        STEP_FINISHED,
        step=step.kind.value,
        target=target(step),
        status=status,
        seconds=round(seconds, 3),
    )
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
