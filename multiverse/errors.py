"""One error hierarchy, split by whose fault it is (STYLE rule 6)."""

from __future__ import annotations

import errno
from pathlib import Path


class MultiverseError(Exception):
    """Base of every error this project raises on purpose."""

    exit_code = 1


class UserError(MultiverseError):
    """A person's bad input or command: shown as one clear line, never a traceback."""

    exit_code = 2


class UnknownRun(UserError):
    """A run id this home does not hold (or not shaped like one): the same words everywhere."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"no run {run_id} in this home (`multiverse status` lists the runs)")


class RunStateError(UserError):
    """A command the run's state does not allow (not waiting, not held, not FAILED): exit 1."""

    exit_code = 1


class HomeError(UserError):
    """The home folder is missing, not a directory, or not writable."""


class ConfigError(UserError):
    """A configuration file (runtime-mapping.yaml, an agent package) is malformed."""


class StepControl(BaseException):
    """A step does not finish now, and nothing failed: it waits for a person, or it was stopped.

    A `BaseException`, as rq's own control flow is, so that no `except Exception` in a role
    (whose contract is to never raise) can swallow it: it reaches the step runner as it is.
    """


class StepInterrupted(StepControl):
    """A step stopped because the daemon is stopping: nothing failed, it is redone at start."""


class StorageError(MultiverseError):
    """The machine refused a write: a full disk, an I/O error, a permission, a read-only disk.

    Not the user's fault and not the run's: the message says which file and what to do, and a
    run stopped by it can be resumed with `multiverse retry` once the cause is gone.
    """

    exit_code = 4

    def __init__(self, path: Path | str, error: OSError) -> None:
        self.path = Path(path)
        self.errno = error.errno
        self.strerror = error.strerror or str(error)
        super().__init__(f"cannot write {self.path}: {self.strerror} ({storage_advice(error)})")


def storage_advice(error: OSError) -> str:
    """What a person can do about a refused write, by its errno."""
    advice = {
        errno.ENOSPC: "free some disk space, then try again",
        errno.EDQUOT: "the disk quota is used up: free space or raise the quota, then try again",
        errno.EIO: "the disk reported an I/O error: check the device, then try again",
        errno.EROFS: "the file system is read-only: remount it writable, then try again",
        errno.EACCES: "permission denied: check who owns the folder, then try again",
        errno.EPERM: "not permitted: check who owns the folder, then try again",
    }
    return advice.get(error.errno or 0, "check the disk and the folder's permissions")


class TableError(MultiverseError):
    """A markdown table that cannot be read or written; the file is never overwritten."""

    exit_code = 3

    def __init__(self, path: Path | str, line: int | None, problem: str) -> None:
        self.path = Path(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line is not None else str(self.path)
        super().__init__(f"{where}: {problem}")


class TableBusy(TableError):
    """Someone saved the table again and again while we wrote it: nothing is lost (our change
    was never placed), and the work that wrote it is done again a moment later."""


class RowNotFoundError(TableError):
    """An update named a key that the table does not hold."""


class StaleRowError(TableError):
    """A compare-and-set update found the row's status changed under it."""


def shown_error(root: Path, error: TableError) -> str:
    """A table error with its file relative to the home: `db/process_runs.md:7: problem`."""
    try:
        where = error.path.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        where = str(error.path)
    return f"{where}:{error.line}: {error.problem}" if error.line else f"{where}: {error.problem}"
