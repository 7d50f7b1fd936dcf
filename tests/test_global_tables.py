"""A broken or deleted global table under a real daemon: said with its line, never a traceback,
the runs that need it shown paused by `status`, and everything goes on once the file is fixed."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from multiverse.errors import TableError
from multiverse.home import Home
from multiverse.store import KNOWLEDGE_CATALOG, PROCESS_RUNS, TableStore

from forked import Forked, forked
from journey import cli, copy_assets, wait_for

REQUEST = "Write a short market memo from the report."
FINISHED = ("COMPLETED", "FAILED")


@dataclass
class Console:
    """A `multiverse start` child process (forked, see forked.py), its output in files."""

    process: Forked

    def said(self) -> str:
        """What the daemon told the user: its stdout, the Communicator's console channel."""
        return self.process.stdout()

    def text(self) -> str:
        """Everything the daemon printed so far, stdout then stderr."""
        return self.said() + self.process.stderr()

    def stop(self) -> None:
        """SIGINT: the daemon stops cleanly, with status 0 and no traceback."""
        self.process.send_signal(signal.SIGINT)
        assert self.process.wait(timeout=60) == 0, self.text()
        assert "Traceback" not in self.text()


@pytest.fixture
def daemon(home: Home) -> Iterator[Console]:
    """`multiverse start` serving the home (one market report as its asset)."""
    copy_assets(home, "market_report_2024.md")
    with forked(home, "start") as process:
        console = Console(process)
        wait_for(lambda: "is serving" in console.said(), "the daemon to start", 60)
        yield console


def _statuses(home: Home) -> dict[str, str]:
    """run_id → status as db/process_runs.md says now ({} while it cannot be read)."""
    try:
        rows = TableStore().table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).rows()
    except TableError:
        return {}
    return {row.run_id: row.status.value for row in rows}


def _submit_and_wait(home: Home) -> str:
    """Submit the request and wait for the new run's proposal; returns its run_id."""
    before = set(_statuses(home))
    assert cli(home, "submit", REQUEST).returncode == 0
    proposed: list[str] = []

    def asked() -> bool:
        proposed[:] = [r for r, s in _statuses(home).items() if r not in before and s != "PENDING"]
        return bool(proposed)

    wait_for(asked, "the proposal")
    assert _statuses(home)[proposed[0]] == "AWAITING_CONFIRMATION"
    return proposed[0]


def _confirm_and_complete(home: Home, run_id: str, console: Console) -> None:
    confirmed = cli(home, "confirm", run_id)
    assert confirmed.returncode == 0, confirmed.stderr
    wait_for(lambda: _statuses(home).get(run_id) in FINISHED, "the run to finish")
    assert _statuses(home)[run_id] == "COMPLETED", console.text()


def _append_line(path: Path, line: str) -> int:
    """Append a line as an editor saves (truncate and rewrite); returns its line number."""
    text = path.read_text(encoding="utf-8")
    path.write_text(text + line + "\n", encoding="utf-8")
    return len(text.splitlines()) + 1


def _break_catalog(home: Home, run_id: str) -> tuple[str, str]:
    """A catalog whose only row has too few cells; returns `db/…md:LINE:` and the fixed text."""
    good = "# Knowledge base catalog\n\n| " + " | ".join(KNOWLEDGE_CATALOG.columns) + " |\n"
    good += "|---|---|---|---|---|\n"
    catalog = home.db / KNOWLEDGE_CATALOG.filename
    catalog.write_text(good, encoding="utf-8")
    line = _append_line(catalog, f"| assets/market_report_2024.md | {run_id} |")
    return f"db/knowledge_base_catalog.md:{line}:", good


def _status(home: Home, *args: str) -> str:
    result = cli(home, "status", *args)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return result.stdout


def test_a_broken_catalog_pauses_the_run_until_it_is_fixed(home: Home, daemon: Console) -> None:
    """A catalog row with too few cells is said once with its line; the run waits, completes."""
    run_id = _submit_and_wait(home)
    where, good = _break_catalog(home, run_id)
    assert cli(home, "confirm", run_id).returncode == 0
    wait_for(lambda: where in daemon.said(), "the daemon to name the broken line")

    assert _statuses(home)[run_id] not in FINISHED
    shown = _status(home)
    assert shown.splitlines()[0].startswith(where)
    assert f"paused: {where}" in shown
    assert json.loads(_status(home, "--json"))[0]["paused"].startswith(where)

    (home.db / KNOWLEDGE_CATALOG.filename).write_text(good, encoding="utf-8")  # row removed
    wait_for(lambda: _statuses(home)[run_id] in FINISHED, "the run to finish")
    assert _statuses(home)[run_id] == "COMPLETED", daemon.text()
    assert "paused" not in _status(home)
    daemon.stop()
    assert daemon.said().count(where) == 1, daemon.said()


def test_a_step_paused_by_a_broken_catalog_waits_for_the_file(home: Home, daemon: Console) -> None:
    """While the catalog stays broken, the console names it a few times at most, not per retry."""
    run_id = _submit_and_wait(home)
    where, _ = _break_catalog(home, run_id)
    assert cli(home, "confirm", run_id).returncode == 0
    wait_for(lambda: where in daemon.said(), "the daemon to name the broken line")
    assert f"paused: {where}" in _status(home)  # a person looks meanwhile
    assert f"paused: {where}" in _status(home, run_id)
    assert daemon.text().count(where) <= 5, daemon.text()[-2000:]


def test_a_broken_process_runs_keeps_a_waiting_run_waiting(home: Home, daemon: Console) -> None:
    """A broken process_runs.md is said once with its line; after the fix, confirm completes."""
    run_id = _submit_and_wait(home)
    table = home.db / PROCESS_RUNS.filename
    good = table.read_text(encoding="utf-8")
    where = f"db/process_runs.md:{_append_line(table, '| run-20990101-000000-001 | cut |')}:"
    wait_for(lambda: where in daemon.said(), "the daemon to name the broken line")

    shown = _status(home)
    assert shown.splitlines()[0].startswith(where)
    assert f"‖ {run_id}  ?" in shown and f"paused: {where}" in shown
    result = cli(home, "status", "--json")
    assert result.returncode == 0 and result.stderr.startswith(where)
    [row] = json.loads(result.stdout)
    assert (row["run_id"], row["user_request"], row["status"]) == (run_id, REQUEST, None)
    assert row["paused"].startswith(where)
    assert f"paused: {where}" in _status(home, run_id)
    refused = cli(home, "confirm", run_id)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr

    table.write_text(good, encoding="utf-8")  # the broken row removed
    assert _statuses(home) == {run_id: "AWAITING_CONFIRMATION"}
    _confirm_and_complete(home, run_id, daemon)
    daemon.stop()
    assert daemon.said().count(where) == 1, daemon.said()


def test_a_deleted_process_runs_is_rebuilt_with_every_run(home: Home, daemon: Console) -> None:
    """Deleted under a finished and a waiting run: both rows come back, said; confirm completes."""
    done = _submit_and_wait(home)
    _confirm_and_complete(home, done, daemon)
    waiting = _submit_and_wait(home)
    before = len(daemon.said())

    (home.db / PROCESS_RUNS.filename).unlink()
    expected = {done: "COMPLETED", waiting: "AWAITING_CONFIRMATION"}
    wait_for(lambda: _statuses(home) == expected, "the rows to be rebuilt")
    wait_for(lambda: "db/process_runs.md" in daemon.said()[before:], "the daemon to say so")
    _confirm_and_complete(home, waiting, daemon)
    daemon.stop()


def test_a_deleted_process_runs_is_said_once(home: Home, daemon: Console) -> None:
    """Deleted under two runs, the rebuild is said in one message that says the file was missing."""
    runs = {_submit_and_wait(home), _submit_and_wait(home)}
    before = len(daemon.said())

    (home.db / PROCESS_RUNS.filename).unlink()
    wait_for(lambda: set(_statuses(home)) == runs, "the rows to be rebuilt")
    wait_for(lambda: "db/process_runs.md" in daemon.said()[before:], "the daemon to say so")
    assert "paused" not in _status(home)  # and a moment for any further message
    said = [line for line in daemon.said()[before:].splitlines() if "db/process_runs.md" in line]
    assert len(said) == 1 and "missing" in said[0], said
