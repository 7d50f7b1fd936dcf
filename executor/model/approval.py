"""Tools the mapping marks `requires_approval` (SPEC §11): the approver is asked before each use.

run_shell_command has its own rule (its allow-list runs freely, any other command needs approval)
and is left to it. For every other such tool, no approver, or a "no", means refused: a refusal
the registry hands back to the model like any tool error.

Also here: the approver of one task (SPEC §11, seed 001 §17.3.1).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from executor.tools import Approver, Tool, ToolContext, ToolRefused, ToolResult
from multiverse.config import ToolBinding
from multiverse.errors import ConfigError
from multiverse.processes import INTERACTION_REQUEST, INTERACTION_TIMEOUT, append_event
from multiverse.roles import ApprovalStatus
from multiverse.runs import ApprovalBook, StepWaiting, Unreadable, action_hash

log = structlog.get_logger(__name__)

SHELL = "run_shell_command"


@dataclass(frozen=True)
class ApprovalGated:
    """A tool that runs only when the approver says yes to this very call."""

    inner: Tool
    approver: Approver | None

    @property
    def name(self) -> str:
        """The wrapped tool's name."""
        return self.inner.name

    @property
    def description(self) -> str:
        """The wrapped tool's description, saying that each use needs approval."""
        return f"{self.inner.description} Each use needs the user's approval."

    @property
    def parameters(self) -> dict[str, Any]:
        """The wrapped tool's argument schema."""
        return self.inner.parameters

    def run(self, context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        """Ask, then run the wrapped tool; refuse without a yes."""
        if self.approver is None:
            raise ToolRefused(f"{self.name} needs the user's approval, which is not possible")
        approved = self.approver(self.name, dict(arguments))
        log.info("tool_approval", run_id=context.run_id, tool=self.name, approved=approved)
        if not approved:
            raise ToolRefused(f"the user did not approve {self.name}; refused")
        return self.inner.run(context, arguments)


def gate_approvals(
    catalogue: Mapping[str, Tool],
    bindings: Mapping[str, ToolBinding],
    approver: Approver | None,
) -> dict[str, Tool]:
    """The catalogue with every tool bound with `requires_approval` wrapped in a gate."""
    gated = dict(catalogue)
    for binding in bindings.values():
        tool = gated.get(binding.tool)
        if binding.requires_approval and binding.tool != SHELL and tool is not None:
            gated[binding.tool] = ApprovalGated(tool, approver)
    return gated


def shell_allow_list(bindings: Mapping[str, ToolBinding]) -> tuple[str, ...]:
    """The shell's allow-list from its binding's `options.allow` (none when it is not mapped)."""
    for binding in bindings.values():
        if binding.tool != SHELL:
            continue
        allow = binding.options.get("allow", [])
        items = [allow] if isinstance(allow, str) else allow
        if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
            raise ConfigError(
                "runtime-mapping.yaml: run_shell_command options.allow must be a list of programs"
            )
        return tuple(item.strip() for item in items if item.strip())
    return ()




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
