"""Writes cut short leave no trace (SPEC §14): a daemon killed mid-write leaves temporary files;
the next start removes those of dead writers (its own naming only), and none is ever catalogued
or announced as a deliverable."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from multiverse.home import Home
from multiverse.store import KNOWLEDGE_CATALOG, TableStore
from orchestrator.upkeep import remove_orphan_temps

from forked import forked
from journey import cli, copy_assets, once, only_run

REQUEST = "Analyse the market report and write a memo with a chart of the revenue figures."
DEAD_PID = 4_000_000  # above Linux's pid_max (4,194,304 at most): no process has it... almost
LIVES = 12


def _dead_pid() -> int:
    """A pid no process has now."""
    for pid in range(DEAD_PID, DEAD_PID + 1000):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            continue
    raise AssertionError("no free pid found")


def _temps(home: Home) -> list[Path]:
    return [p for p in home.root.rglob("*.tmp") if p.is_file()]


def test_only_dead_writers_temp_files_are_removed(home: Home) -> None:
    """A dead writer's temporary file goes; a live one's, and a person's `.tmp`, stay."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead, alive = _dead_pid(), sleeper.pid
    (home.outputs / "run-x").mkdir(parents=True)
    orphan = home.outputs / "run-x" / f".report.md.{dead}-3.tmp"
    in_flight = home.db / f".process_runs.md.{alive}-7.tmp"
    persons = home.outputs / "run-x" / "draft.tmp"
    looks_alike = home.db / ".notes.md.tmp"
    for path in (orphan, in_flight, persons, looks_alike):
        path.write_text("x", encoding="utf-8")
    try:
        assert remove_orphan_temps(home) == [orphan]
    finally:
        sleeper.kill()
        sleeper.wait()
    assert in_flight.exists() and persons.exists() and looks_alike.exists()


def test_this_process_keeps_its_own_writes_in_flight(home: Home) -> None:
    """A temporary file of this pid written now is a write in flight (another thread's) and
    stays; one older than this process is a dead namesake's (a reused pid) and goes."""
    own = os.getpid()
    in_flight = home.inbox / f".ask.md.reply.md.{own}-53.tmp"
    namesakes = home.db / f".process_runs.md.{own}-2.tmp"
    for path in (in_flight, namesakes):
        path.write_text("x", encoding="utf-8")
    an_hour_ago = time.time() - 3600
    os.utime(namesakes, (an_hour_ago, an_hour_ago))
    assert remove_orphan_temps(home) == [namesakes]
    assert in_flight.exists()


def test_kills_from_outside_leave_no_temp_file_and_none_is_delivered(home: Home) -> None:
    """A daemon killed at random moments, restarted each time: no `*.tmp` survives, none listed."""
    copy_assets(home, "market_report_2024.md", "quarterly_revenue.csv")
    assert cli(home, "submit", REQUEST).returncode == 0
    assert once(home).returncode == 0
    run_id = str(only_run(home)["run_id"])
    assert cli(home, "confirm", run_id).returncode == 0
    rng = random.Random(20261123)
    killed = 0
    for _ in range(LIVES):
        # A forked child: a real process, at work from its first moment (no imports to wait).
        with forked(home, "start") as daemon:
            deadline = time.monotonic() + rng.uniform(0.05, 2.0)
            while time.monotonic() < deadline and daemon.poll() is None:
                time.sleep(0.01)
            daemon.send_signal(signal.SIGKILL)  # from outside, at any instant
            daemon.wait(timeout=30)
        killed += 1
        if only_run(home)["status"] == "COMPLETED":
            break
    # A planted leftover of a dead writer, in the deliverables' folder itself.
    outputs = home.run(run_id).outputs
    outputs.mkdir(parents=True, exist_ok=True)
    (outputs / f".report.md.{_dead_pid()}-1.tmp").write_text("half", encoding="utf-8")
    result = once(home)
    assert result.returncode == 0, result.stderr
    assert only_run(home)["status"] == "COMPLETED"
    assert killed >= 1
    assert _temps(home) == []
    messages = home.run(run_id).messages.read_text(encoding="utf-8")
    completion = messages[messages.index("· COMPLETION") :]
    assert ".tmp" not in completion and "report.md" in completion
    catalog = TableStore().table(KNOWLEDGE_CATALOG, home.db / KNOWLEDGE_CATALOG.filename)
    assert not [row.file_path for row in catalog.rows() if row.file_path.endswith(".tmp")]
    shown = cli(home, "show", run_id).stdout
    assert ".tmp" not in shown
