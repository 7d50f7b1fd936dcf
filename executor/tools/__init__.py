"""The Executor's concrete tools (SPEC §12): confined, bounded, behind one registry.

The registry is the one door to them: only the allowed ones, and a tool never raises. Whatever
happens inside a tool (a refused path, bad arguments, a bug, a missing file) comes back as a
`ToolResult` with `ok=False`, to be fed back to the model (SPEC §10.6).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import structlog
from pydantic import ValidationError

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
    fence_for,
    is_private_name,
    readable_in_home,
    resolve_readable,
)
from executor.tools.files import CreateDirectory, Glob, Replace, SearchFileContent, WriteFile
from executor.tools.mcp_servers import McpPlace
from executor.tools.mcp_tools import McpTool, McpToolSet, ServerTools, task_mcp_tools
from executor.tools.reading import SKIPPED_DIRS, ListDirectory, ReadFile, ReadManyFiles
from executor.tools.shell import RunShellCommand, sandbox_problem
from executor.tools.web import (
    FetchError,
    HostRule,
    WebFetch,
    WebSearch,
    check_url,
    fetch,
    parse_rule,
    parse_rules,
    to_text,
)

log = structlog.get_logger(__name__)


def builtin_tools() -> dict[str, Tool]:
    """Every concrete tool of SPEC §12, by name."""
    tools: list[Tool] = [
        ListDirectory(),
        ReadFile(),
        ReadManyFiles(),
        WriteFile(),
        Glob(),
        SearchFileContent(),
        Replace(),
        CreateDirectory(),
        RunShellCommand(),
        WebSearch(),
        WebFetch(),
    ]
    return {tool.name: tool for tool in tools}


class ToolRegistry:
    """The tools one role may use in one run, called by name with model-made arguments."""

    def __init__(
        self,
        context: ToolContext,
        allowed: Iterable[str],
        tools: Mapping[str, Tool] | None = None,
    ) -> None:
        self.context = context
        catalogue = builtin_tools() if tools is None else dict(tools)
        self._tools: dict[str, Tool] = {}
        for name in allowed:
            tool = catalogue.get(name)
            if tool is None:
                # The mapping may name tools served elsewhere (a specialised agent): not ours.
                log.info("tool_not_provided", run_id=context.run_id, tool=name)
                continue
            self._tools[name] = tool
        self._written: set[str] = set()

    @property
    def names(self) -> list[str]:
        """The names of the allowed tools."""
        return list(self._tools)

    @property
    def written_files(self) -> frozenset[str]:
        """Every file written through this registry so far (home-relative)."""
        return frozenset(self._written)

    def schemas(self) -> list[dict[str, Any]]:
        """The allowed tools in OpenAI function-tool format."""
        return [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            }
            for tool in self._tools.values()
        ]

    def call(self, name: str, arguments: Mapping[str, Any] | str | None) -> ToolResult:
        """Run tool `name`; every failure comes back as a result, never as an exception."""
        tool = self._tools.get(name)
        if tool is None:
            available = ", ".join(self._tools) or "none"
            return ToolResult.failure(f"tool {name!r} is not available (available: {available})")
        parsed = parse_arguments(arguments)
        if isinstance(parsed, str):
            return ToolResult.failure(f"{name}: {parsed}")
        result = self._run(tool, parsed)
        written = result.data.get("written", [])
        if result.ok and isinstance(written, list):
            self._written.update(str(path) for path in written)
        log.info("tool_called", run_id=self.context.run_id, tool=name, ok=result.ok)
        return result

    def _run(self, tool: Tool, arguments: dict[str, Any]) -> ToolResult:
        run_id = self.context.run_id
        try:
            return tool.run(self.context, arguments)
        except ToolRefused as refused:
            log.warning("tool_refused", run_id=run_id, tool=tool.name, reason=str(refused))
            return ToolResult.failure(str(refused))
        except ValidationError as invalid:
            return ToolResult.failure(f"invalid arguments for {tool.name}: {_explain(invalid)}")
        except Exception as error:
            # Whatever broke, the model gets a value and the run decides; the trace is logged.
            log.error("tool_crashed", run_id=run_id, tool=tool.name, exc_info=True)
            return ToolResult.failure(f"{type(error).__name__}: {error}")


def parse_arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any] | str:
    """Arguments as a dict (a JSON string is parsed), or why they are unusable."""
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments)
        except (ValueError, RecursionError) as error:
            return f"arguments are not valid JSON: {error}"
        if not isinstance(decoded, dict):
            return "arguments must be a JSON object"
        return decoded
    if isinstance(arguments, Mapping):
        return dict(arguments)
    return "arguments must be a JSON object"


def _explain(invalid: ValidationError) -> str:
    problems = []
    for error in invalid.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)


__all__ = [
    "SKIPPED_DIRS",
    "Approver",
    "FetchError",
    "HostRule",
    "McpPlace",
    "McpTool",
    "McpToolSet",
    "SearchError",
    "SearchHit",
    "ServerTools",
    "Tool",
    "ToolContext",
    "ToolLimits",
    "ToolRefused",
    "ToolRegistry",
    "ToolResult",
    "WebSearchProvider",
    "builtin_tools",
    "check_url",
    "fence_for",
    "fetch",
    "is_private_name",
    "parse_rule",
    "parse_rules",
    "readable_in_home",
    "resolve_readable",
    "sandbox_problem",
    "task_mcp_tools",
    "to_text",
]
