"""Helpers of the end-to-end tests: drive the real CLI over a real home.

`cli` and `once` run the command in this process (typer's CliRunner around `app.cli.run`, the
entry point's own error handling), as a user's shell would see it: exit status, stdout and
stderr apart. `cli_process` and `once_process` run it as a child process, for the tests whose
subject is a process (a kill, a signal, the daemon lock, an import that must not happen).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from app.cli import run
from app.team import Reloader, build_collaborators
from multiverse.config import load_runtime_mapping
from multiverse.home import Home, probe
from multiverse.logs import close_logging, configure_logging
from multiverse.models import ProcessRun
from multiverse.store import PROCESS_RUNS, TableStore
from orchestrator.daemon import Daemon

FIXTURE_ASSETS = Path(__file__).resolve().parent / "fixtures" / "assets"


def cli(
    home: Home, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `multiverse ARGS --home HOME` in this process; `env` applies during the call only."""
    return invoke([*args, "--home", str(home.root)], env=env)


def invoke(
    argv: Sequence[str], env: dict[str, str] | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`multiverse ARGV` in this process: the exit status, stdout and stderr a user would get.

    `env` is set for the call and restored after it; so is anything the command itself changes
    in os.environ, and the excepthook typer installs (`start` closes the logging it configures).
    """
    environ, hook = dict(os.environ), sys.excepthook
    try:
        with CliRunner().isolation(input=input, env=env) as (stdout, stderr, _):
            code = _exit_status(list(argv))
            sys.stdout.flush()
            sys.stderr.flush()
            out, err = stdout.getvalue(), stderr.getvalue()
    finally:
        sys.excepthook = hook
        _restore_environ(environ)
    return subprocess.CompletedProcess(
        ["multiverse", *argv], code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    )


def _exit_status(argv: list[str]) -> int:
    """Run the command line as the console entry point does; its exit status."""
    try:
        run(argv, prog_name="multiverse")
    except SystemExit as exit:
        if exit.code is None or isinstance(exit.code, int):
            return exit.code or 0
        print(exit.code, file=sys.stderr)
        return 1
    except Exception:  # our own bug: Python prints the traceback and exits 1
        traceback.print_exc()
        return 1
    return 0


def _restore_environ(before: dict[str, str]) -> None:
    for name in set(os.environ) - set(before):
        del os.environ[name]
    for name, value in before.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def cli_process(
    home: Home, *args: str, env: dict[str, str] | None = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """Run `multiverse ARGS --home HOME` as a child process."""
    environ = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args, "--home", str(home.root)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environ,
        encoding="utf-8",
    )


# A shell starts a foreground command with SIGINT at its default, whatever it ignores itself; a
# test run from a background job (`cmd &`, nohup, some CI runners) inherits SIGINT *ignored*, and
# Python then installs no KeyboardInterrupt handler, so a child would never see our Ctrl-C.
_AS_IN_A_TERMINAL = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


def cli_popen(home: Home, *args: str) -> subprocess.Popen[str]:
    """`multiverse ARGS --home HOME` started as a terminal starts it (Ctrl-C reaches it), its
    stdout and stderr piped."""
    return subprocess.Popen(
        [sys.executable, "-c", _AS_IN_A_TERMINAL, "-m", "app.cli", *args, "--home", str(home.root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )


def copy_assets(home: Home, *names: str) -> None:
    """Copy fixture assets (all when no names are given) into the home's assets/."""
    for path in sorted(FIXTURE_ASSETS.iterdir()):
        if not names or path.name in names:
            shutil.copy(path, home.assets / path.name)


def runs(home: Home) -> list[dict[str, Any]]:
    """`status --json`: every process_runs row (not the simple replies listed after them)."""
    result = cli(home, "status", "--json")
    assert result.returncode == 0, result.stderr
    data: list[dict[str, Any]] = json.loads(result.stdout)
    return [row for row in data if "run_id" in row]


def run_tree(home: Home, run_id: str) -> dict[str, Any]:
    """`status RUN --json`: the run's phases, stages, tasks and tool tasks."""
    result = cli(home, "status", run_id, "--json")
    data: dict[str, Any] = json.loads(result.stdout)
    assert result.returncode == (1 if data["run"]["status"] == "FAILED" else 0), result.stderr
    return data


def once(home: Home, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`start --once` in this process: work until nothing can advance without the user."""
    return cli(home, "start", "--once", env=env)


def once_process(home: Home, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`start --once` as a child process (one that is killed, or reads a fault at its start)."""
    return cli_process(home, "start", "--once", env=env)


def first_row(home: Home) -> ProcessRun | None:
    """The first row of db/process_runs.md, read directly (None while there is none, or while
    the daemon's write leaves it unreadable for a moment: asked again at the next poll)."""
    try:
        rows = TableStore().table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).rows()
    except Exception:
        return None
    return rows[0] if rows else None


def said_count(home: Home, run_id: str, kind: str) -> int:
    """How many messages of a kind (PROPOSAL, HOLD, CANCELLED …) the run's messages.md holds."""
    return home.run(run_id).messages.read_text(encoding="utf-8").count(f"· {kind} ")


def only_run(home: Home) -> dict[str, Any]:
    """The single run of the home."""
    rows = runs(home)
    assert len(rows) == 1, rows
    return rows[0]


def wait_until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Poll a condition until it holds (True) or the deadline passes (False: asked once more)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return bool(condition())


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 120) -> None:
    """Poll a condition with a deadline (no fixed sleeps)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@contextmanager
def running_daemon(
    home: Home, ready: Callable[[], bool] | None = None, quiet: bool = False
) -> Iterator[subprocess.Popen[str]]:
    """`multiverse start` serving the home once `ready` (default: its pid file exists); killed
    at the end if still running. `quiet`: its stdout is discarded (a long run fills a pipe)."""
    (home.state / "daemon.pid").unlink(missing_ok=True)
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "start", "--home", str(home.root)],
        stdout=subprocess.DEVNULL if quiet else subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        wait_for(ready or (lambda: (home.state / "daemon.pid").exists()), "the daemon to start")
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)


@dataclass
class Serving:
    """A daemon serving a home in a thread of this process (see `serving`)."""

    daemon: Daemon
    said: list[str] = field(default_factory=list)  # what it told the user, line by line
    status: list[int] = field(default_factory=list)  # `run`'s exit status, once stopped
    raised: list[BaseException] = field(default_factory=list)

    def stop(self) -> int:
        """Ask it to stop, as Ctrl-C does; its exit status once `run` has returned."""
        self.daemon.stop()
        return self.wait()

    def wait(self) -> int:
        """Wait for `run` to return; its exit status (what it raised is raised here)."""
        wait_for(lambda: bool(self.status or self.raised), "the daemon to stop")
        if self.raised:
            raise self.raised[0]
        return self.status[0]


@contextmanager
def serving(home: Home) -> Iterator[Serving]:
    """The home's daemon, built as `start` builds it, serving in a thread of this process once
    it beats: it watches the files and wakes at deadlines. What it tells the user goes to
    `said`, not to stdout, and it logs as `start` does (its log file, and warnings to the test's
    stderr), so a command run in process meanwhile prints only its own lines. Stopped at the
    end."""
    configure_logging(home.state / "logs" / "daemon.jsonl")
    mapping = load_runtime_mapping(home.root)
    said: list[str] = []
    crew = build_collaborators(home, mapping, os.environ, console=said.append)
    served = Serving(Daemon(crew, mapping.daemon, Reloader(home, os.environ)), said)

    def serve() -> None:
        try:
            served.status.append(served.daemon.run())
        except BaseException as error:  # raised in the test's thread by `wait`
            served.raised.append(error)

    thread = threading.Thread(target=serve, name="serving-daemon", daemon=True)
    thread.start()
    try:
        wait_for(lambda: probe(home.state).serving or not thread.is_alive(), "the daemon to beat")
        yield served
    finally:
        served.daemon.stop()
        thread.join(timeout=120)
        close_logging()
        assert not thread.is_alive(), "the daemon did not stop"
    if served.raised:
        raise served.raised[0]
