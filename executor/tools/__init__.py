"""The Executor's concrete tools (SPEC §12): confined, bounded, behind one registry."""

from __future__ import annotations

from executor.tools.base import (
    Approver,
    SearchError,
    SearchHit,
    Tool,
    ToolContext,
    ToolLimits,
    ToolRefused,
    ToolResult,
    WebSearchProvider,
)
from executor.tools.registry import ToolRegistry, builtin_tools

__all__ = [
    "Approver",
    "SearchError",
    "SearchHit",
    "Tool",
    "ToolContext",
    "ToolLimits",
    "ToolRefused",
    "ToolRegistry",
    "ToolResult",
    "WebSearchProvider",
    "builtin_tools",
]
