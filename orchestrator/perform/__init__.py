"""Performing steps (SPEC §6–§9): the step runner, the only writer of the seven tables, and what
each kind of step does.
"""

from __future__ import annotations

from orchestrator.perform.catalog import SUMMARY_WORKERS, refresh_inputs
from orchestrator.perform.ending import retry_blockers, wants_a_look
from orchestrator.perform.runner import StepRunner

__all__ = [
    "SUMMARY_WORKERS",
    "StepRunner",
    "refresh_inputs",
    "retry_blockers",
    "wants_a_look",
]
