"""Input files that are not read, and why (SPEC §2, §6.6 T03): nothing outside the home is read.

An entry of assets/ or guidelines/ is looked at without reading it (`look`: lstat, stat, the
real path), a pure decision says whether it may be read (`why_unread`), and a file that may is
opened without ever blocking (`open_regular`). A file that is not read gets a catalog row whose
summary is a note starting with NOTE_MARKER; `is_unread` recognises such a row everywhere.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import BinaryIO

from multiverse.models import AssetType, CatalogEntry

NOTE_MARKER = "Not read: "
INPUT_TYPES = (AssetType.ORIGINAL_INPUT, AssetType.GUIDELINE_DOC)


class Kind(StrEnum):
    """What an entry is, its symbolic link followed."""

    FILE = "file"
    FOLDER = "folder"
    FIFO = "named pipe (FIFO)"
    SOCKET = "socket"
    DEVICE = "device"
    MISSING = "missing"
    LOOP = "loop"
    UNKNOWN = "file of an unknown type"


@dataclass(frozen=True)
class Sighting:
    """What was observed of one entry, without reading it."""

    kind: Kind
    link_target: str | None = None  # where a symbolic link leads (its real path)
    real_path: str = ""  # the entry's real path, every link followed
    inside: bool = True  # whether the real path lies in the home
    error: str | None = None  # why it could not be looked at or read (strerror)


@dataclass(frozen=True)
class Unread:
    """Why an entry is not read, and what the user can do about it."""

    reason: str
    advice: str

    @property
    def note(self) -> str:
        """The catalog summary of the entry."""
        return NOTE_MARKER + self.reason


COPY = "copy the file into assets/ (or guidelines/) instead of linking it"
RELINK = "remove the link, or copy the file it should lead to into assets/"
REGULAR = "replace it with a regular file"
PERMISSIONS = "fix its permissions (or copy it again) so that it can be read"


def why_unread(seen: Sighting) -> Unread | None:
    """Why the entry must not be read, or None when it may be read as a file."""
    if not seen.inside:
        if seen.link_target is not None:
            return Unread(
                f"a symbolic link to a place outside the home ({seen.link_target}); "
                "nothing outside the home is read",
                COPY,
            )
        return Unread(
            f"it lies outside the home ({seen.real_path}), through a linked folder; "
            "nothing outside the home is read",
            COPY,
        )
    if seen.kind is Kind.LOOP:
        return Unread("a symbolic link that loops and never reaches a file", RELINK)
    if seen.kind is Kind.MISSING:
        target = f"its target {seen.link_target} does not exist" if seen.link_target else "gone"
        return Unread(f"a broken symbolic link ({target})", RELINK)
    if seen.kind is Kind.FOLDER:
        if seen.link_target is not None:
            return Unread("a symbolic link to a folder; linked folders are not followed", COPY)
        listed = seen.error or "unknown error"
        return Unread(f"a folder that cannot be listed ({listed})", PERMISSIONS)
    if seen.error is not None:
        return Unread(f"it cannot be read ({seen.error})", PERMISSIONS)
    if seen.kind is not Kind.FILE:
        return Unread(f"a {seen.kind.value}, not a regular file", REGULAR)
    return None


def is_note(summary: str) -> bool:
    """Whether a summary is the note of a file that was not read."""
    return summary.startswith(NOTE_MARKER)


def is_unread(entry: CatalogEntry) -> bool:
    """Whether a catalog row stands for an input file that was not read (never a reference)."""
    return entry.run_id is None and entry.asset_type in INPUT_TYPES and is_note(entry.summary)


def look(path: Path, home: Path) -> Sighting:
    """What `path` is (its link followed) and where it really lies; nothing is opened."""
    try:
        own = os.lstat(path)
    except OSError as error:
        return Sighting(Kind.MISSING, error=_why(error))
    real = os.path.realpath(path)
    target = real if stat.S_ISLNK(own.st_mode) else None
    inside = Path(real).is_relative_to(os.path.realpath(home))
    if not inside:  # nothing outside the home is looked at further
        return Sighting(Kind.UNKNOWN, target, real, inside)
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        if error.errno == errno.ELOOP:
            return Sighting(Kind.LOOP, target, real, inside)
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            return Sighting(Kind.MISSING, target, real, inside)
        return Sighting(Kind.UNKNOWN, target, real, inside, _why(error))
    return Sighting(_kind(mode), target, real, inside)


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading if it is a regular file; never blocks on a FIFO (OSError else)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _kind(mode: int) -> Kind:
    if stat.S_ISREG(mode):
        return Kind.FILE
    if stat.S_ISDIR(mode):
        return Kind.FOLDER
    if stat.S_ISFIFO(mode):
        return Kind.FIFO
    if stat.S_ISSOCK(mode):
        return Kind.SOCKET
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return Kind.DEVICE
    return Kind.UNKNOWN


def _why(error: OSError) -> str:
    return error.strerror or str(error)
