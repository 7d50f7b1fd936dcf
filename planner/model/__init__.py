"""The model-backed Planner (SPEC §10.3): plans made by a model through the gateway."""

from __future__ import annotations

from planner.model.context import PROMPTS_PACKAGE
from planner.model.planner import ModelPlanner

__all__ = [
    "PROMPTS_PACKAGE",
    "ModelPlanner",
]
