"""The builtin offline Planner (SPEC §10.5)."""

from __future__ import annotations

from planner.builtin.planner import BuiltinPlanner

__all__ = [
    "BuiltinPlanner",
]
