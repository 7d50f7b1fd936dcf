"""Atomic, durable file writes: temporary file in the same folder, fsync, os.replace (SPEC §3.1).

The folder is not fsync'd after each rename. That would cost ~0.15 ms per write and buys
nothing the design needs: a process crash (`kill -9`) never loses a rename, and after a power
cut the file system's journal replays renames in order, so what can be lost is a suffix of the
last writes, which leaves the files as they were at an earlier instant. The level-triggered
Orchestrator resumes from any such instant (SPEC §4): every step is safe to repeat.

A write the machine refuses (a full disk, an I/O error, a permission) raises `StorageError`,
which names the file and says what to do; the temporary file is removed first.
"""

from __future__ import annotations

import errno
import fnmatch
import itertools
import os
import re
import signal
import stat
import time
from pathlib import Path

from multiverse.errors import StorageError

# Fault injection for the durability tests (SPEC §14): with MULTIVERSE_KILL_AFTER_WRITES=k the
# process kills itself with SIGKILL right after its k-th durable write, exactly as a power cut
# or `kill -9` would stop it between two writes. Unset, it costs one comparison per write.
_KILL_AFTER = int(os.environ.get("MULTIVERSE_KILL_AFTER_WRITES", "0") or 0)
# Fault injection for the full-disk tests: while the file MULTIVERSE_FAULT_ENOSPC names exists,
# every durable write fails with ENOSPC as on a full disk; if the file holds glob patterns (one
# a line, matched against the absolute target path), only matching writes fail.
_ENOSPC_TRIGGER = os.environ.get("MULTIVERSE_FAULT_ENOSPC", "")
_WRITES = itertools.count(1)
_write_count = 0
# Temporary names are unique per process by pid and counter (O_EXCL guards against a leftover of
# a crashed process with the same pid); a random token cost ~20 µs a write in getrandom.
_TEMP_NAMES = itertools.count()
# `.{name}.{pid}-{counter}.tmp`: the only names this module creates, and the only leftovers
# `orphan_temp_files` will ever offer for removal.
TEMP_NAME = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)-\d+\.tmp")
# When this process began writing: a temporary file carrying this process's pid but older than
# this is a leftover of a dead process that had the same pid (pids are reused, in containers
# soon); a newer one is this process's own, possibly still being written.
PROCESS_STARTED_NS = time.time_ns()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a reader sees the old or the new file, never a mix."""
    tmp_name = write_temp(path, data)
    try:
        os.replace(tmp_name, path)
    except OSError as error:
        Path(tmp_name).unlink(missing_ok=True)
        raise StorageError(path, error) from error
    count_durable_write()


def write_temp(path: Path, data: bytes) -> str:
    """Write `data` durably into a fresh temporary sibling of `path`; returns its name.

    The temporary file takes the permissions `path` has now, so a replaced file keeps the
    mode a person gave it. The caller renames it into place (or removes it).
    """
    mode = _existing_mode(path)
    try:
        _inject_fault(path)
        fd, tmp_name = _create_temp(path)
    except OSError as error:
        raise StorageError(path, error) from error
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:] if written else data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException as error:
        Path(tmp_name).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise StorageError(path, error) from error
        raise
    return tmp_name


def count_durable_write() -> None:
    """Count one durable write (and die here if the kill fault says so)."""
    global _write_count
    _write_count = written = next(_WRITES)  # next() is atomic, so the k-th write is exact
    if _KILL_AFTER and written >= _KILL_AFTER:
        os.kill(os.getpid(), signal.SIGKILL)


def _inject_fault(path: Path) -> None:
    if not _ENOSPC_TRIGGER:
        return
    try:
        patterns = Path(_ENOSPC_TRIGGER).read_text(encoding="utf-8").split()
    except FileNotFoundError:
        return  # space is back
    target = os.path.abspath(path)
    if not patterns or any(fnmatch.fnmatchcase(target, pattern) for pattern in patterns):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def _existing_mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None


def _create_temp(path: Path) -> tuple[int, str]:
    """Create a fresh temporary sibling of `path`; returns its descriptor and name."""
    while True:
        name = f"{path.parent}/.{path.name}.{os.getpid()}-{next(_TEMP_NAMES)}.tmp"
        try:
            # 0o666 lets the umask decide, as for any new file (mkstemp would force 0o600).
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)  # first file of a new folder
            continue
        return fd, name


def durable_writes() -> int:
    """How many durable writes this process has made (for benchmarks and the fault hook)."""
    return _write_count


def atomic_write_text(path: Path, text: str) -> None:
    """Atomically write UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))


def is_temp_name(name: str) -> bool:
    """Whether a file name is one of this module's temporary names."""
    return TEMP_NAME.fullmatch(name) is not None


def temp_owner(name: str) -> int | None:
    """The pid that created a temporary file of this module's naming, or None."""
    match = TEMP_NAME.fullmatch(name)
    return int(match.group("pid")) if match else None
