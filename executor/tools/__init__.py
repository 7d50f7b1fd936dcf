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
    is_private_name,
    readable_in_home,
    resolve_readable,
)
from executor.tools.reading import SKIPPED_DIRS
from executor.tools.registry import ToolRegistry, builtin_tools
from executor.tools.web import (
    FetchError,
    HostRule,
    check_url,
    fetch,
    parse_rule,
    parse_rules,
    to_text,
)

__all__ = [
    "SKIPPED_DIRS",
    "Approver",
    "FetchError",
    "HostRule",
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
    "check_url",
    "fetch",
    "is_private_name",
    "parse_rule",
    "parse_rules",
    "readable_in_home",
    "resolve_readable",
    "to_text",
]
