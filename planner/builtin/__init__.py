"""The builtin offline Planner (SPEC §10.5), and the request spec read by its rules."""

from __future__ import annotations

from offline import charts_said
from planner.builtin.planner import BuiltinPlanner
from planner.builtin.proposal import (
    modifications,
    read_spec,
    request_spec,
    settle_spec,
)

__all__ = [
    "BuiltinPlanner",
    "charts_said",
    "modifications",
    "read_spec",
    "request_spec",
    "settle_spec",
]
