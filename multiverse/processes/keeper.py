"""The keeper: a small process between the daemon and one command, so that nothing the command
starts outlives its step or the daemon (SPEC §11).

Run as a script (`python -I -S keeper.py DAEMON_PID GRACE -- COMMAND…`), never imported by
the daemon: it loads only a few standard modules, so it starts in milliseconds. It makes itself
the *subreaper* of everything below it (Linux `PR_SET_CHILD_SUBREAPER`: a grandchild that calls
`setsid` or forks twice is re-parented to the keeper, not to init, so it can always be found),
asks to be told when the daemon dies (`PR_SET_PDEATHSIG`), and runs the command with its own
standard streams. When the command exits, when the daemon stops it (SIGTERM to its group), or
when the daemon dies, it stops every process below it: SIGTERM, the grace, SIGKILL. It exits
with the command's code (128+N for a command ended by signal N).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
POLL_SECONDS = 0.05
DAEMON_GONE = 125  # the daemon died before the keeper could watch it: nothing was started


def descendants(root: int) -> list[int]:
    """Every process below `root` (by /proc's parent links), deepest last."""
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            parents[int(name)] = int(fields[1])  # after ")": state, ppid
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    found: list[int] = []
    frontier = [root]
    while frontier:
        below = [pid for pid, parent in parents.items() if parent in frontier]
        found += below
        frontier = below
    return found


ENDED: dict[int, int] = {}  # pid → wait status of every child the keeper collected


def _reap() -> None:
    """Collect every ended child (orphans re-parented to the keeper included)."""
    with contextlib.suppress(ChildProcessError):
        while True:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return
            ENDED[pid] = status


def stop_below(root: int, grace: float) -> None:
    """SIGTERM every process below `root`, wait up to `grace` seconds, SIGKILL the rest."""
    _reap()
    below = descendants(root)
    for signum, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 1.0)):
        if not below:
            return  # the common case: the command left nothing behind (one look at /proc)
        for pid in below:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            _reap()
            below = descendants(root)
            if not below:
                return
            time.sleep(POLL_SECONDS)
    _reap()


def _prctl(option: int, value: int) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(option, value, 0, 0, 0) == 0)


WATCHED = {signal.SIGTERM, signal.SIGCHLD}  # taken synchronously, in order: no race


def _start(command: list[str]) -> int:
    """Fork and exec the command; its pid (a command that cannot be run exits 127). The
    command gets the default dispositions and no blocked signal."""
    pid = os.fork()
    if pid == 0:
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, set())
            os.execvp(command[0], command)
        except OSError as error:
            os.write(2, f"{command[0]}: {error.strerror or error}\n".encode())
        os._exit(127)
    return pid


def main(argv: list[str]) -> int:
    """Run the command below the keeper; returns the exit code to leave with."""
    daemon, grace, command = int(argv[0]), float(argv[1]), argv[3:]
    # SIGTERM (a stop, or the daemon's death) and SIGCHLD are waited for, never handled: the
    # end of a child and a stop can come together without one hiding the other.
    signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches the daemon; it decides
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != daemon:
        return DAEMON_GONE
    child = _start(command)
    while True:
        _reap()
        if child in ENDED:
            break
        if signal.sigwaitinfo(WATCHED).si_signo == signal.SIGTERM:
            break
    stop_below(os.getpid(), grace)
    ended = ENDED.get(child)
    if ended is None:
        return 128 + signal.SIGKILL  # not collected: it was killed with the rest
    code = os.waitstatus_to_exitcode(ended)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
