"""The model-backed Executor (sdk adapter): a bounded tool-calling loop through the gateway."""

from __future__ import annotations

from executor.model.role import ModelExecutor
from executor.model.runlock import PROMPT_IN_PROGRESS

__all__ = ["PROMPT_IN_PROGRESS", "ModelExecutor"]
