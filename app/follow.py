"""Following a growing text file like `tail -F`: its lines, then each line appended later.

The file is polled (a short wait between looks, so nothing needs a watcher thread). A file
replaced under the same name (rotated) or cut shorter (truncated) is read again from its start;
a file that does not exist yet is waited for. A line is given only once its newline is written.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

POLL_SECONDS = 0.2


class _Reader:
    """The open file, where we are in it, and a line begun but not yet ended."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None
        self.inode = 0
        self.position = 0
        self.partial = b""

    def _open(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return False
        self.close()
        self.fd, self.inode = fd, os.fstat(fd).st_ino
        self.position, self.partial = 0, b""
        return True

    def close(self) -> None:
        """Close the file followed, if open."""
        if self.fd is not None:
            os.close(self.fd)
        self.fd = None

    def _read(self) -> list[str]:
        if self.fd is None:
            return []
        chunks = []
        while chunk := os.pread(self.fd, 1 << 16, self.position):
            chunks.append(chunk)
            self.position += len(chunk)
        *lines, self.partial = (self.partial + b"".join(chunks)).split(b"\n")
        return [line.decode("utf-8", errors="replace") for line in lines]

    def new_lines(self) -> list[str]:
        """The lines completed since the last look (the rest of a rotated file first)."""
        if self.fd is None:
            return self._read() if self._open() else []
        lines = self._read()
        try:
            now = os.stat(self.path)
        except OSError:
            return lines  # gone for a moment (a rotation in progress): look again later
        if now.st_ino != self.inode:
            self._open()
            lines += self._read()
        elif now.st_size < self.position:  # truncated: its new content starts at 0
            self.position, self.partial = 0, b""
            lines += self._read()
        return lines


def follow_lines(
    path: Path, stop: threading.Event | None = None, poll: float = POLL_SECONDS
) -> Iterator[str]:
    """Every line of the file, then each new one as it is written, until `stop` is set."""
    stop = stop or threading.Event()
    reader = _Reader(path)
    try:
        while True:
            yield from reader.new_lines()
            if stop.wait(poll):  # a look at the file every `poll` seconds, not a wait for work
                return
    finally:
        reader.close()
