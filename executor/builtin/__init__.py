"""The builtin offline Executor: extractive analysis, strategy, publishing and charts, no model."""

from __future__ import annotations

from executor.builtin.role import BuiltinExecutor

__all__ = ["BuiltinExecutor"]
