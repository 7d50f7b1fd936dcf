"""Whether some process holds a file open for writing: the "closed by its writer" test.

People's editors, `cat >>` and downloaders write files without our lock, often in several
pieces through one open descriptor. A file still open for writing is not finished, whatever its
size and times say. Linux shows every open descriptor under /proc/<pid>/fd (with its access mode
in /proc/<pid>/fdinfo); one scan costs about 0.5 ms on a machine with ~70 processes, so callers
scan only files that changed recently. Where /proc cannot tell (another OS, a hardened /proc),
the answer is None and callers fall back on the file staying unchanged for a settle time.
Processes of other users are invisible to a non-root scan; a person's editor runs as the person.
"""

from __future__ import annotations

import os

PROC = "/proc"
_WRITE_MODES = (os.O_WRONLY, os.O_RDWR)


def open_for_writing(device: int, inode: int) -> bool | None:
    """Whether a process has the file (device, inode) open for writing; None if unknowable."""
    try:
        pids = [name for name in os.listdir(PROC) if name.isdigit()]
    except OSError:
        return None
    if not pids:
        return None
    for pid in pids:
        folder = f"{PROC}/{pid}/fd"
        try:
            descriptors = os.listdir(folder)
        except OSError:
            continue  # gone meanwhile, or not ours to see
        for fd in descriptors:
            try:
                target = os.stat(f"{folder}/{fd}")
            except OSError:
                continue
            if target.st_ino == inode and target.st_dev == device and _writable(pid, fd):
                return True
    return False


def path_open_for_writing(path: str | os.PathLike[str]) -> bool | None:
    """`open_for_writing` for the file at `path` (False if it does not exist)."""
    try:
        stat = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return open_for_writing(stat.st_dev, stat.st_ino)


def _writable(pid: str, fd: str) -> bool:
    """Whether descriptor `fd` of `pid` was opened for writing (its fdinfo `flags`, octal)."""
    try:
        with open(f"{PROC}/{pid}/fdinfo/{fd}", encoding="ascii") as info:
            for line in info:
                if line.startswith("flags:"):
                    return (int(line.split()[1], 8) & os.O_ACCMODE) in _WRITE_MODES
    except (OSError, ValueError, IndexError):
        return True  # it vanished or is unreadable: assume the worst, the caller waits
    return True
