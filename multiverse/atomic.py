"""The file system's primitives, in one place: atomic durable writes (temporary file, fsync,
rename, directory fsync), the atomic exchange of two paths, whether a file is open for writing,
and a little disk space held back so that a full disk can still be reported (SPEC §3.1, §14).
"""

from __future__ import annotations

import errno
import fnmatch
import itertools
import os
import re
import signal
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from multiverse.errors import StorageError
from multiverse.logs import lazy_logger

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
    """Replace `path` with `data` so that a reader sees the old or the new file, never a mix.

    The one durability rule of every writer: a temporary sibling written and fsynced, renamed
    into place, and the folder fsynced so that the new entry survives a power cut.
    """
    tmp_name = write_temp(path, data)
    try:
        os.replace(tmp_name, path)
    except OSError as error:
        Path(tmp_name).unlink(missing_ok=True)
        raise StorageError(path, error) from error
    placed(path)


def fsync_folder(*folders: Path) -> None:
    """Make the entries of these folders durable (a rename, a link or a new file in them)."""
    for folder in folders:
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as error:
            raise StorageError(folder, error) from error


def placed(path: Path) -> None:
    """A durably written file now stands at `path`: its folder is fsynced, the write counted."""
    fsync_folder(path.parent)
    count_durable_write()


def create_exclusive(folder: Path, name: str, data: bytes) -> Path:
    """Create `folder/name` (or name-1, name-2 …) holding `data`, never replacing a file.

    Concurrent callers each get their own file; the path created is returned. The content is
    written and fsynced into a hidden temporary sibling first, then hard-linked under the first
    free name, so a reader never sees a partial file. Without hard links the file is created
    exclusively and written in place (briefly partial: the inbox's settle rule waits for it).
    """
    tmp = write_temp(folder / name, data)
    try:
        for candidate in numbered(folder, name):
            try:
                os.link(tmp, candidate)
            except FileExistsError:
                continue
            except OSError:
                return _create_in_place(folder, name, data)  # no hard links here
            placed(candidate)
            return candidate
    finally:
        Path(tmp).unlink(missing_ok=True)
    raise AssertionError("unreachable: the candidate names never run out")


def _create_in_place(folder: Path, name: str, data: bytes) -> Path:
    """`create_exclusive` without hard links: an O_EXCL create, then the write in place."""
    for candidate in numbered(folder, name):
        try:
            fd = os.open(candidate, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue
        except OSError as error:
            raise StorageError(candidate, error) from error
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as error:
            candidate.unlink(missing_ok=True)  # a truncated file must not be taken
            raise StorageError(candidate, error) from error
        placed(candidate)
        return candidate
    raise AssertionError("unreachable: the candidate names never run out")


def numbered(folder: Path, name: str) -> Iterator[Path]:
    """`folder/name`, then `stem-1.suffix`, `stem-2.suffix` … forever."""
    yield folder / name
    stem, suffix = Path(name).stem, Path(name).suffix
    for counter in itertools.count(1):
        yield folder / f"{stem}-{counter}{suffix}"


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


def temp_owner(name: str) -> int | None:
    """The pid that created a temporary file of this module's naming, or None."""
    match = TEMP_NAME.fullmatch(name)
    return int(match.group("pid")) if match else None


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_UNSUPPORTED = frozenset({errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP})
_libc: Any = None
_libc_guard = threading.Lock()
_supported = True


def exchange(first: str | os.PathLike[str], second: str | os.PathLike[str]) -> bool:
    """Atomically swap the two paths; False (nothing done) where the system cannot.

    Raises FileNotFoundError if either path is missing, and OSError for other failures.
    """
    global _supported
    if not _supported:
        return False
    libc = _load()
    if libc is None:
        _supported = False
        return False
    result = libc.renameat2(
        _AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE
    )
    if result == 0:
        return True
    import ctypes

    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False  # this file system (or kernel) cannot; others in the home may
    raise OSError(code, os.strerror(code), os.fspath(second))


def _load() -> Any:
    """glibc's renameat2, loaded once (ctypes is imported only by processes that write)."""
    global _libc
    with _libc_guard:
        if _libc is None:
            import ctypes

            try:
                libc = ctypes.CDLL(None, use_errno=True)
                function = libc.renameat2
            except (OSError, AttributeError):
                _libc = False
                return None
            function.argtypes = [
                ctypes.c_int,
                ctypes.c_char_p,
                ctypes.c_int,
                ctypes.c_char_p,
                ctypes.c_uint,
            ]
            function.restype = ctypes.c_int
            _libc = libc
        return _libc or None


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


log = lazy_logger(__name__)
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
