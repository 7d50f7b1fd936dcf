"""Writing tools (SPEC §12): write_file, replace, create_directory, only in the run's folders.

Every write is atomic (multiverse.atomic) and reports what it wrote in `data["written"]`, which
the registry collects for the Executor's result signal.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from executor.tools.base import Arguments, ModelTool, ToolContext, ToolResult
from executor.tools.confine import resolve_writable
from executor.tools.textio import looks_binary
from multiverse.atomic import atomic_write_text


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
