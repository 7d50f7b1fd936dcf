"""Atomic, durable file writes: temporary file in the same folder, fsync, os.replace (SPEC §3.1).

The folder is not fsync'd after each rename. That would cost ~0.15 ms per write and buys
nothing the design needs: a process crash (`kill -9`) never loses a rename, and after a power
cut the file system's journal replays renames in order, so what can be lost is a suffix of the
last writes, which leaves the files as they were at an earlier instant. The level-triggered
Orchestrator resumes from any such instant (SPEC §4): every step is safe to repeat.
"""

from __future__ import annotations

import itertools
import os
import signal
import stat
from pathlib import Path

# Fault injection for the durability tests (SPEC §14): with MULTIVERSE_KILL_AFTER_WRITES=k the
# process kills itself with SIGKILL right after its k-th durable write, exactly as a power cut
# or `kill -9` would stop it between two writes. Unset, it costs one comparison per write.
_KILL_AFTER = int(os.environ.get("MULTIVERSE_KILL_AFTER_WRITES", "0") or 0)
_WRITES = itertools.count(1)
_write_count = 0
# Temporary names are unique per process by pid and counter (O_EXCL guards against a leftover of
# a crashed process with the same pid); a random token cost ~20 µs a write in getrandom.
_TEMP_NAMES = itertools.count()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a reader sees the old or the new file, never a mix."""
    mode = _existing_mode(path)
    fd, tmp_name = _create_temp(path)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)  # a replaced file keeps the permissions a person gave it
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:] if written else data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    global _write_count
    _write_count = written = next(_WRITES)  # next() is atomic, so the k-th write is exact
    if _KILL_AFTER and written >= _KILL_AFTER:
        os.kill(os.getpid(), signal.SIGKILL)


def _existing_mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return None


def _create_temp(path: Path) -> tuple[int, str]:
    """Create a fresh temporary sibling of `path`; returns its descriptor and name."""
    while True:
        name = f"{path.parent}/.{path.name}.{os.getpid()}-{next(_TEMP_NAMES)}.tmp"
        try:
            # 0o666 lets the umask decide, as for any new file (mkstemp would force 0o600).
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
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
