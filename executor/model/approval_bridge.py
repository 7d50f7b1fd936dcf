"""The approver of one task (SPEC §11, seed 001 §17.3.1): answers from the run's approval files.

Asked about an action (a tool and its arguments), it answers from the record of that very
action: approved runs it; denied or timed out refuses it; an unreadable record refuses it (fail
closed). With no record yet it records the request, writes the DPS event, and stops the step
(`StepWaiting`): the run waits, holding no thread, until `multiverse approve|deny` or an
APPROVE/DENY answer; then the step is done again, its model answers come from the cache, and
this time the record answers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from multiverse.approvals import ApprovalBook, ApprovalStatus, StepWaiting, Unreadable, action_hash
from multiverse.dps_events import INTERACTION_REQUEST, INTERACTION_TIMEOUT, append_event

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ApprovalBridge:
    """Answers `approve(tool, arguments)` for one task of one run."""

    run_root: Path
    run_id: str
    task_id: str
    timeout_seconds: float

    @property
    def session_id(self) -> str:
        """The SDK session of the task (one per task)."""
        return f"sdk:{self.run_id}:{self.task_id}"

    def __call__(self, tool: str, arguments: dict[str, Any]) -> bool:
        """Whether this exact action may run; raises StepWaiting while it waits for a person."""
        book = ApprovalBook(self.run_root)
        digest = action_hash(tool, arguments, self.task_id)
        try:
            record = book.get(digest)
        except Unreadable as error:
            log.warning("approval_unreadable", run_id=self.run_id, tool=tool, error=str(error))
            return False
        events = self.run_root / "events.jsonl"
        if record is None:
            record = book.request(self.run_id, self.task_id, tool, arguments,
                                  self.timeout_seconds)  # fmt: skip
            append_event(events, INTERACTION_REQUEST, self.session_id,
                         interaction_type="PERMISSION", approval_id=record.id,
                         context={"tool_name": tool, "arguments": arguments},
                         timeout_seconds=self.timeout_seconds)  # fmt: skip
            raise StepWaiting(record)
        if record.status is ApprovalStatus.APPROVED:
            return True
        if record.status is not ApprovalStatus.PENDING:
            return False
        if record.expired(time.time()):
            book.time_out(record)
            append_event(events, INTERACTION_TIMEOUT, self.session_id, approval_id=record.id,
                         context={"tool_name": tool}, approved=False)  # fmt: skip
            return False
        raise StepWaiting(record)
