"""What lies in inbox/, and which of it has settled (SPEC §2, §14).

Everything directly in inbox/ but the daemon's own folders and editor/temp names is an entry: a
request candidate (a regular *.md or *.txt file inside the home) or a misfit, with the reason it
cannot be a request (a symlink, a folder, a pipe, another suffix, a file whose real path leaves
the home). An entry is taken (or turned away) only once it has settled (`settle_wait`): no
process holds it open for writing, where /proc can tell, and its size and times have not
changed for the settle time.

Also here: names of files that editors, downloaders and tools leave behind.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Collection
from pathlib import Path
from typing import NamedTuple

from multiverse.atomic import open_for_writing
from multiverse.home import Home

# Suffixes of temporary, partial, swap and backup files (compared lower-case).
_IGNORED_SUFFIXES = (
    "~",  # emacs, gedit, many others: backup copy
    ".tmp",
    ".temp",
    ".part",  # Firefox, wget, curl -C: an unfinished download
    ".crdownload",  # Chrome: an unfinished download
    ".bak",
    ".kate-swp",
    "___jb_tmp___",  # JetBrains "safe write": the new content before the rename
    "___jb_old___",  # JetBrains "safe write": the old content kept aside
)
# vim swap files: .swp, then .swo, .swn … down to .swa as more sessions open; .swx is a probe.
_VIM_SWAP = re.compile(r".*\.sw[a-px]", re.IGNORECASE)
# `sed -i` writes its result to "sed" + 6 random letters/digits, then renames it.
_SED_TEMP = re.compile(r"sed[A-Za-z0-9]{6}")
# vim checks that a folder is writable by creating "4913" (then 5036, 5159 … if taken).
_VIM_PROBE_FIRST = 4913
_VIM_PROBE_STEP = 123


def _is_vim_probe(name: str) -> bool:
    if not name.isdigit() or not name.isascii():
        return False
    number = int(name)
    return number >= _VIM_PROBE_FIRST and (number - _VIM_PROBE_FIRST) % _VIM_PROBE_STEP == 0


def is_ignorable_name(name: str) -> bool:
    """True for hidden files and editor swap/temp/backup names (a base name, or a path's)."""
    base = os.path.basename(name.rstrip("/\\")) if ("/" in name or "\\" in name) else name
    if not base or base.startswith("."):
        # Dotfiles include vim's .x.swp, emacs's .#x lock links and .DS_Store.
        return True
    lowered = base.lower()
    if lowered.endswith(_IGNORED_SUFFIXES):
        return True
    if len(base) >= 2 and base.startswith("#") and base.endswith("#"):
        return True  # emacs auto-save: #name#
    if base.startswith("~$"):
        return True  # Microsoft Office: the owner (lock) file of an open document
    return bool(_VIM_SWAP.fullmatch(base) or _SED_TEMP.fullmatch(base) or _is_vim_probe(base))


REQUEST_SUFFIXES = frozenset({".md", ".txt"})
OWN_FOLDERS = frozenset({"done", "rejected"})
# A file held open for writing is looked at again after the settle time (at least 0.1 s).
_MIN_RECHECK_NS = 100_000_000
SYMLINK = (
    "it is a symbolic link, not a file: links are never followed, so nothing was read from "
    "where it points; copy the request text itself into a file in inbox/"
)
FOLDER = (
    "it is a folder: requests are *.md or *.txt files directly in inbox/, not in sub-folders; "
    "move each request file into inbox/ itself, and put documents into assets/ and refer to "
    "them from a request"
)
SPECIAL = "it is not a regular file (a named pipe, socket or device): requests are text files"
SUFFIX = (
    "only *.md and *.txt files are requests; put documents into assets/ and refer to them "
    "from a request"
)


class Stamp(NamedTuple):
    """What tells that a file changed: its identity, size and times, from one (l)stat."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, info: os.stat_result) -> Stamp:
        """The stamp of a stat result."""
        return cls(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class InboxEntry(NamedTuple):
    """Something dropped into inbox/: a request candidate, or a misfit with the reason why."""

    path: Path
    stamp: Stamp
    misfit: str | None = None
    regular: bool = True


class InboxSurvey(NamedTuple):
    """The settled entries (oldest first) and when to look again for the unsettled ones."""

    ready: list[InboxEntry]
    wait: float | None  # seconds until the earliest unsettled entry may settle; None: none is


def settle_wait(stamp: Stamp, now_ns: int, writer_open: bool | None, settle_ns: int) -> float:
    """Seconds until a file may count as settled; 0.0 when it is settled now (pure).

    Settled: no process holds it open for writing (`writer_open` False, or None where the OS
    cannot tell) and its newest time is at least `settle_ns` old, so a file that has long been
    there is taken at once. Every write sets both times to the clock; an mtime ahead of the
    clock was set by a tool (unzip, `touch -d`, `cp -p` from a machine whose clock runs ahead),
    so only the ctime counts then; a ctime ahead of the clock (the clock was set back) counts
    as now.
    """
    if writer_open:
        return max(settle_ns, _MIN_RECHECK_NS) / 1e9
    newest = stamp.ctime_ns if stamp.mtime_ns > now_ns else max(stamp.mtime_ns, stamp.ctime_ns)
    age = now_ns - min(newest, now_ns)
    return 0.0 if age >= settle_ns else (settle_ns - age) / 1e9


def inbox_entries(home: Home) -> list[InboxEntry]:
    """Everything directly in inbox/ but its own folders and editor/temp names, oldest first."""
    try:
        scanned = list(os.scandir(home.inbox))
    except FileNotFoundError:
        return []
    root = os.path.realpath(home.root)
    found: list[InboxEntry] = []
    for entry in scanned:
        if entry.name in OWN_FOLDERS or is_ignorable_name(entry.name):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # moved away (by an editor or another process) while we looked
        regular = stat.S_ISREG(info.st_mode)
        misfit = _misfit(entry.name, info.st_mode) or _outside(entry.path, root)
        found.append(InboxEntry(Path(entry.path), Stamp.of(info), misfit, regular))
    found.sort(key=lambda item: (item.stamp.mtime_ns, item.path.name))
    return found


def _misfit(name: str, mode: int) -> str | None:
    """Why an entry cannot be a request (from its lstat mode and name), or None."""
    if stat.S_ISLNK(mode):
        return SYMLINK
    if stat.S_ISDIR(mode):
        return FOLDER
    if not stat.S_ISREG(mode):
        return SPECIAL
    if Path(name).suffix.lower() not in REQUEST_SUFFIXES:
        return SUFFIX
    return None


def _outside(path: str, root: str) -> str | None:
    """Why a request file whose real path leaves the home (inbox/ linked elsewhere) is refused."""
    real = os.path.realpath(path)
    if real.startswith(root.rstrip(os.sep) + os.sep):
        return None
    return f"its real path {real} lies outside the home: requests are files inside the home"


def pending_requests(home: Home) -> list[Path]:
    """The regular *.md and *.txt files directly in inbox/, oldest first (mtime, then name)."""
    return [entry.path for entry in inbox_entries(home) if entry.misfit is None]


def survey_inbox(
    home: Home, settle_ms: int, skip: Collection[str] = (), now_ns: int | None = None
) -> InboxSurvey:
    """Which entries have settled (to take in or turn away), and when to look at the rest."""
    now = time.time_ns() if now_ns is None else now_ns
    settle_ns = settle_ms * 1_000_000
    ready: list[InboxEntry] = []
    waits: list[float] = []
    for entry in inbox_entries(home):
        if entry.path.name in skip:
            continue
        wait = settle_wait(entry.stamp, now, None, settle_ns)
        if wait == 0 and entry.regular:
            # Only a file quiet for the settle time is worth the scan of /proc.
            writer = open_for_writing(entry.stamp.device, entry.stamp.inode)
            wait = settle_wait(entry.stamp, now, writer, settle_ns)
        if wait == 0:
            ready.append(entry)
        else:
            waits.append(wait)
    return InboxSurvey(ready, min(waits) if waits else None)
