"""Path confinement (SPEC §12): reads stay inside the home, writes inside the run's own folders.

Whatever arguments a tool receives (a model's, or one steered by a hostile asset), every path
goes through these checks before any file is opened. Paths are relative to the home; `..`,
absolute paths, NUL bytes, private state and key files are refused, and every existing symlink
on the way is resolved so that a link cannot lead outside.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from executor.tools.base import ToolContext, ToolRefused

# Folders a tool never enters: the daemon's private state and version-control internals
# (a remote URL there may carry a token).
PRIVATE_DIRS = frozenset({".multiverse", ".git"})
# Names that usually hold secrets; a tool neither reads nor writes them.
KEY_FILE_PATTERNS = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".pypirc",
    ".npmrc",
    ".git-credentials",
)


def is_private_name(name: str) -> bool:
    """Whether one path component names private state or a key file."""
    return name in PRIVATE_DIRS or any(fnmatch.fnmatchcase(name, p) for p in KEY_FILE_PATTERNS)


def split_relative(raw: str) -> list[str]:
    """The components of a home-relative path; refuses what could leave the home."""
    if "\x00" in raw:
        raise ToolRefused("a path with a NUL byte is refused")
    if raw.startswith("/"):
        raise ToolRefused(f"absolute path {raw!r} is refused: give a path relative to the home")
    if raw.startswith("~"):
        raise ToolRefused(f"path {raw!r} is refused: '~' is not expanded; paths are home-relative")
    parts = [part for part in raw.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ToolRefused(f"path {raw!r} is refused: '..' may not appear in a path")
    for part in parts:
        if is_private_name(part):
            raise ToolRefused(f"path {raw!r} is refused: {part!r} is private")
    return parts


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def readable_in_home(home: Path, raw: str) -> Path:
    """The real path that may be read for `raw` in a resolved `home`; raises ToolRefused otherwise.

    The read tools' rule, usable where there is no run (a SIMPLE_TASK reads, never writes).
    """
    logical = home.joinpath(*split_relative(raw))
    # realpath resolves every existing component, so a symlink anywhere on the way is followed
    # to its real target before the target is judged.
    real = Path(os.path.realpath(logical))
    if not _inside(real, home):
        raise ToolRefused(f"path {raw!r} is refused: it leads outside the home")
    for part in real.relative_to(home).parts:
        if is_private_name(part):
            raise ToolRefused(f"path {raw!r} is refused: it leads to private {part!r}")
    return real


def resolve_readable(context: ToolContext, raw: str) -> Path:
    """The real path a tool may read for `raw`; raises ToolRefused otherwise."""
    return readable_in_home(context.home, raw)


def writable_roots(context: ToolContext) -> tuple[Path, Path]:
    """The only folders a tool may write into: the run's workspace and outputs/<run_id>/."""
    return (
        Path(os.path.realpath(context.workspace)),
        Path(os.path.realpath(context.outputs)),
    )


def resolve_writable(context: ToolContext, raw: str) -> Path:
    """The real path a tool may write for `raw`; raises ToolRefused otherwise."""
    real = resolve_readable(context, raw)
    logical = context.home.joinpath(*split_relative(raw))
    roots = writable_roots(context)
    logical_roots = (context.workspace, context.outputs)
    if not any(_inside(real, root) for root in roots) or not any(
        _inside(logical, root) for root in logical_roots
    ):
        allowed = ", ".join(context.relative(root) + "/" for root in logical_roots)
        raise ToolRefused(f"writing {raw!r} is refused: writes go only into {allowed}")
    return real
