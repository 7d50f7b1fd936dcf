"""The Orchestrator's decision (SPEC §4): a run's files as plain data (`RunView`), the steps, and
the pure functions that say what comes next (`next_step`) and what a run accepts now
(`accepts`). It reads no file and imports nothing but the kernel's plain data.
"""

from __future__ import annotations

from orchestrator.decide.machine import POST_TOOLS_NOT_HANDED_OFF, Step, StepKind, next_step
from orchestrator.decide.view import (
    CANCELLED,
    HOLD,
    RELEASE,
    USER,
    Acceptance,
    Decision,
    DecisionKind,
    Evidence,
    FailureRecord,
    HoldRecord,
    Mark,
    ReleaseRecord,
    RunView,
    accepts,
    cancel_wanted,
    decode_answer,
    describe,
    hold_name,
    is_user,
    parse_answer,
    parse_decision,
    plan_of,
    plan_reason,
    release_name,
    render_decision,
    user_reason,
)

__all__ = [
    "CANCELLED",
    "HOLD",
    "POST_TOOLS_NOT_HANDED_OFF",
    "RELEASE",
    "USER",
    "Acceptance",
    "Decision",
    "DecisionKind",
    "Evidence",
    "FailureRecord",
    "HoldRecord",
    "Mark",
    "ReleaseRecord",
    "RunView",
    "Step",
    "StepKind",
    "accepts",
    "cancel_wanted",
    "decode_answer",
    "describe",
    "hold_name",
    "is_user",
    "next_step",
    "parse_answer",
    "parse_decision",
    "plan_of",
    "plan_reason",
    "release_name",
    "render_decision",
    "user_reason",
]
