"""Inbox intake (SPEC §2, §5, §14): find dropped requests, read them safely, file them away.

A request is a regular *.md or *.txt file directly in inbox/, optionally opening with YAML front
matter (`mode:`, `title:`). Reading is split in two: `read_request` does the I/O (it checks the
size before reading anything and never follows a symlink) and `parse_request` decides, purely,
whether the bytes are a usable request. Handled files move to inbox/done/; unusable ones (empty,
binary, non-UTF-8, oversized, bad front matter) and everything else found there (symlinks,
sub-folders, other suffixes, pipes) move to inbox/rejected/ with a `<name>.reason.md` beside
them. Nothing is ever deleted or overwritten: a name already taken gets -1, -2 … before its
suffix. Editor and temporary names (`editor_files`) are left alone.

A file is taken only once it has settled (`settle_wait`): no process holds it open for writing
(where /proc can tell) and its size and times have not changed for the settle time.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import time
from collections.abc import Collection, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import structlog
import yaml
from pydantic import BaseModel, ConfigDict

from multiverse.atomic import atomic_write_text
from multiverse.contracts import Mode
from multiverse.errors import UserError
from multiverse.home import Home
from multiverse.writers import open_for_writing
from orchestrator.editor_files import is_ignorable_name

__all__ = [
    "DEFAULT_MAX_BYTES",
    "InboxEntry",
    "InboxRequest",
    "InboxSurvey",
    "RequestChanged",
    "RequestRejected",
    "Stamp",
    "inbox_entries",
    "is_ignorable_name",
    "move_to_done",
    "parse_request",
    "pending_requests",
    "read_request",
    "reject",
    "reply_path",
    "settle_wait",
    "shown_path",
    "survey_inbox",
]

log = structlog.get_logger(__name__)

DEFAULT_MAX_BYTES = 1024 * 1024
REQUEST_SUFFIXES = frozenset({".md", ".txt"})
REASON_SUFFIX = ".reason.md"
REPLY_SUFFIX = ".reply.md"
TITLE_MAX_CHARS = 120
OWN_FOLDERS = frozenset({"done", "rejected"})
# A file held open for writing is looked at again after the settle time (at least 0.1 s).
_MIN_RECHECK_NS = 100_000_000

_MODE_ALIASES = {
    "simple": Mode.SIMPLE_TASK,
    "simple_task": Mode.SIMPLE_TASK,
    "initial": Mode.INITIAL_RUN,
    "initial_run": Mode.INITIAL_RUN,
    "continuous": Mode.CONTINUOUS_RUN,
    "continuous_run": Mode.CONTINUOUS_RUN,
}
_BOM = b"\xef\xbb\xbf"
_HEADING = re.compile(r"#{1,6}(?:\s+(.*?))?(?:\s+#+)?\s*")
_SYMLINK = (
    "it is a symbolic link, not a file: links are never followed, so nothing was read from "
    "where it points; copy the request text itself into a file in inbox/"
)
_FOLDER = (
    "it is a folder: requests are *.md or *.txt files directly in inbox/, not in sub-folders; "
    "move each request file into inbox/ itself, and put documents into assets/ and refer to "
    "them from a request"
)
_SPECIAL = "it is not a regular file (a named pipe, socket or device): requests are text files"
_SUFFIX = (
    "only *.md and *.txt files are requests; put documents into assets/ and refer to them "
    "from a request"
)


class RequestRejected(UserError):
    """An inbox file that cannot be a request; `reason` says why, for the reason file."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"inbox/{name} rejected: {reason}")


class InboxRequest(BaseModel):
    """A readable request: its text, its body without front matter, title and forced mode."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    text: str
    body: str
    title: str
    forced_mode: Mode | None = None
    content_hash: str


class RequestChanged(Exception):
    """The file changed since it was judged settled: it is still being written; look later."""


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
        return _SYMLINK
    if stat.S_ISDIR(mode):
        return _FOLDER
    if not stat.S_ISREG(mode):
        return _SPECIAL
    if Path(name).suffix.lower() not in REQUEST_SUFFIXES:
        return _SUFFIX
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


def read_request(
    path: Path, max_bytes: int = DEFAULT_MAX_BYTES, settled: Stamp | None = None
) -> InboxRequest:
    """Read and check one inbox file; raise RequestRejected with a clear reason if unusable.

    A symlink is never opened. With `settled`, a file whose stamp is no longer that one (it
    changed since it was judged settled) raises RequestChanged and is left where it is.
    """
    try:
        # O_NONBLOCK: a named pipe must not block the open; it is then refused by its type.
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise RequestRejected(path.name, _SYMLINK) from None
        raise
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RequestRejected(path.name, _FOLDER if stat.S_ISDIR(info.st_mode) else _SPECIAL)
        _check_settled(path, info, settled)
        if info.st_size > max_bytes:
            raise RequestRejected(path.name, _too_big(info.st_size, max_bytes))
        # One byte more than allowed: the file may have grown since the stat.
        data = handle.read(max_bytes + 1)
        _check_settled(path, os.fstat(fd), settled)
    return parse_request(path.name, data, max_bytes)


def _check_settled(path: Path, info: os.stat_result, settled: Stamp | None) -> None:
    if settled is not None and Stamp.of(info) != settled:
        raise RequestChanged(f"inbox/{path.name} changed since it was judged settled")


def parse_request(name: str, data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> InboxRequest:
    """Decide whether `data` is a usable request and split it into its parts (pure)."""
    if len(data) > max_bytes:
        raise RequestRejected(name, _too_big(len(data), max_bytes))
    if not data:
        raise RequestRejected(name, "the file is empty: there is no request to read")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise RequestRejected(
            name,
            f"the file is binary, not text (a NUL byte at byte {nul}); "
            "if it is UTF-16 text, save it as UTF-8",
        )
    raw = data[len(_BOM) :] if data.startswith(_BOM) else data
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        at = error.start + (len(data) - len(raw))
        raise RequestRejected(
            name,
            f"the file is not valid UTF-8 (byte {at} is 0x{data[at]:02x}); "
            "save it with UTF-8 encoding",
        ) from None
    text = decoded.replace("\r\n", "\n")
    front, body = _split_front_matter(name, text)
    if not body.strip():
        what = "has front matter but no request text" if front else "holds only whitespace"
        raise RequestRejected(name, f"the file {what}: there is no request to read")
    return InboxRequest(
        name=name,
        text=text,
        body=body,
        title=_title(front, body),
        forced_mode=_forced_mode(name, front),
        content_hash=hashlib.sha256(data).hexdigest(),
    )


def _too_big(size: int, max_bytes: int) -> str:
    return (
        f"the file is too large ({size} bytes; the limit is {max_bytes} bytes); "
        "put large material into assets/ and refer to it from a short request"
    )


def _split_front_matter(name: str, text: str) -> tuple[dict[str, Any], str]:
    """Front matter (a mapping) and the body after it; no closing `---` means no front matter."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return {}, text
    closing = next(
        (index for index, line in enumerate(lines[1:], 1) if line.rstrip() in ("---", "...")),
        None,
    )
    if closing is None:
        # A lone leading `---` is a markdown thematic break, not front matter.
        return {}, text
    source = "\n".join(lines[1:closing])
    try:
        loaded = yaml.safe_load(source)
    except yaml.YAMLError as error:
        problem = " ".join(str(error).split())
        raise RequestRejected(name, f"the front matter is not valid YAML: {problem}") from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise RequestRejected(
            name,
            "the front matter (between the leading `---` lines) must be `key: value` lines, "
            f"found a {type(loaded).__name__}",
        )
    return loaded, "\n".join(lines[closing + 1 :])


def _forced_mode(name: str, front: dict[str, Any]) -> Mode | None:
    value = front.get("mode")
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    key = str(value).strip().lower().replace("-", "_").replace(" ", "_")
    if key in _MODE_ALIASES:
        return _MODE_ALIASES[key]
    allowed = ", ".join(_MODE_ALIASES)
    raise RequestRejected(name, f"unknown mode {value!r} in the front matter (allowed: {allowed})")


def _title(front: dict[str, Any], body: str) -> str:
    """Front matter `title:`, else the first line with a letter or digit (a heading without #s)."""
    given = front.get("title")
    if given is not None and str(given).strip():
        return _shorten(" ".join(str(given).split()))
    for line in body.split("\n"):
        stripped = line.strip()
        heading = _HEADING.fullmatch(stripped)
        if heading:
            stripped = (heading.group(1) or "").strip()
        # Rules and decorations (---, ***, ===) hold no letter or digit: not a title.
        if any(char.isalnum() for char in stripped):
            return _shorten(stripped)
    return ""


def _shorten(title: str) -> str:
    return title if len(title) <= TITLE_MAX_CHARS else title[: TITLE_MAX_CHARS - 1] + "…"


def reject(home: Home, path: Path, reason: str, now: datetime | None = None) -> Path:
    """Move an unusable file to inbox/rejected/ with a reason file beside it; returns its path."""
    target = _move_no_clobber(path, home.inbox_rejected, REASON_SUFFIX)
    when = (now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    atomic_write_text(
        target.with_name(target.name + REASON_SUFFIX),
        _reason_text(home, path.name, target, reason, when),
    )
    log.info("inbox_rejected", file=path.name, moved_to=target.name, reason=reason)
    return target


def shown_path(home: Home, path: Path) -> str:
    """`path` relative to the home, for people; a symlink names itself, never its target."""
    try:
        return (path.parent.resolve() / path.name).relative_to(home.root.resolve()).as_posix()
    except ValueError:
        return str(path)


def _reason_text(home: Home, original: str, target: Path, reason: str, when: str) -> str:
    kept = shown_path(home, target)
    return (
        f"# Request rejected: {original}\n\n"
        f"- file: `{kept}` (kept unchanged)\n"
        f"- rejected at: {when}\n\n"
        "## What was wrong\n\n"
        f"{reason[:1].upper()}{reason[1:]}\n\n"
        "## What to do\n\n"
        "Fix the request (a non-empty UTF-8 text file, *.md or *.txt, within the size limit; "
        "front matter, if any, as `key: value` lines such as `mode: simple` or `title: ...`) "
        "and drop it into `inbox/` again. Nothing was deleted: the original is kept here.\n"
    )


def move_to_done(home: Home, path: Path) -> Path:
    """Move a handled request to inbox/done/ under a name not yet taken; returns the new path."""
    target = _move_no_clobber(path, home.inbox_done, REPLY_SUFFIX)
    log.info("inbox_done", file=path.name, moved_to=target.name)
    return target


def reply_path(home: Home, name: str) -> Path:
    """Where the SIMPLE_TASK reply to the request `name` is written: inbox/done/<name>.reply.md."""
    return home.inbox_done / (name + REPLY_SUFFIX)


def _candidates(name: str) -> Iterator[str]:
    """`name`, then `stem-1.suffix`, `stem-2.suffix` … forever."""
    yield name
    path = Path(name)
    stem, suffix = (path.stem, path.suffix) if path.stem else (name, "")
    counter = 1
    while True:
        yield f"{stem}-{counter}{suffix}"
        counter += 1


def _move_no_clobber(path: Path, folder: Path, companion_suffix: str) -> Path:
    """Move `path` into `folder` under the first name free for it and for its companion file."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in _candidates(path.name):
        target = folder / name
        if os.path.lexists(target) or target.with_name(name + companion_suffix).exists():
            continue
        try:
            # A hard link fails if the name is taken, so a racing writer is never overwritten.
            # It links a symlink itself, never its target, so nothing of the target is read.
            os.link(path, target, follow_symlinks=False)
        except FileExistsError:
            continue
        except OSError:
            if os.path.lexists(target):
                continue
            # A folder, or no hard links on this file system: rename the entry itself.
            os.rename(path, target)
        else:
            os.unlink(path)  # the content lives on under `target`
        _fsync_dirs(path.parent, folder)
        return target
    raise AssertionError("unreachable: the candidate names never run out")


def _fsync_dirs(*folders: Path) -> None:
    # The move is durable only once both directory entries are on disk.
    for folder in folders:
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
