"""Swap two paths in one atomic step: renameat2(2) with RENAME_EXCHANGE (Linux ≥ 3.15).

`os.replace` unlinks whatever the target holds at the instant of the rename, so a person's
save that lands between our last look at a table and our rename is lost without a trace. An
exchange instead hands the displaced file back under our temporary name, where it can be
compared with what we based our write on and merged if someone wrote in between. Where the
call or the file system does not support it, `exchange` says so and callers fall back to a
check just before `os.replace`.
"""

from __future__ import annotations

import errno
import os
import threading
from typing import Any

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
