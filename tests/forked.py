"""Child processes that start in milliseconds: forked from a server that imported the program.

A kill-after-every-write test starts `start --once` dozens of times, and a fresh interpreter
spends about a second importing before its first write; a test of a serving daemon's signals,
console or crash pays that second too, for nothing it checks. These children are real processes
(SIGKILL ends them; the exit status, stdout and stderr are theirs), forked by multiprocessing's
forkserver, which imported the CLI and the daemon once and runs no thread. Each child takes the
environment and folder given, and imports the write layer afresh: multiverse.atomic reads its
fault injection (MULTIVERSE_KILL_AFTER_WRITES, MULTIVERSE_FAULT_ENOSPC) and notes when the
process started as it is imported, as in a process started from scratch.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from multiverse.home import Home

from journey import wait_for

PRELOAD = [
    "app.cli",
    "app.commands",
    "app.team",
    "multiverse.config",
    "multiverse.logs",
    "orchestrator.daemon",
    "forked",  # this module (and journey), which each child's target lives in
]
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(PRELOAD)


class Forked:
    """`multiverse ARGS` running in a forked child, offered as subprocess.Popen offers a child;
    its stdout and stderr go to files (`out`, `err`), readable at any time."""

    def __init__(self, argv: list[str], env: dict[str, str] | None, folder: Path) -> None:
        self.args = ["multiverse", *argv]
        self.out, self.err = folder / "stdout", folder / "stderr"
        self.out.touch()
        self.err.touch()
        environ = {**os.environ, **(env or {})}
        self._child = _CONTEXT.Process(
            target=_child,
            args=(argv, environ, os.getcwd(), str(self.out), str(self.err)),
            daemon=True,
        )
        self._child.start()
        assert self._child.pid is not None
        self.pid: int = self._child.pid

    @property
    def returncode(self) -> int | None:
        """The exit status (-N: ended by signal N), None while it runs."""
        return self._child.exitcode

    def poll(self) -> int | None:
        """The exit status if it has ended, else None."""
        return self._child.exitcode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for its end; its exit status (subprocess.TimeoutExpired after `timeout`)."""
        self._child.join(timeout)
        if self._child.exitcode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self._child.exitcode

    def send_signal(self, signum: int) -> None:
        """Send it a signal (SIGINT is Ctrl-C)."""
        if self._child.exitcode is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        """SIGKILL."""
        self.send_signal(signal.SIGKILL)

    def stdout(self) -> str:
        """What it printed on stdout so far."""
        return self.out.read_text(encoding="utf-8", errors="replace")

    def stderr(self) -> str:
        """What it printed on stderr so far."""
        return self.err.read_text(encoding="utf-8", errors="replace")


@contextmanager
def forked(home: Home, *args: str, env: dict[str, str] | None = None) -> Iterator[Forked]:
    """`multiverse ARGS --home HOME` running in a forked child; killed at the end if it runs."""
    with tempfile.TemporaryDirectory(prefix="forked-") as folder:
        child = Forked([*args, "--home", str(home.root)], env, Path(folder))
        try:
            yield child
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=30)


def forked_cli(
    home: Home, *args: str, env: dict[str, str] | None = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """Run `multiverse ARGS --home HOME` in a forked child process (environment: ours + env)."""
    with forked(home, *args, env=env) as child:
        try:
            code = child.wait(timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            raise
        return subprocess.CompletedProcess(child.args, code, child.stdout(), child.stderr())


def forked_once(
    home: Home, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`start --once` in a forked child process (a daemon life that may be killed)."""
    return forked_cli(home, "start", "--once", env=env)


def _child(argv: list[str], environ: dict[str, str], cwd: str, out: str, err: str) -> None:
    """In the child: its environment, folder and output files, then the command line."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(environ)
    for fd, path in ((1, out), (2, err)):
        opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
    importlib.reload(importlib.import_module("multiverse.atomic"))
    from app.cli import run

    run(argv)  # ends with SystemExit: its code is the child's exit status


@contextmanager
def forked_daemon(
    home: Home, ready: Callable[[], bool] | None = None, env: dict[str, str] | None = None
) -> Iterator[Forked]:
    """`multiverse start` serving the home in a forked child, once `ready` (default: its pid
    file names it); killed at the end if it still runs."""
    pid_file = home.state / "daemon.pid"
    pid_file.unlink(missing_ok=True)
    with forked(home, "start", env=env) as child:

        def started() -> bool:
            if child.poll() is not None:
                raise AssertionError(f"the daemon ended ({child.returncode}): {child.stderr()}")
            if ready is not None:
                return ready()
            try:
                return pid_file.read_text(encoding="utf-8").strip() == str(child.pid)
            except FileNotFoundError:
                return False

        wait_for(started, "the daemon to start")
        yield child
