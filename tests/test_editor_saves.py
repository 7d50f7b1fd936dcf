"""A person's editor saving tables during whole runs costs no row and no edit (SPEC §3.1).

A real daemon (`multiverse start`) serves a run while another process, like an editor that
takes no lock, saves the global catalog and the run's tasks.md every 20 ms: truncate-then-write
in two chunks, or atomically. At the end every row the daemon wrote is there, every edit of the
"person" is there, and the run COMPLETED.

The daemon stays a process of its own, as it runs for a user: the test counts on how quickly
the daemon goes from reading a table to renaming its new version (an editor's save landing in
between is not seen), and in a thread of the test process that stretch is lengthened by the
test process's own work (its garbage collections, its other threads), so the test would measure
the test runner rather than the daemon. While it waits, the test reads the table itself.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from multiverse.home import Home
from multiverse.models import Status
from multiverse.store import KNOWLEDGE_CATALOG, TASKS, TableSpec, TableStore

from journey import cli, copy_assets, first_row, wait_for

WRITER = Path(__file__).resolve().parent / "editor_writer.py"
REQUEST = (
    "Analyse the market report with the latest news and write a memo with a chart of revenue "
    "by region."
)


def _status(home: Home) -> str | None:
    result = cli(home, "status", "--json")
    if result.returncode != 0:
        return None
    rows = json.loads(result.stdout)
    return str(rows[0]["status"]) if rows else None


def _row_status(home: Home) -> str | None:
    """The run's status as db/process_runs.md says it (read directly: a cheap look)."""
    run = first_row(home)
    return None if run is None else run.status.value


def _cell(spec: TableSpec[Any], path: Path, key: str, column: str) -> str:
    row = TableStore().table(spec, path).get(key)
    return "" if row is None else str(getattr(row, column))


@pytest.mark.parametrize("mode", ["truncate", "atomic"])
def test_an_editor_saving_every_20_ms_loses_nothing(home: Home, tmp_path: Path, mode: str) -> None:
    """Every daemon row and every edit survive; the run completes; some saves were restored."""
    copy_assets(home, "market_report_2024.md", "quarterly_revenue.csv")
    assert cli(home, "submit", REQUEST).returncode == 0
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    daemon = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "start", "--home", str(home.root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    writer: subprocess.Popen[bytes] | None = None
    stop, log = tmp_path / "stop", tmp_path / "edits.jsonl"
    try:
        wait_for(lambda: _row_status(home) == "AWAITING_CONFIRMATION", "the proposal")
        run_id = json.loads(cli(home, "status", "--json").stdout)[0]["run_id"]
        catalog = home.db / KNOWLEDGE_CATALOG.filename
        tasks = home.run(run_id).db / TASKS.filename
        writer = subprocess.Popen(
            [
                sys.executable,
                str(WRITER),
                mode,
                "20",
                str(stop),
                str(log),
                f"{catalog}:file_path:summary",
                f"{tasks}:task_id:task_purpose",
            ],
            env=env,
        )
        # The person is editing before the run goes on (a slow start of the writer's process
        # would otherwise let the run finish before the first save).
        wait_for(lambda: log.exists() and log.stat().st_size > 0, "the editor's first save")
        assert cli(home, "confirm", run_id).returncode == 0
        wait_for(lambda: _row_status(home) in ("COMPLETED", "FAILED"), "the run to finish")
    finally:
        stop.touch()
        if writer is not None:
            writer.wait(timeout=60)
        daemon.send_signal(signal.SIGTERM)
        console, _ = daemon.communicate(timeout=60)
    assert _status(home) == Status.COMPLETED, console

    # Every edit the "person" saved is still there.
    edits = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert len(edits) >= 20, f"the writer made only {len(edits)} edits"
    specs = {str(catalog): KNOWLEDGE_CATALOG, str(tasks): TASKS}
    lost = [
        edit
        for edit in edits
        if edit["marker"]
        not in _cell(specs[edit["file"]], Path(edit["file"]), edit["key"], edit["column"])
    ]
    assert not lost, f"{len(lost)} of {len(edits)} edits lost, e.g. {lost[:3]}"

    # Every row the daemon wrote is there: the whole tree COMPLETED, every file catalogued.
    tree = json.loads(cli(home, "status", run_id, "--json").stdout)
    for level in ("phases", "stages", "tasks", "tool_tasks"):
        assert tree[level] and {row["status"] for row in tree[level]} == {"COMPLETED"}, level
    catalogued = {row.file_path for row in TableStore().table(KNOWLEDGE_CATALOG, catalog).rows()}
    paths = home.run(run_id)
    produced = [p for p in paths.workspace.rglob("*") if p.is_file()]
    produced += [p for p in paths.outputs.rglob("*") if p.is_file()]
    produced += [p for p in home.assets.iterdir() if p.is_file()]
    missing = [home.relative(p) for p in produced if home.relative(p) not in catalogued]
    assert not missing, missing
