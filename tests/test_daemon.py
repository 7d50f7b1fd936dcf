"""The daemon: real watchdog wake-ups, one daemon per home, clean stop on signals."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import Iterator

import pytest

from app.team import build_collaborators
from multiverse.atomic import atomic_write_text
from multiverse.config import DaemonConfig, load_runtime_mapping
from multiverse.home import Home
from multiverse.models import Status
from multiverse.store import PROCESS_RUNS, TableStore
from orchestrator.daemon import Daemon

from journey import cli, copy_assets, running_daemon, wait_for


def _statuses(home: Home) -> list[Status]:
    try:
        rows = TableStore().table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).rows()
    except Exception:
        return []
    return [row.status for row in rows]


@pytest.fixture
def daemon_process(home: Home) -> Iterator[subprocess.Popen[str]]:
    """`multiverse start` running on the home, stopped at the end."""
    with running_daemon(home) as process:
        yield process


def test_a_dropped_request_is_picked_up_confirmed_and_completed(
    home: Home, daemon_process: subprocess.Popen[str]
) -> None:
    """Drop → proposal → confirm → COMPLETED, driven only by file events; SIGINT exits 0."""
    copy_assets(home, "market_report_2024.md")
    atomic_write_text(home.inbox / "memo.md", "Write a short market memo from the report.\n")
    wait_for(lambda: _statuses(home) == [Status.AWAITING_CONFIRMATION], "the proposal")
    run_id = TableStore().table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).rows()[0].run_id
    assert cli(home, "confirm", run_id).returncode == 0
    wait_for(lambda: _statuses(home) == [Status.COMPLETED], "the run to complete")
    assert (home.run(run_id).outputs / "report.md").exists()
    daemon_process.send_signal(signal.SIGINT)
    assert daemon_process.wait(timeout=60) == 0
    assert "Traceback" not in daemon_process.stderr.read()


def test_a_second_daemon_on_the_same_home_is_refused(
    home: Home, daemon_process: subprocess.Popen[str]
) -> None:
    """One daemon per home: a second `start` exits with a clear message; SIGTERM stops the first."""
    second = cli(home, "start", "--once")
    assert second.returncode == 2
    assert "already serving" in second.stderr and "Traceback" not in second.stderr
    serving = cli(home, "start")  # the serving form: only the refusal, no "is serving" first
    assert serving.returncode == 2 and "already serving" in serving.stderr
    assert "is serving" not in serving.stdout and "stopped:" not in serving.stdout
    daemon_process.send_signal(signal.SIGTERM)
    assert daemon_process.wait(timeout=60) == 0


def test_tick_reports_whether_it_started_work(home: Home) -> None:
    """`tick()` does one pass: nothing to do is False; a settled request in the inbox is True."""
    crew = build_collaborators(
        home, load_runtime_mapping(home.root), os.environ, console=lambda t: None
    )
    daemon = Daemon(crew, DaemonConfig(inbox_settle_ms=0))
    assert daemon.tick() is False
    atomic_write_text(home.inbox / "ask.md", "List the assets\n")
    daemon.wake("inbox")
    assert daemon.tick() is True
    assert daemon.run(once=True) == 0
    assert (home.inbox / "done" / "ask.reply.md").exists()
    assert (home.inbox / "done" / "ask.md").exists()


def test_watchdogs_stop_race_error_is_not_shown(caplog: pytest.LogCaptureFixture) -> None:
    """The inotify read that races the observer's stop is not shown; other watchdog errors are."""
    logger = logging.getLogger("watchdog.observers.inotify")
    with caplog.at_level(logging.ERROR):
        logger.error("InotifyEmitter.queue_events() called when the thread is inactive")
        logger.error("inotify watch limit reached")
    assert [record.getMessage() for record in caplog.records] == ["inotify watch limit reached"]
