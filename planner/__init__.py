"""The Planner role (SPEC §10.3): plans, their validation, MCP recipes, the proposal document."""

from __future__ import annotations

from planner.builtin import MCP_FILE, BuiltinPlanner, decide_mode, load_mcps, match_mcp
from planner.proposal_doc import render_proposal
from planner.validation import (
    validate_phase0,
    validate_proposal,
    validate_stages,
    validate_tasks,
    validate_tool_tasks,
)

__all__ = [
    "MCP_FILE",
    "BuiltinPlanner",
    "decide_mode",
    "load_mcps",
    "match_mcp",
    "render_proposal",
    "validate_phase0",
    "validate_proposal",
    "validate_stages",
    "validate_tasks",
    "validate_tool_tasks",
]
