"""The keeper: a small process between the daemon and one command, so that nothing the command
starts outlives its step or the daemon (SPEC §11).

Run as a script (`python -I -S keeper.py DAEMON_PID GRACE -- COMMAND…`), never imported by
the daemon: it loads only a few standard modules, so it starts in milliseconds. It makes itself
the *subreaper* of everything below it (Linux `PR_SET_CHILD_SUBREAPER`: a grandchild that calls
`setsid` or forks twice is re-parented to the keeper, not to init, so it can always be found),
asks to be told when the daemon dies (`PR_SET_PDEATHSIG`), and runs the command with its own
standard streams. Where a cgroup v2 is writable (`cgroup_home`), the command is born in a cgroup
of its own (`multiverse-<daemon pid>-<keeper pid>` beside the daemon's), which no descendant can
leave by forking, `setsid` or a cleared environment. When the command exits, when the daemon
stops it (SIGTERM to its group), or when the daemon dies, it stops every process below it and
in its cgroup: SIGTERM, the grace, SIGKILL (`cgroup.kill`), then removes the cgroup. It exits
with the command's code (128+N for a command ended by signal N). The daemon imports only the
cgroup helpers, to end the cgroup of a keeper that was killed.
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


CGROUP_PREFIX = "multiverse-"


def cgroup_home() -> str | None:
    """The folder of this process's cgroup v2, where keepers make theirs (None: no cgroup v2)."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as handle:
            own = next((line[3:].strip() for line in handle if line.startswith("0::")), None)
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            mounts = [line.split() for line in handle]
    except OSError:
        return None
    # mountinfo: id, parent, dev, root, mount point, options…, "-", file system type, …
    mount = next((f[4] for f in mounts if "-" in f and f[f.index("-") + 1] == "cgroup2"), None)
    if own is None or mount is None:
        return None
    return os.path.join(mount, own.lstrip("/"))


def _cgroup_write(folder: str, name: str, text: str) -> bool:
    try:
        with open(os.path.join(folder, name), "w", encoding="ascii") as handle:
            handle.write(text)
        return True
    except OSError:
        return False


def cgroup_members(folder: str) -> list[int]:
    """The processes in a cgroup (none when it is gone)."""
    try:
        with open(os.path.join(folder, "cgroup.procs"), encoding="ascii") as handle:
            return [int(line) for line in handle if line.strip()]
    except (OSError, ValueError):
        return []


def end_cgroup(folder: str, grace: float, reap: bool = False) -> None:
    """Stop every process in the cgroup (SIGTERM, up to `grace` seconds, then `cgroup.kill` or
    SIGKILL), and remove it. `reap`: the caller is the keeper, whose children (orphans included)
    it collects meanwhile; the daemon never does, or it would take the exit status of a child
    some `Popen` of its own waits for."""
    for signum, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 1.0)):
        members = cgroup_members(folder)
        if not members:
            break
        if signum == signal.SIGKILL and _cgroup_write(folder, "cgroup.kill", "1"):
            members = []  # the kernel kills them all, new forks included
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and cgroup_members(folder):
            if reap:
                _reap()
            time.sleep(POLL_SECONDS)
    if reap:
        _reap()
    with contextlib.suppress(OSError):
        os.rmdir(folder)


def end_keepers_cgroup(daemon: int, keeper: int, grace: float) -> bool:
    """End what is left in the cgroup of a keeper that was killed; whether there was one."""
    home = cgroup_home()
    folder = os.path.join(home, f"{CGROUP_PREFIX}{daemon}-{keeper}") if home else None
    if folder is None or not os.path.isdir(folder):
        return False
    end_cgroup(folder, grace)
    return True


def end_leftover_cgroups(own: int, grace: float) -> list[str]:
    """End the keepers' cgroups of daemons that are gone (killed with their keepers before
    either could end them), not those of `own` or of another live daemon; returns them."""
    home = cgroup_home()
    if home is None:
        return []
    try:
        names = os.listdir(home)
    except OSError:
        return []
    ended = []
    for name in names:
        daemon, _, keeper = name.removeprefix(CGROUP_PREFIX).partition("-")
        if not name.startswith(CGROUP_PREFIX) or not (daemon.isdigit() and keeper.isdigit()):
            continue
        if int(daemon) == own or pid_alive(int(daemon)):
            continue  # a live daemon's: its keeper ends it
        folder = os.path.join(home, name)
        if os.path.isdir(folder):
            end_cgroup(folder, grace)
            ended.append(name)
    return ended


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one we may not signal exists too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _cgroup_for_child(daemon: int) -> tuple[str, str] | None:
    """A new cgroup for the command, with the keeper inside it so that the command is born
    there: (its folder, the keeper's own), or None where no cgroup v2 is writable."""
    home = cgroup_home()
    if home is None:
        return None
    folder = os.path.join(home, f"{CGROUP_PREFIX}{daemon}-{os.getpid()}")
    try:
        os.mkdir(folder)
    except OSError:
        return None
    if not _cgroup_write(folder, "cgroup.procs", "0"):
        with contextlib.suppress(OSError):
            os.rmdir(folder)
        return None
    return folder, home


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
    cgroup = _cgroup_for_child(daemon)
    child = _start(command)
    if cgroup is not None and not _cgroup_write(cgroup[1], "cgroup.procs", "0"):
        cgroup = None  # the keeper could not leave it: the cgroup is not ended (nor the keeper)
    while True:
        _reap()
        if child in ENDED:
            break
        if signal.sigwaitinfo(WATCHED).si_signo == signal.SIGTERM:
            break
    stop_below(os.getpid(), grace)
    if cgroup is not None:
        end_cgroup(cgroup[0], grace, reap=True)
    ended = ENDED.get(child)
    if ended is None:
        return 128 + signal.SIGKILL  # not collected: it was killed with the rest
    code = os.waitstatus_to_exitcode(ended)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
