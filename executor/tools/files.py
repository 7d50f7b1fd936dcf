"""Finding and writing tools (SPEC §12): glob (newest first) and search_file_content (regex)
anywhere in the home; write_file, replace and create_directory only in the run's folders.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from executor.tools.base import (
    Arguments,
    ModelTool,
    ToolContext,
    ToolResult,
    resolve_readable,
    resolve_writable,
)
from executor.tools.reading import (
    Walk,
    check_pattern,
    find,
    glob_regex,
    is_binary_file,
    looks_binary,
    matches,
    walk_files,
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
