"""The cross-process lock of one table file: flock(2) on a hidden sibling lock file.

The table store takes this lock once per table write, about a hundred times a run. filelock
(still used for the daemon's, the messages' and the usage log's locks) spends ~57 µs per
acquire and release on this path against ~5 µs for the same open + flock + close done here
(measured on the CI machine, filelock 3.32), which alone was a tenth of a run's orchestration
time. Same semantics as filelock's UnixFileLock: exclusive, released by the kernel when the
process dies, the lock file is never deleted (deleting it would let two holders in).
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

POLL_SECONDS = 0.005


class LockTimeout(Exception):
    """The lock stayed taken by another process for the whole timeout."""


class FileFlock:
    """An exclusive flock on `path`, not reentrant; callers serialise their own threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, timeout: float) -> None:
        """Take the lock, waiting at most `timeout` seconds; raises LockTimeout."""
        fd = self._open()
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockTimeout(str(self.path)) from None
                time.sleep(POLL_SECONDS)
                continue
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
            return

    def _open(self) -> int:
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
        try:
            return os.open(self.path, flags, 0o666)
        except FileNotFoundError:
            self.path.parent.mkdir(parents=True, exist_ok=True)  # the table's folder is new
            return os.open(self.path, flags, 0o666)

    def release(self) -> None:
        """Let the lock go (closing the descriptor is what releases it)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
