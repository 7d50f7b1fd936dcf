"""Helpers of the end-to-end tests: drive the real CLI in child processes over a real home."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from multiverse.home import Home
from multiverse.models import ProcessRun
from multiverse.store import PROCESS_RUNS, TableStore

FIXTURE_ASSETS = Path(__file__).resolve().parent / "fixtures" / "assets"


def cli(
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
    """`start --once`: work until nothing can advance without the user."""
    return cli(home, "start", "--once", env=env)


def first_row(home: Home) -> ProcessRun | None:
    """The first row of db/process_runs.md, read directly (None while there is none, or while
    the daemon's write leaves it unreadable for a moment: asked again at the next poll)."""
    try:
        rows = TableStore().table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).rows()
    except Exception:
        return None
    return rows[0] if rows else None


def only_run(home: Home) -> dict[str, Any]:
    """The single run of the home."""
    rows = runs(home)
    assert len(rows) == 1, rows
    return rows[0]


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
