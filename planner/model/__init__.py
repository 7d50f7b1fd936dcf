"""The model-backed Planner (SPEC §10.3): plans made by a model through the gateway."""

from __future__ import annotations

from planner.model.asking import PromptError, PromptTemplate, load_prompt
from planner.model.planner import ModelPlanner

__all__ = [
    "ModelPlanner",
    "PromptError",
    "PromptTemplate",
    "load_prompt",
]
