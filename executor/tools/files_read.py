"""Reading tools (SPEC §12): list_directory, read_file, read_many_files, anywhere in the home."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from executor.documents import convert, document_note, sniff
from executor.tools.base import Arguments, ModelTool, ToolContext, ToolRefused, ToolResult
from executor.tools.confine import is_private_name, resolve_readable
from executor.tools.textio import TextWindow, is_binary_file, read_window, text_window
from executor.tools.walk import find

GLOB_CHARS = frozenset("*?[")
# Documents read as their markdown; HTML stays as written, since a model may edit it.
CONVERTED_KINDS = frozenset({"pdf", "docx", "xlsx", "pptx", "doc", "xls", "ppt"})


class ListDirectoryArgs(Arguments):
    """Arguments of list_directory."""

    path: str = Field(default=".", description="Folder relative to the home ('.' = the home).")


class ListDirectory(ModelTool[ListDirectoryArgs]):
    """Lists a folder: sub-folders first (with a trailing /), then files with their size."""

    name: ClassVar[str] = "list_directory"
    description: ClassVar[str] = (
        "List the entries of a folder of the home: folders first (ending in /), then files "
        "with their size in bytes. Paths are relative to the home."
    )
    arguments_model: ClassVar[type[Arguments]] = ListDirectoryArgs

    def execute(self, context: ToolContext, args: ListDirectoryArgs) -> ToolResult:
        """List the folder."""
        folder = resolve_readable(context, args.path)
        if not folder.is_dir():
            return ToolResult.failure(f"{args.path!r} is not a folder")
        with os.scandir(folder) as scan:
            entries = sorted(
                (e for e in scan if not is_private_name(e.name)),
                key=lambda e: (not _is_dir(e), e.name),
            )
        cap = context.limits.list_max_entries
        lines = [_describe(entry) for entry in entries[:cap]]
        if len(entries) > cap:
            lines.append(f"[… {len(entries) - cap} more entries not shown]")
        shown = context.relative(folder)
        body = "\n".join(lines) if lines else "(empty folder)"
        return ToolResult.success(f"{shown}/\n{body}", path=shown, count=len(entries))


def _is_dir(entry: os.DirEntry[str]) -> bool:
    # A symlink is never entered by a listing: it could point outside the home.
    return entry.is_dir(follow_symlinks=False)


def _describe(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return f"{entry.name}@ (symlink)"
    if entry.is_dir(follow_symlinks=False):
        return f"{entry.name}/"
    return f"{entry.name} ({entry.stat(follow_symlinks=False).st_size} bytes)"


class ReadFileArgs(Arguments):
    """Arguments of read_file."""

    path: str = Field(description="File relative to the home.")
    offset: int = Field(default=0, ge=0, description="First line to read, 0-based.")
    limit: int | None = Field(default=None, ge=1, description="How many lines at most.")


class ReadFile(ModelTool[ReadFileArgs]):
    """Reads a text file (or a window of its lines), capped in size."""

    name: ClassVar[str] = "read_file"
    description: ClassVar[str] = (
        "Read a UTF-8 text file of the home; a PDF, Word, Excel or PowerPoint file is read as "
        "markdown (## Page N, ## Slide N, ## Sheet headings). Large files are cut at a size cap "
        "with a note telling how to continue (offset = first line, 0-based; limit = number of "
        "lines)."
    )
    arguments_model: ClassVar[type[Arguments]] = ReadFileArgs

    def execute(self, context: ToolContext, args: ReadFileArgs) -> ToolResult:
        """Read the file."""
        path = resolve_readable(context, args.path)
        read = _read(path, args.path, args.offset, args.limit, context.limits.read_max_bytes)
        if isinstance(read, str):
            return ToolResult.failure(read)
        window, converted = read
        text = window.text + converted
        if window.lossy:
            text += "\n[note: the file is not valid UTF-8; undecodable bytes are shown as �]"
        if window.more:
            last = window.first_line + window.line_count - 1
            text += (
                f"\n[truncated: showed lines {window.first_line}-{last}; more follow, "
                f"continue with offset={args.offset + window.line_count}]"
            )
        return ToolResult.success(
            text,
            path=context.relative(path),
            first_line=window.first_line,
            line_count=window.line_count,
            truncated=window.more,
        )


def _unreadable(path: Path, raw: str) -> str | None:
    if not path.exists():
        return f"no such file: {raw!r}"
    if path.is_dir():
        return f"{raw!r} is a folder; use list_directory"
    if not path.is_file():
        return f"{raw!r} is not a regular file"
    return None


def _read(
    path: Path, raw: str, offset: int, limit: int | None, max_bytes: int
) -> tuple[TextWindow, str] | str:
    """A window of the file's text and a note when it is a converted document, or why the
    file cannot be read. PDF, Word, Excel and PowerPoint files are read as their markdown."""
    problem = _unreadable(path, raw)
    if problem is not None:
        return problem
    if sniff(path) in CONVERTED_KINDS:
        document = convert(path)
        if document.markdown is None:
            return f"{raw!r} cannot be read: {document.note}"
        note = f"\n[note: {document_note(document)}, converted to markdown]"
        return text_window(document.markdown, offset, limit, max_bytes), note
    if is_binary_file(path):
        return f"{raw!r} is a binary file; only text files can be read"
    return read_window(path, offset, limit, max_bytes), ""


class ReadManyFilesArgs(Arguments):
    """Arguments of read_many_files."""

    paths: list[str] = Field(
        min_length=1, description="Files or glob patterns (like assets/**/*.md), home-relative."
    )


class ReadManyFiles(ModelTool[ReadManyFilesArgs]):
    """Reads several text files at once, each under a heading, within caps."""

    name: ClassVar[str] = "read_many_files"
    description: ClassVar[str] = (
        "Read several text files of the home, given as paths or glob patterns "
        "('**' spans folders). Each file comes under a '--- path ---' heading; binary files "
        "are skipped; the number of files and total size are capped."
    )
    arguments_model: ClassVar[type[Arguments]] = ReadManyFilesArgs

    def execute(self, context: ToolContext, args: ReadManyFilesArgs) -> ToolResult:
        """Read the files."""
        files, skipped = _expand(context, args.paths)
        limits = context.limits
        sections: list[str] = []
        budget = limits.read_many_max_bytes
        for index, path in enumerate(files):
            if len(sections) >= limits.read_many_max_files or budget <= 0:
                skipped.append(f"{len(files) - index} more file(s) not read: over the cap")
                break
            shown = context.relative(path)
            read = _read(path, shown, 0, None, min(limits.read_max_bytes, budget))
            if isinstance(read, str):
                skipped.append(read)
                continue
            window, converted = read
            budget -= len(window.text.encode("utf-8"))
            note = "\n[truncated at the size cap]" if window.more else ""
            sections.append(f"--- {shown} ---\n{window.text}{converted}{note}")
        skipped = _shorten(skipped)
        if not sections:
            return ToolResult.failure("no file could be read: " + "; ".join(skipped or ["none"]))
        output = "\n\n".join(sections)
        if skipped:
            output += "\n\n[skipped: " + "; ".join(skipped) + "]"
        return ToolResult.success(output, files=len(sections), skipped=skipped)


def _shorten(notes: list[str], keep: int = 20) -> list[str]:
    # A wide glob over many binaries must not turn the answer into a list of refusals.
    if len(notes) <= keep:
        return notes
    return [*notes[:keep], f"and {len(notes) - keep} more"]


def _expand(context: ToolContext, raws: list[str]) -> tuple[list[Path], list[str]]:
    files: list[Path] = []
    skipped: list[str] = []
    for raw in raws:
        try:
            if GLOB_CHARS.intersection(raw):
                found = find(context, raw, context.home).files
                if not found:
                    skipped.append(f"{raw}: no file matches")
                files.extend(found)
            else:
                files.append(resolve_readable(context, raw))
        except ToolRefused as refused:
            skipped.append(str(refused))
    unique = list(dict.fromkeys(files))
    return unique, skipped
