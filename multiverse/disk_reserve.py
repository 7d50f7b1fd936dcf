"""A little disk space held back, so that a full disk can still be reported (a ballast file).

When a disk fills up during a step, the run must still be marked FAILED with its report
(SPEC §8), and those are writes too. The daemon keeps `.multiverse/space-reserve` allocated
while space is plentiful and lets it go when a write meets ENOSPC, which frees enough for the
failure's own writes (a run's tables, its messages and process_runs.md of ~25,000 runs). It is
allocated again once a run is retried, as space is back by then.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)
RESERVE_BYTES = 4 * 1024 * 1024
FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


class SpaceReserve:
    """The reserve file of one home."""

    def __init__(self, path: Path, size: int = RESERVE_BYTES) -> None:
        self.path = path
        self.size = size

    def ensure(self) -> bool:
        """Allocate the reserve if it is missing; False when there is no room for it."""
        try:
            if os.stat(self.path).st_size >= self.size:
                return True
        except FileNotFoundError:
            pass
        except OSError:
            return False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                os.posix_fallocate(fd, 0, self.size)  # blocks held, nothing written
            finally:
                os.close(fd)
        except OSError as error:
            self.path.unlink(missing_ok=True)
            log.warning("space_reserve_not_made", error=error.strerror)
            return False
        return True

    def release(self) -> bool:
        """Free the reserve; whether there was one to free."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        log.warning("space_reserve_released", path=str(self.path))
        return True


def is_disk_full(error: BaseException) -> bool:
    """Whether an error (or what it wraps) says the disk or the quota is full."""
    while error is not None:
        if getattr(error, "errno", None) in FULL:
            return True
        error = error.__cause__  # type: ignore[assignment]
    return False
