"""Tests of the table lock (multiverse/flock.py) against a real other process holding it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from multiverse.store import FileFlock, LockTimeout

# A child that takes the lock with filelock (as the daemon's other locks are taken), says so,
# and keeps it until its stdin closes: the two implementations must exclude each other.
HOLDER = """
import sys
from filelock import FileLock
lock = FileLock(sys.argv[1])
lock.acquire()
print("held", flush=True)
sys.stdin.read()
lock.release()
"""


def _holder(lock_path: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "held\n"
    return child


def test_a_lock_held_by_another_process_times_out_then_is_taken(tmp_path: Path) -> None:
    """While another process holds the lock we time out; once it lets go we get it."""
    lock_path = tmp_path / ".tasks.md.lock"
    child = _holder(lock_path)
    try:
        with pytest.raises(LockTimeout):
            FileFlock(lock_path).acquire(timeout=0.05)
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)
    lock = FileFlock(lock_path)
    lock.acquire(timeout=30)
    lock.release()
    assert lock_path.exists()  # never deleted: deleting it would let two holders in


def test_two_locks_on_one_file_in_one_process_exclude_each_other(tmp_path: Path) -> None:
    """flock is per open file, so two stores of one process also take turns."""
    first, second = FileFlock(tmp_path / "x.lock"), FileFlock(tmp_path / "x.lock")
    first.acquire(timeout=1)
    with pytest.raises(LockTimeout):
        second.acquire(timeout=0)
    first.release()
    second.acquire(timeout=1)
    second.release()


def test_the_lock_file_folder_is_created(tmp_path: Path) -> None:
    """A table in a folder that does not exist yet can be locked (its first write)."""
    lock = FileFlock(tmp_path / "runs" / "r1" / "db" / ".tasks.md.lock")
    lock.acquire(timeout=1)
    lock.release()
    assert (tmp_path / "runs" / "r1" / "db" / ".tasks.md.lock").is_file()
