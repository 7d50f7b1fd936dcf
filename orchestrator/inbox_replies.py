"""SIMPLE_TASK replies in inbox/done/ (SPEC §5): each sits beside its request, names matched.

A request `ask.md` is kept as `inbox/done/ask.md` and answered in `inbox/done/ask.reply.md`
(`note.txt` ↔ `note.reply.md`). When the name is taken, the pair moves on together: `ask-1.md`
↔ `ask-1.reply.md`. Replies written before this naming are `<request name>.reply.md`
(`ask.md.reply.md`); they are still paired with their request and still keep their names taken.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from multiverse.home import Home
from multiverse.unread import open_regular

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
