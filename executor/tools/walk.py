"""Glob patterns and a confined, bounded walk of the files under a folder of the home."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from executor.tools.base import ToolContext, ToolRefused
from executor.tools.confine import is_private_name, resolve_readable, split_relative

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
