"""The Executor's concrete tools (SPEC §12): confined, bounded, behind one registry.

The registry is the one door to them: only the allowed ones, and a tool never raises. Whatever
happens inside a tool (a refused path, bad arguments, a bug, a missing file) comes back as a
`ToolResult` with `ok=False`, to be fed back to the model (SPEC §10.6).

Finding and writing tools (SPEC §12): glob (newest first) and search_file_content (regex)
anywhere in the home; write_file, replace and create_directory only in the run's folders.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import structlog
from pydantic import Field, ValidationError

from executor.tools.base import (
    Approver,
    Arguments,
    ModelTool,
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
    resolve_writable,
)
from executor.tools.mcp_servers import McpPlace
from executor.tools.mcp_tools import McpTool, McpToolSet, ServerTools, task_mcp_tools
from executor.tools.reading import (
    SKIPPED_DIRS,
    ListDirectory,
    ReadFile,
    ReadManyFiles,
    Walk,
    check_pattern,
    find,
    glob_regex,
    is_binary_file,
    looks_binary,
    matches,
    walk_files,
)
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
from multiverse.atomic import atomic_write_text


class GlobArgs(Arguments):
    """Arguments of glob."""

    pattern: str = Field(description="Glob pattern like **/*.md ('**' spans folders).")
    path: str = Field(default=".", description="Folder the pattern is applied in, home-relative.")


class Glob(ModelTool[GlobArgs]):
    """Finds files by glob pattern, newest first."""

    name: ClassVar[str] = "glob"
    description: ClassVar[str] = (
        "Find files whose path (relative to `path`) matches a glob pattern; '*' matches "
        "within one name, '**' spans folders. Results are home-relative, newest first."
    )
    arguments_model: ClassVar[type[Arguments]] = GlobArgs

    def execute(self, context: ToolContext, args: GlobArgs) -> ToolResult:
        """Find the files."""
        base = resolve_readable(context, args.path)
        if not base.is_dir():
            return ToolResult.failure(f"{args.path!r} is not a folder")
        found = find(context, args.pattern, base)
        ordered = sorted(found.files, key=_newest_first)
        cap = context.limits.glob_max_results
        shown = [context.relative(path) for path in ordered[:cap]]
        truncated = found.truncated or len(ordered) > cap
        if not shown:
            return ToolResult.success(f"no file matches {args.pattern!r}", paths=[])
        output = "\n".join(shown)
        if truncated:
            output += f"\n[truncated: {len(shown)} results shown]"
        return ToolResult.success(output, paths=shown, truncated=truncated)


def _newest_first(path: Path) -> tuple[float, str]:
    return (-path.stat().st_mtime, path.as_posix())


class SearchFileContentArgs(Arguments):
    """Arguments of search_file_content."""

    pattern: str = Field(description="Python regular expression searched in each line.")
    path: str = Field(default=".", description="Folder or file to search, home-relative.")
    include: str | None = Field(
        default=None, description="Only files matching this glob (like *.md or assets/**/*.csv)."
    )


class SearchFileContent(ModelTool[SearchFileContentArgs]):
    """Searches text files line by line for a regular expression."""

    name: ClassVar[str] = "search_file_content"
    description: ClassVar[str] = (
        "Search the lines of the text files under `path` for a regular expression; answers "
        "'file:line: text' for each match (home-relative), capped. `include` filters files by "
        "glob; a pattern without '/' matches the file name alone."
    )
    arguments_model: ClassVar[type[Arguments]] = SearchFileContentArgs

    def execute(self, context: ToolContext, args: SearchFileContentArgs) -> ToolResult:
        """Search the files."""
        try:
            regex = re.compile(args.pattern)
        except re.error as error:
            return ToolResult.failure(f"invalid regular expression {args.pattern!r}: {error}")
        base = resolve_readable(context, args.path)
        if not base.exists():
            return ToolResult.failure(f"no such file or folder: {args.path!r}")
        candidates = _candidates(context, base, args.include)
        hits, full = _search(context, candidates.files, regex)
        truncated = full or candidates.truncated
        if not hits:
            return ToolResult.success(f"no match for {args.pattern!r}", matches=0)
        output = "\n".join(hits)
        if truncated:
            output += f"\n[truncated: the first {len(hits)} matches shown]"
        return ToolResult.success(output, matches=len(hits), truncated=truncated)


def _candidates(context: ToolContext, base: Path, include: str | None) -> Walk:
    if base.is_file():
        return Walk([base], truncated=False)
    walked = walk_files(context, base)
    if include is None:
        return walked
    pattern = check_pattern(include)
    regex = glob_regex(pattern)
    basename_only = "/" not in pattern
    kept = [
        path
        for path in walked.files
        if matches(regex, path.relative_to(base).as_posix(), basename_only=basename_only)
    ]
    return Walk(kept, walked.truncated)


def _search(
    context: ToolContext, files: list[Path], regex: re.Pattern[str]
) -> tuple[list[str], bool]:
    limits = context.limits
    hits: list[str] = []
    for path in files:
        if path.stat().st_size > limits.search_max_file_bytes or is_binary_file(path):
            continue
        shown = context.relative(path)
        with path.open(encoding="utf-8", errors="replace", newline="") as handle:
            for number, line in enumerate(handle, start=1):
                text = line.rstrip("\r\n")
                if regex.search(text) is None:
                    continue
                if len(hits) >= limits.search_max_matches:
                    return hits, True
                hits.append(f"{shown}:{number}: {text[: limits.search_max_line_chars]}")
    return hits, False


class WriteFileArgs(Arguments):
    """Arguments of write_file."""

    path: str = Field(
        description="File relative to the home, inside runs/<run_id>/workspace/ or "
        "outputs/<run_id>/."
    )
    content: str = Field(description="The whole new content (UTF-8 text).")


class WriteFile(ModelTool[WriteFileArgs]):
    """Writes a whole text file atomically, creating its folders."""

    name: ClassVar[str] = "write_file"
    description: ClassVar[str] = (
        "Write a UTF-8 text file (replacing it if it exists), creating missing folders. Only "
        "paths inside this run's workspace (runs/<run_id>/workspace/) or outputs/<run_id>/ "
        "may be written."
    )
    arguments_model: ClassVar[type[Arguments]] = WriteFileArgs

    def execute(self, context: ToolContext, args: WriteFileArgs) -> ToolResult:
        """Write the file."""
        path = resolve_writable(context, args.path)
        if path.is_dir():
            return ToolResult.failure(f"{args.path!r} is a folder")
        atomic_write_text(path, args.content)
        shown = context.relative(path)
        size = len(args.content.encode("utf-8"))
        return ToolResult.success(f"wrote {size} bytes to {shown}", path=shown, written=[shown])


class ReplaceArgs(Arguments):
    """Arguments of replace."""

    path: str = Field(description="File relative to the home, in this run's writable folders.")
    old_string: str = Field(min_length=1, description="Exact text to find (not a regex).")
    new_string: str = Field(description="Text that replaces each occurrence.")
    expected_replacements: int = Field(
        default=1, ge=1, description="How many occurrences must exist; otherwise nothing changes."
    )


class Replace(ModelTool[ReplaceArgs]):
    """Replaces an exact string in a file, only if it occurs the expected number of times."""

    name: ClassVar[str] = "replace"
    description: ClassVar[str] = (
        "Replace exact text in a file of this run's workspace or outputs. The file changes "
        "only if `old_string` occurs exactly `expected_replacements` times (default 1)."
    )
    arguments_model: ClassVar[type[Arguments]] = ReplaceArgs

    def execute(self, context: ToolContext, args: ReplaceArgs) -> ToolResult:
        """Replace the text."""
        path = resolve_writable(context, args.path)
        if not path.is_file():
            return ToolResult.failure(f"no such file: {args.path!r}")
        raw = path.read_bytes()
        if looks_binary(raw[:8192]):
            return ToolResult.failure(f"{args.path!r} is a binary file")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return ToolResult.failure(f"{args.path!r} is not valid UTF-8; it was not changed")
        found = text.count(args.old_string)
        if found != args.expected_replacements:
            return ToolResult.failure(
                f"expected {args.expected_replacements} occurrence(s) of old_string in "
                f"{args.path!r}, found {found}; the file was not changed",
                found=found,
            )
        atomic_write_text(path, text.replace(args.old_string, args.new_string))
        shown = context.relative(path)
        return ToolResult.success(
            f"replaced {found} occurrence(s) in {shown}", path=shown, written=[shown]
        )


class CreateDirectoryArgs(Arguments):
    """Arguments of create_directory."""

    path: str = Field(description="Folder relative to the home, in this run's writable folders.")


class CreateDirectory(ModelTool[CreateDirectoryArgs]):
    """Creates a folder (and its parents) in the run's writable folders."""

    name: ClassVar[str] = "create_directory"
    description: ClassVar[str] = (
        "Create a folder and any missing parents, inside this run's workspace or outputs. "
        "An existing folder is fine."
    )
    arguments_model: ClassVar[type[Arguments]] = CreateDirectoryArgs

    def execute(self, context: ToolContext, args: CreateDirectoryArgs) -> ToolResult:
        """Create the folder."""
        path = resolve_writable(context, args.path)
        if path.exists() and not path.is_dir():
            return ToolResult.failure(f"{args.path!r} exists and is not a folder")
        path.mkdir(parents=True, exist_ok=True)
        shown = context.relative(path)
        return ToolResult.success(f"folder {shown} is ready", path=shown)


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
