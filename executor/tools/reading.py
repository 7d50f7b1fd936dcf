"""Reading tools (SPEC §12): list_directory, read_file, read_many_files, anywhere in the home.

Also here: bounded text reading; glob patterns and a confined, bounded walk of the files under a
folder of the home.
"""

from __future__ import annotations

import codecs
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, ClassVar

from pydantic import Field

from executor.tools.base import (
    Arguments,
    ModelTool,
    ToolContext,
    ToolRefused,
    ToolResult,
    is_private_name,
    resolve_readable,
    split_relative,
)
from multiverse.documents import convert, document_note, sniff

BINARY_SAMPLE_BYTES = 8192
_SKIP_CHUNK = 1 << 16


@dataclass(frozen=True)
class TextWindow:
    """Lines `first_line`.. of a text file, and whether more follow."""

    text: str
    first_line: int
    line_count: int
    more: bool
    lossy: bool


def looks_binary(sample: bytes) -> bool:
    """Whether a file's first bytes mark it as binary (a NUL byte, as git and grep judge)."""
    return b"\x00" in sample


def is_binary_file(path: Path) -> bool:
    """Whether the file at `path` is binary."""
    with path.open("rb") as handle:
        return looks_binary(handle.read(BINARY_SAMPLE_BYTES))


def decode(data: bytes, *, cut: bool) -> tuple[str, bool]:
    """UTF-8 text of `data` and whether bytes had to be replaced.

    When `cut`, a character split by the cut at the end is dropped instead of replaced.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
    try:
        return decoder.decode(data, final=not cut), False
    except UnicodeDecodeError:
        lossy = codecs.getincrementaldecoder("utf-8")(errors="replace")
        return lossy.decode(data, final=not cut), True


def _skip_lines(handle: BinaryIO, count: int) -> None:
    skipped = 0
    while skipped < count:
        # Bounded reads: one enormous line must not be loaded whole just to be skipped.
        chunk = handle.readline(_SKIP_CHUNK)
        if not chunk:
            return
        if chunk.endswith(b"\n"):
            skipped += 1


def read_window(path: Path, offset: int, limit: int | None, max_bytes: int) -> TextWindow:
    """Read up to `limit` lines from line `offset` (0-based), at most `max_bytes` bytes."""
    with path.open("rb") as handle:
        return _window(handle, offset, limit, max_bytes)


def text_window(text: str, offset: int, limit: int | None, max_bytes: int) -> TextWindow:
    """`read_window` over a text already in memory (a document converted to markdown)."""
    return _window(io.BytesIO(text.encode("utf-8")), offset, limit, max_bytes)


def _window(handle: BinaryIO, offset: int, limit: int | None, max_bytes: int) -> TextWindow:
    lines: list[bytes] = []
    used = 0
    more = False
    cut = False
    _skip_lines(handle, offset)
    while limit is None or len(lines) < limit:
        line = handle.readline(max_bytes - used + 1)
        if not line:
            break
        if used + len(line) > max_bytes:
            more = True
            if not lines:
                # A single line longer than the cap: show its beginning.
                lines.append(line[:max_bytes])
                cut = True
            break
        lines.append(line)
        used += len(line)
    else:
        more = handle.read(1) != b""
    text, lossy = decode(b"".join(lines), cut=cut)
    return TextWindow(text, offset + 1, len(lines), more, lossy)


# Folders that are never worth a walk: private state, caches and installed dependencies.
SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", ".venv", ".mypy_cache", ".ruff_cache"})


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex matching home-style relative paths: `**` any folders, `*` and `?` one name."""
    out: list[str] = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:[^/]*/)*")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        elif pattern[index] == "[" and "]" in pattern[index + 2 :]:
            end = pattern.index("]", index + 2)
            body = pattern[index + 1 : end]
            negate = body.startswith("!")
            body = re.escape(body[1:] if negate else body).replace("\\-", "-")
            out.append(f"[{'^' if negate else ''}{body}]")
            index = end + 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return re.compile("".join(out), re.DOTALL)


def check_pattern(pattern: str) -> str:
    """A glob pattern if it cannot name anything outside the folder it is applied to."""
    if not pattern.strip():
        raise ToolRefused("an empty pattern is refused")
    split_relative(pattern)
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return pattern


def matches(pattern: re.Pattern[str], relative: str, *, basename_only: bool) -> bool:
    """Whether a relative path matches; `basename_only` matches the file name alone."""
    target = relative.rsplit("/", 1)[-1] if basename_only else relative
    return pattern.fullmatch(target) is not None


@dataclass(frozen=True)
class Walk:
    """Files found under a folder (real paths), and whether the walk stopped at its cap."""

    files: list[Path]
    truncated: bool


def walk_files(context: ToolContext, base: Path) -> Walk:
    """Every readable file under `base`, without following directory symlinks."""
    files: list[Path] = []
    seen = 0
    cap = context.limits.walk_max_entries
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not _skipped(d))
        for name in sorted(filenames):
            seen += 1
            if seen > cap:
                return Walk(files, truncated=True)
            path = Path(dirpath) / name
            readable = _readable(context, path)
            if readable is not None and readable.is_file():
                files.append(path)
    return Walk(files, truncated=False)


def _left_out(context: ToolContext, entry: os.DirEntry[str]) -> bool:
    """Whether a listed entry is (or links to) a file the confirmed request leaves out."""
    if not context.left_out:
        return False
    real = Path(os.path.realpath(entry.path))
    return real.is_relative_to(context.home) and context.relative(real) in context.left_out


def _skipped(name: str) -> bool:
    return name in SKIPPED_DIRS or is_private_name(name)


def _readable(context: ToolContext, path: Path) -> Path | None:
    try:
        return resolve_readable(context, context.relative(path))
    except ToolRefused:
        return None


def split_glob(pattern: str) -> tuple[str, str]:
    """The literal folder a pattern starts in, and the rest of the pattern relative to it."""
    parts = pattern.split("/")
    literal: list[str] = []
    for part in parts[:-1]:
        if any(char in part for char in "*?["):
            break
        literal.append(part)
    return "/".join(literal) or ".", "/".join(parts[len(literal) :])


def find(context: ToolContext, pattern: str, base: Path) -> Walk:
    """The readable files under `base` whose path relative to `base` matches `pattern`."""
    start_raw, rest = split_glob(check_pattern(pattern))
    start = resolve_readable(context, context.relative(base) + "/" + start_raw)
    if not start.is_dir():
        return Walk([], truncated=False)
    regex = glob_regex(rest)
    walked = walk_files(context, start)
    found = [
        path
        for path in walked.files
        if matches(regex, path.relative_to(start).as_posix(), basename_only=False)
    ]
    return Walk(found, walked.truncated)


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
                (e for e in scan if not is_private_name(e.name) and not _left_out(context, e)),
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
