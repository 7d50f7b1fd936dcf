"""The model-backed Executor (sdk adapter): a bounded tool-calling loop through the gateway."""

from __future__ import annotations

from executor.model.loop import clipped
from executor.model.prompt import active_instructions, load_template
from executor.model.role import PROMPT_IN_PROGRESS, ModelExecutor, RunLocks

__all__ = [
    "PROMPT_IN_PROGRESS",
    "ModelExecutor",
    "RunLocks",
    "active_instructions",
    "clipped",
    "load_template",
]
