"""Reading a file that someone else may be writing: trust it only once it has settled.

Most editors save by truncating the file and writing it again, some in several pieces; a read
in the middle gets an empty file, half a row, or a table that ends early. So a file that
changed in the last `QUIET_NS` is trusted only when (1) it did not change while it was being
read, (2) no process holds it open for writing (`writers.py`), and (3) it parses. Otherwise it
is read again every `POLL_SECONDS` until all three hold, or until it has been quiet for
`QUIET_NS`, when it is what its writer meant (a file that is still broken then is really
broken). An older file is read once. The cost: one scan of /proc (~0.5 ms) for a file changed
in the last second by someone else; a file this process wrote itself never comes here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from multiverse.atomic import open_for_writing
from multiverse.errors import TableError

T = TypeVar("T")
# A file's identity and times: (inode, size, mtime_ns, ctime_ns).
Stamp = tuple[int, int, int, int]
QUIET_NS = 1_000_000_000
POLL_SECONDS = 0.005
# However busy its writer, a file is taken as it is after this long.
MAX_WAIT_SECONDS = 30.0


@dataclass(frozen=True)
class Reading:
    """The bytes of a file, its stamp, and when (wall clock, ns) they were read."""

    data: bytes
    stamp: Stamp
    began: int


def stamp_of(stat: os.stat_result) -> Stamp:
    """The stamp of a stat result."""
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def read_stamped(path: Path | str) -> tuple[os.stat_result, int, bytes]:
    """The file's stat, the time its bytes were read, and the bytes (one open, os-level)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        stat = os.fstat(fd)
        began = time.time_ns()
        chunks = [os.read(fd, stat.st_size + 1)]
        while chunks[-1]:  # the file grew after the fstat: read on to its end
            chunks.append(os.read(fd, 1 << 16))
        return stat, began, b"".join(chunks)
    finally:
        os.close(fd)


def read_settled(path: Path, parse: Callable[[bytes], T]) -> tuple[T, Reading]:
    """Read and parse `path` once it has settled; raises FileNotFoundError if it is absent.

    `parse` raising TableError on a file that changed recently means "not finished yet"; on a
    quiet file the error is raised to the caller.
    """
    deadline = time.monotonic() + MAX_WAIT_SECONDS
    while True:
        stat, began, data = read_stamped(path)
        stamp = stamp_of(stat)
        young = began - max(stat.st_mtime_ns, stat.st_ctime_ns) < QUIET_NS
        waiting = time.monotonic() < deadline
        if young and waiting:
            if open_for_writing(stat.st_dev, stat.st_ino):
                time.sleep(POLL_SECONDS)
                continue
            # Checked after the writers: a writer that finished after our read changed it.
            if not _same_after(path, stamp):
                continue
        try:
            parsed = parse(data)
        except TableError:
            if young and waiting:
                time.sleep(POLL_SECONDS)
                continue
            raise
        return parsed, Reading(data, stamp, began)


def _same_after(path: Path, stamp: Stamp) -> bool:
    try:
        return stamp_of(os.stat(path)) == stamp
    except FileNotFoundError:
        return False
