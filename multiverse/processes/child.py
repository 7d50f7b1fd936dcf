"""One external command run as a child process, bounded and never orphaned (SPEC §11).

The child gets its own process group (so a stop reaches everything it started), runs below
the keeper (`keeper.py`: the subreaper of everything it starts, told when the daemon dies, so no
descendant outlives its step or the daemon, a `setsid` one included), a record of
itself in a file while it runs (so a daemon killed with SIGKILL leaves a trace the next start
uses to stop it: `leftovers.py`), the environment of §17.2.1 and nothing else of the daemon's
but the basics and the provider keys, its stdout and stderr copied to a bounded log, and three
limits: a total deadline, a no-output watchdog, and a stop asked from outside (the daemon
shutting down, or the run the child works for being cancelled). Stopping is SIGTERM to the
group, a grace of 5 s, then SIGKILL (§17.2.3).

Also here: children a dead daemon left running.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from multiverse.atomic import atomic_write_text
from multiverse.config import GRACE_SECONDS, PROVIDER_KEYS
from multiverse.processes.keeper import end_keepers_cgroup, end_leftover_cgroups, pid_alive

# What a command may need of the daemon's environment to run at all; the rest stays out.
BASIC_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TZ", "TMPDIR", "TERM")
MAX_LOG_BYTES = 1 << 20  # per stream, per session
MAX_STDOUT_BYTES = 8 << 20  # an answer larger than this is cut (and the cut is said)
STDERR_TAIL_BYTES = 2000
POLL_SECONDS = 0.05


@dataclass(frozen=True)
class ChildOutcome:
    """How a child ended: its exit, or why it was stopped, and what it printed."""

    returncode: int | None
    stopped: str | None  # "TIMEOUT" | "NO_OUTPUT" | "STOPPED" (by the daemon) | None
    stdout: str
    stderr_tail: str
    seconds: float
    stdout_cut: bool = False

    @property
    def signal_number(self) -> int | None:
        """The signal that ended the child (Popen's -N, or a shell's 128+N), else None."""
        if self.returncode is None:
            return None
        if self.returncode < 0:
            return -self.returncode
        return self.returncode - 128 if self.returncode > 128 else None


def child_environment(
    environ: Mapping[str, str], extra: Mapping[str, str], pass_env: list[str]
) -> dict[str, str]:
    """The child's environment: the basics, locale, provider keys, `pass_env`, and `extra`."""
    keys = {name for names in PROVIDER_KEYS.values() for name in names}
    wanted = set(BASIC_ENV) | keys | set(pass_env)
    env = {
        name: value for name, value in environ.items() if name in wanted or name.startswith("LC_")
    }
    env.update(extra)
    return env


@dataclass
class _Running:
    process: subprocess.Popen[bytes]
    stop: threading.Event = field(default_factory=threading.Event)
    run_id: str = ""  # the run the child works for ("" for a call outside any run)


_RUNNING: dict[int, _Running] = {}
_GUARD = threading.Lock()
_STOPPING = threading.Event()  # set while the daemon stops: a child started now stops at once
_STOPPED_RUNS: set[str] = set()  # runs being cancelled: a child started for them stops at once


_WAITS: dict[int, tuple[str, threading.Event]] = {}  # steps waiting on work done elsewhere


def stop_all_children() -> int:
    """Stop every child this process runs (the daemon is stopping); returns how many.

    Safe in a signal handler: it takes no lock (copying the dict is atomic under the GIL).
    """
    _STOPPING.set()
    running = list(_RUNNING.values())
    for child in running:
        child.stop.set()
    for _run_id, stop in list(_WAITS.values()):
        stop.set()
    return len(running) + len(_WAITS)


@contextlib.contextmanager
def stop_signal(run_id: str) -> Iterator[threading.Event]:
    """An event set when this run's work must stop (cancel, pause, the daemon stopping), for
    a step whose work is not a child of this process (a remote worker's): stopped as a child."""
    stop = threading.Event()
    with _GUARD:
        _WAITS[id(stop)] = (run_id, stop)
        if _STOPPING.is_set() or run_id in _STOPPED_RUNS:
            stop.set()
    try:
        yield stop
    finally:
        with _GUARD:
            _WAITS.pop(id(stop), None)


def allow_children() -> None:
    """Children may run again (a daemon starts serving)."""
    _STOPPING.clear()


def stop_run_children(run_id: str) -> int:
    """Stop the children working for one run (it is being cancelled); returns how many.

    Until `allow_run_children(run_id)`, a child started for that run is stopped at once.
    """
    with _GUARD:
        _STOPPED_RUNS.add(run_id)
        running = [child.stop for child in _RUNNING.values() if child.run_id == run_id]
        running += [stop for owner, stop in _WAITS.values() if owner == run_id]
    for stop in running:
        stop.set()
    return len(running)


def allow_run_children(run_id: str) -> None:
    """Children may run for this run again (the step that was stopped has ended)."""
    with _GUARD:
        _STOPPED_RUNS.discard(run_id)


def run_child(
    argv: list[str],
    stdin_text: str | None,
    cwd: Path,
    env: dict[str, str],
    timeout_seconds: float,
    no_output_seconds: float | None,
    log_path: Path,
    record_path: Path,
    record: Mapping[str, object],
) -> ChildOutcome:
    """Run one command to its end or its stop; raises OSError if it cannot be started."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    record_path.parent.mkdir(parents=True, exist_ok=True)
    _startable(argv[0], cwd, env)
    began = time.monotonic()
    process = subprocess.Popen(
        kept(argv),
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: a stop reaches all it started
    )
    running = _Running(process, run_id=str(record.get("run_id") or ""))
    with _GUARD:
        _RUNNING[process.pid] = running
        stopped_run = running.run_id in _STOPPED_RUNS
    if _STOPPING.is_set() or stopped_run:
        running.stop.set()
    try:
        atomic_write_text(
            record_path,
            json.dumps({**record, "pid": process.pid, "pgid": process.pid,
                        "daemon_pid": os.getpid(), "started": time.time()}),
        )  # fmt: skip
        return _supervise(process, running, stdin_text, began, timeout_seconds,
                          no_output_seconds, log_path)  # fmt: skip
    finally:
        with _GUARD:
            _RUNNING.pop(process.pid, None)
        if process.poll() is None:
            terminate_group(process.pid, process)
        marker = env.get(SESSION_VARIABLE)
        swept = process.returncode is not None and process.returncode >= 0 and kept_by_keeper()
        # A keeper killed before its sweep: what is left in its cgroup, and what carries the
        # session's environment, are stopped here.
        ended = not swept and kept_by_keeper()
        if ended and end_keepers_cgroup(os.getpid(), process.pid, GRACE_SECONDS):
            log.warning("keepers_cgroup_ended", keeper=process.pid)
        if marker and not swept:
            stop_carriers(f"{SESSION_VARIABLE}={marker}")
        record_path.unlink(missing_ok=True)


KEEPER = Path(__file__).with_name("keeper.py")
SESSION_VARIABLE = "RAWP_SESSION_ID"  # in every child's environment: its session


def kept(argv: list[str]) -> list[str]:
    """The command run below the keeper (`keeper.py`), where Linux lets a process be the
    subreaper of what it starts; as it is elsewhere."""
    if not kept_by_keeper():
        return argv
    return [sys.executable, "-I", "-S", str(KEEPER), str(os.getpid()), str(GRACE_SECONDS), "--",
            *argv]  # fmt: skip


def kept_by_keeper() -> bool:
    """Whether children run below the keeper here (it stops what they leave when it ends)."""
    return sys.platform.startswith("linux")


def _startable(program: str, cwd: Path, env: Mapping[str, str]) -> None:
    """FileNotFoundError or PermissionError, as starting it would raise, for a program that
    cannot be run (checked here: the keeper would only say so in its exit code)."""
    if os.sep in program:
        path = Path(program) if Path(program).is_absolute() else cwd / program
        if not path.is_file():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        if not os.access(path, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
    elif shutil.which(program, path=env.get("PATH", os.defpath)) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


def stop_carriers(marker: str) -> int:
    """Stop every process whose environment holds `marker` (NAME=value), wherever it went
    (a new session, another group); returns how many there were."""
    wanted = marker.encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as handle:
                if wanted in handle.read().split(b"\0"):
                    found.append(int(entry.name))
        except OSError:
            continue
    for signum in (signal.SIGTERM, signal.SIGKILL):
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)
        deadline = time.monotonic() + (GRACE_SECONDS if signum == signal.SIGTERM else 0)
        while time.monotonic() < deadline and any(pid_alive(pid) for pid in found):
            time.sleep(POLL_SECONDS)
    if found:
        log.warning("escaped_children_stopped", count=len(found))
    return len(found)


def _supervise(
    process: subprocess.Popen[bytes],
    running: _Running,
    stdin_text: str | None,
    began: float,
    timeout_seconds: float,
    no_output_seconds: float | None,
    log_path: Path,
) -> ChildOutcome:
    streams = _Streams(log_path)
    readers = [
        threading.Thread(target=streams.pump, args=(process.stdout, "stdout"), daemon=True),
        threading.Thread(target=streams.pump, args=(process.stderr, "stderr"), daemon=True),
    ]
    if stdin_text is not None:
        readers.append(threading.Thread(target=_feed, args=(process, stdin_text), daemon=True))
    for reader in readers:
        reader.start()
    stopped: str | None = None
    ended = _end_watch(process)
    while stopped is None:
        try:
            ended(POLL_SECONDS)
            process.wait(timeout=0 if ended is not _poll else POLL_SECONDS)
            break
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if running.stop.is_set():
            stopped = "STOPPED"
        elif now - began > timeout_seconds:
            stopped = "TIMEOUT"
        elif no_output_seconds is not None and now - streams.last_output > no_output_seconds:
            stopped = "NO_OUTPUT"
    if stopped is not None:
        terminate_group(process.pid, process)
    else:
        terminate_group(process.pid, None)  # what it left running in its group
    for reader in readers:
        reader.join(timeout=GRACE_SECONDS)
    streams.close()
    return ChildOutcome(
        returncode=process.returncode,
        stopped=stopped,
        stdout=streams.stdout.decode("utf-8", errors="replace"),
        stderr_tail=bytes(streams.tail).decode("utf-8", errors="replace").strip(),
        seconds=time.monotonic() - began,
        stdout_cut=streams.stdout_cut,
    )


def _poll(seconds: float) -> None:
    """No way to be woken by the child's end: `Popen.wait` polls it."""


def _end_watch(process: subprocess.Popen[bytes]) -> Callable[[float], None]:
    """A wait of at most N seconds that returns the moment the child ends (its pidfd, where
    Linux has one; `Popen.wait`'s own polling, which may notice it up to 50 ms late, else)."""
    try:
        fd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        return _poll
    watcher = select.poll()
    watcher.register(fd, select.POLLIN)

    def wait(seconds: float) -> None:
        watcher.poll(seconds * 1000)

    weakref.finalize(wait, os.close, fd)
    return wait


def _feed(process: subprocess.Popen[bytes], text: str) -> None:
    assert process.stdin is not None
    try:
        process.stdin.write(text.encode("utf-8"))
        process.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # the child does not read its input: its exit says the rest


class _Streams:
    """The child's two output streams: a bounded log, the stdout, the tail of stderr."""

    def __init__(self, log_path: Path) -> None:
        self.log = log_path.open("ab")
        self.logged = {"stdout": 0, "stderr": 0}
        self.stdout = bytearray()
        self.stdout_cut = False
        self.tail: deque[int] = deque(maxlen=STDERR_TAIL_BYTES)
        self.last_output = time.monotonic()
        self.guard = threading.Lock()

    def pump(self, stream: object, name: str) -> None:
        """Copy one stream until it closes."""
        fd = stream.fileno()  # type: ignore[attr-defined]
        while chunk := os.read(fd, 65536):
            self.last_output = time.monotonic()
            with self.guard:
                if name == "stdout":
                    room = MAX_STDOUT_BYTES - len(self.stdout)
                    self.stdout += chunk[:room]
                    self.stdout_cut |= len(chunk) > room
                else:
                    self.tail.extend(chunk)
                self._log(name, chunk)

    def _log(self, name: str, chunk: bytes) -> None:
        room = MAX_LOG_BYTES - self.logged[name]
        if room <= 0:
            return
        part = chunk[:room]
        prefix = b"" if name == "stdout" else b"[stderr] "
        self.log.write(prefix + part)
        self.logged[name] += len(part)
        if len(chunk) > room:
            self.log.write(f"\n[{name} log cut at {MAX_LOG_BYTES} bytes]\n".encode())
        self.log.flush()

    def close(self) -> None:
        """Close the log."""
        with self.guard:
            self.log.close()


KEEPER_MARGIN = 2.0  # s: a keeper's own grace for what is below it ends before ours


def terminate_group(pgid: int, leader: subprocess.Popen[bytes] | None) -> bool:
    """SIGTERM the group, wait the grace, SIGKILL what is left; whether anything was there.

    `leader` is our own child at the head of the group (it must be reaped, or it would look
    alive forever as a zombie); None for a group whose leader is gone or is not ours. A
    keeper at the head stops what is below it within the grace, and is given a margin more.
    """
    if not _signal_group(pgid, signal.SIGTERM):
        return False
    deadline = time.monotonic() + GRACE_SECONDS + KEEPER_MARGIN
    while time.monotonic() < deadline:
        if leader is not None:
            try:
                leader.wait(timeout=POLL_SECONDS)
            except subprocess.TimeoutExpired:
                continue
            leader = None  # reaped: now the group is gone when its other members are
        if not _signal_group(pgid, 0):
            return True
        time.sleep(POLL_SECONDS)
    _signal_group(pgid, signal.SIGKILL)
    if leader is not None:
        leader.wait()
    return True


def _signal_group(pgid: int, signum: int) -> bool:
    """Send `signum` to a process group; whether the group exists."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, not ours to signal
    return True


log = structlog.get_logger(__name__)
RECORDS = "children"


def record_folders(runs: Path, state: Path) -> Iterable[Path]:
    """Where child records live: each run's `children/` and the home's state (no-run calls)."""
    yield state / RECORDS
    try:
        entries = list(os.scandir(runs))
    except FileNotFoundError:
        return
    for entry in entries:
        folder = Path(entry.path) / RECORDS
        if entry.is_dir(follow_symlinks=False) and folder.is_dir():
            yield folder


def stop_leftover_children(runs: Path, state: Path) -> list[int]:
    """Stop the children of dead daemons; returns the process groups stopped."""
    for cgroup in end_leftover_cgroups(os.getpid(), GRACE_SECONDS):
        log.warning("leftover_cgroup_ended", cgroup=cgroup)
    stopped: list[int] = []
    for folder in record_folders(runs, state):
        for path in sorted(folder.glob("*.json")):
            record = _read(path)
            if record is None:
                path.unlink(missing_ok=True)  # torn by the crash before the child began
                continue
            daemon = int(record.get("daemon_pid", 0))
            if daemon and daemon != os.getpid() and pid_alive(daemon):
                continue  # another daemon's child, still supervised (not ours to stop)
            pgid = int(record.get("pgid", 0))
            if pgid > 0 and _group_carries(pgid, str(record.get("session_id", ""))):
                terminate_group(pgid, None)
                stopped.append(pgid)
                log.warning("leftover_child_stopped", pgid=pgid, record=str(path))
            path.unlink(missing_ok=True)
    return stopped


def _read(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _group_carries(pgid: int, session_id: str) -> bool:
    """Whether some process of the group has this session id in its environment."""
    if not session_id:
        return False
    marker = f"RAWP_SESSION_ID={session_id}".encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            if int(fields[2]) != pgid:  # after ")": state, ppid, pgrp
                continue
            with open(f"/proc/{entry.name}/environ", "rb") as handle:
                if marker in handle.read().split(b"\0"):
                    return True
        except (OSError, IndexError, ValueError):
            continue
    return False
