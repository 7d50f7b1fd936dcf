"""Inbox intake (SPEC §2, §5, §14): find dropped requests, read them safely, file them away.

A request is a regular *.md or *.txt file directly in inbox/, optionally opening with YAML front
matter (`mode:`, `title:`). Reading is split in two: `read_request` does the I/O (it checks the
size before reading anything and never follows a symlink) and `parse_request` decides, purely,
whether the bytes are a usable request. Handled files move to inbox/done/; unusable ones (empty,
binary, non-UTF-8, oversized, bad front matter) and everything else found there (symlinks,
sub-folders, other suffixes, pipes) move to inbox/rejected/ with a `<name>.reason.md` beside
them. Nothing is ever deleted or overwritten: a name already taken gets -1, -2 … before its
suffix. A SIMPLE_TASK reply sits beside its request with a matching name (`inbox_replies`):
`done/ask.md` ↔ `done/ask.reply.md`. Editor and temporary names (`editor_files`) are left alone.

What lies in inbox/ and whether it has settled is `inbox_survey`'s; its names are re-exported.

Also here: SIMPLE_TASK replies in inbox/done/ (SPEC §5).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import chain
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from multiverse.atomic import atomic_write_text, fsync_folder
from multiverse.config import parse_yaml
from multiverse.documents import open_regular
from multiverse.errors import UserError
from multiverse.home import Home
from multiverse.logs import lazy_logger
from multiverse.roles import Mode
from orchestrator.inbox_survey import (
    FOLDER,
    SPECIAL,
    SYMLINK,
    InboxEntry,
    InboxSurvey,
    Stamp,
    inbox_entries,
    is_ignorable_name,
    pending_requests,
    settle_wait,
    survey_inbox,
)

REPLY_SUFFIX = ".reply.md"
REQUEST_SUFFIXES = (".md", ".txt")
RECENT_REPLIES = 10
_FIRST_LINE_BYTES = 4096
_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)


def reply_name(request_name: str) -> str:
    """The reply's file name for a request kept as `request_name`: `ask.md` → `ask.reply.md`."""
    stem = Path(request_name).stem or request_name
    return stem + REPLY_SUFFIX


def reply_names(request_name: str) -> tuple[str, str]:
    """The reply names that would pair with `request_name`: this naming's, then the old one."""
    return reply_name(request_name), request_name + REPLY_SUFFIX


def companion_names(request_name: str) -> tuple[str, ...]:
    """The names whose presence in done/ would make `request_name`'s pair ambiguous: its
    replies, and a request of the same stem with the other suffix (`ask.txt` for `ask.md`)."""
    path = Path(request_name)
    siblings = (
        tuple(path.stem + s for s in REQUEST_SUFFIXES if s != path.suffix)
        if path.suffix in REQUEST_SUFFIXES and path.stem
        else ()
    )
    return reply_names(request_name) + siblings


def candidates(name: str) -> Iterator[str]:
    """`name`, then `stem-1.suffix`, `stem-2.suffix` … forever."""
    yield name
    path = Path(name)
    stem, suffix = (path.stem, path.suffix) if path.stem else (name, "")
    counter = 1
    while True:
        yield f"{stem}-{counter}{suffix}"
        counter += 1


def name_is_free(folder: Path, name: str) -> bool:
    """Whether neither a request `name` nor any of its `companion_names` is in `folder`."""
    if os.path.lexists(folder / name):
        return False
    return not any(os.path.lexists(folder / reply) for reply in companion_names(name))


def pair_name(home: Home, request_name: str) -> str:
    """The first name under which a request and its reply can both be kept in inbox/done/."""
    return next(name for name in candidates(request_name) if name_is_free(home.inbox_done, name))


def reply_path(home: Home, request_name: str) -> Path:
    """Where the reply to the request kept as inbox/done/`request_name` is written."""
    return home.inbox_done / reply_name(request_name)


def request_of(reply: str, names: Collection[str]) -> str | None:
    """The request a reply file answers, among the `names` in inbox/done/ (pure), else None.

    `ask.reply.md` answers `ask.md` or `ask.txt`; an old `ask.md.reply.md` answers `ask.md`.
    """
    if not reply.endswith(REPLY_SUFFIX):
        return None
    stem = reply[: -len(REPLY_SUFFIX)]
    if stem.endswith(REQUEST_SUFFIXES) and stem in names:
        return stem  # the old naming: the whole request name, then the suffix
    return next((stem + s for s in REQUEST_SUFFIXES if stem + s in names), None)


def is_reply(name: str, names: Collection[str]) -> bool:
    """Whether a file of inbox/done/ is a reply (a request named `x.reply.md` has its own)."""
    return name.endswith(REPLY_SUFFIX) and not any(reply in names for reply in reply_names(name))


@dataclass(frozen=True)
class Answered:
    """A simple request answered without a run: its reply, its request and when."""

    reply: Path
    request: Path | None  # None: the request is no longer beside its reply
    first_line: str
    answered_at: float  # the reply's modification time (seconds since the epoch)


def recent_replies(home: Home, limit: int = RECENT_REPLIES) -> list[Answered]:
    """The last `limit` replies in inbox/done/, oldest first; reads, never writes."""
    folder = home.inbox_done
    try:
        names = set(os.listdir(folder))
    except OSError:
        return []
    found: list[tuple[float, str]] = []
    for name in names:
        if not is_reply(name, names):
            continue
        try:
            found.append((os.stat(folder / name, follow_symlinks=False).st_mtime, name))
        except OSError:
            continue  # gone meanwhile
    answered = []
    for when, name in sorted(found)[-limit:]:
        request = request_of(name, names)
        path = folder / request if request else None
        answered.append(Answered(folder / name, path, first_line(path) if path else "", when))
    return answered


def first_line(path: Path) -> str:
    """The first line of a request with a letter or digit in it, after its front matter."""
    if path.is_symlink():
        return ""  # a link in done/ is not followed: nothing is read from where it points
    try:
        with open_regular(path) as handle:  # never blocks on a named pipe
            data = handle.read(_FIRST_LINE_BYTES)
    except OSError:
        return ""
    text = _FRONT_MATTER.sub("", data.decode("utf-8", errors="replace").replace("\r\n", "\n"))
    line = next((x.strip() for x in text.split("\n") if any(c.isalnum() for c in x)), "")
    return line.lstrip("# ").strip()


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
    "pair_name",
    "parse_request",
    "pending_requests",
    "read_request",
    "reject",
    "reply_path",
    "settle_wait",
    "shown_path",
    "survey_inbox",
]

log = lazy_logger(__name__)

DEFAULT_MAX_BYTES = 1024 * 1024
REASON_SUFFIX = ".reason.md"
TITLE_MAX_CHARS = 120

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
            raise RequestRejected(path.name, SYMLINK) from None
        raise
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RequestRejected(path.name, FOLDER if stat.S_ISDIR(info.st_mode) else SPECIAL)
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
        loaded = parse_yaml(source)
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
    target = _move_no_clobber(path, home.inbox_rejected, _reason_name)
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


def move_to_done(home: Home, path: Path, name: str | None = None) -> Path:
    """Move a handled request to inbox/done/ under a name not yet taken; returns the new path.

    With `name` (from `pair_name`, its reply already written beside it), that name is taken
    unless a request already holds it.
    """
    target = _move_no_clobber(path, home.inbox_done, companion_names, reserved=name)
    if name is not None and target.name != name:
        log.warning("inbox_reply_unpaired", file=path.name, reserved=name, moved_to=target.name)
    log.info("inbox_done", file=path.name, moved_to=target.name)
    return target


def _reason_name(name: str) -> tuple[str]:
    return (name + REASON_SUFFIX,)


def _move_no_clobber(
    path: Path,
    folder: Path,
    companions: Callable[[str], tuple[str, ...]],
    reserved: str | None = None,
) -> Path:
    """Move `path` into `folder` under the first name free for it and for its companion files.

    The `reserved` name is tried first, whatever its companions (they are this request's own).
    """
    folder.mkdir(parents=True, exist_ok=True)
    names = candidates(path.name) if reserved is None else chain([reserved], candidates(path.name))
    for name in names:
        target = folder / name
        if os.path.lexists(target):
            continue
        if name != reserved and any(os.path.lexists(folder / c) for c in companions(name)):
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
        fsync_folder(path.parent, folder)
        return target
    raise AssertionError("unreachable: the candidate names never run out")
