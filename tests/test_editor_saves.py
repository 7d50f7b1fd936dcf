"""A person's editor saving tables during whole runs costs no row and no edit (SPEC §3.1).

A real daemon (`multiverse start`) serves a run while another process, like an editor that
takes no lock, saves the global catalog and the newest run's tasks.md every few ms (SAVE_MS):
truncate-then-write in two chunks, or atomically. At the end every row the daemon wrote is
there, every edit of the "person" is there, and every run COMPLETED.

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
import time
from pathlib import Path
from typing import Any

import pytest

from multiverse.home import Home
from multiverse.models import Status
from multiverse.store import KNOWLEDGE_CATALOG, PROCESS_RUNS, TASKS, TableSpec, TableStore

from journey import cli, copy_assets, wait_for

WRITER = Path(__file__).resolve().parent / "editor_writer.py"
# How often the person saves, and how long they keep editing, through runs one after another.
# The suite saves every 20 ms through one run, beside its other tests;
# `MULTIVERSE_EDITOR_MS=5 MULTIVERSE_EDITOR_SECONDS=60 pytest tests/test_editor_saves.py` saves
# every 5 ms for a minute (by hand, on a machine doing nothing else: BENCHMARKS.md).
SAVE_MS = int(os.environ.get("MULTIVERSE_EDITOR_MS", "20"))
SECONDS = float(os.environ.get("MULTIVERSE_EDITOR_SECONDS", "0"))
REQUEST = (
    "Analyse the market report with the latest news and write a memo with a chart of revenue "
    "by region."
)


def _statuses(home: Home) -> dict[str, str]:
    """Each run's status as db/process_runs.md says it (read directly: a cheap look; empty
    while the daemon's write leaves it unreadable for a moment: asked again at the next poll)."""
    try:
        rows = TableStore().table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).rows()
    except Exception:
        return {}
    return {row.run_id: row.status.value for row in rows}


def _lost(edits: list[dict[str, Any]], catalog: Path) -> list[dict[str, Any]]:
    """The edits whose marker is not in their cell now (each table read once), nor in a save
    the daemon kept aside beside it (`.<name>.kept-<time>.md`, said in messages)."""
    tables: dict[str, dict[str, Any]] = {}
    kept: dict[str, str] = {}
    lost = []
    for edit in edits:
        path = Path(edit["file"])
        if edit["file"] not in tables:
            spec: TableSpec[Any] = KNOWLEDGE_CATALOG if edit["file"] == str(catalog) else TASKS
            rows = TableStore().table(spec, path).rows()
            tables[edit["file"]] = {row.key: row for row in rows}
            aside = sorted(path.parent.glob(f".{path.stem}.kept-*{path.suffix}"))
            kept[edit["file"]] = "".join(p.read_text(encoding="utf-8") for p in aside)
        row = tables[edit["file"]].get(edit["key"])
        there = row is not None and edit["marker"] in str(getattr(row, edit["column"]))
        if not there and edit["marker"] not in kept[edit["file"]]:
            lost.append(edit)
    return lost


def _one_run(home: Home, request: str, before: set[str]) -> str:
    """Submit a request, confirm its proposal, wait until it ends; returns its run id."""
    assert cli(home, "submit", "--no-wait", request).returncode == 0
    wait_for(lambda: set(_statuses(home)) - before, "the new run")
    (run_id,) = set(_statuses(home)) - before
    wait_for(lambda: _statuses(home).get(run_id) == "AWAITING_CONFIRMATION", "the proposal")
    assert cli(home, "confirm", run_id).returncode == 0
    wait_for(lambda: _statuses(home).get(run_id) in ("COMPLETED", "FAILED"), "the run to end")
    return run_id


@pytest.mark.parametrize("mode", ["truncate", "atomic"])
def test_an_editor_saving_often_loses_nothing(home: Home, tmp_path: Path, mode: str) -> None:
    """Every daemon row and every edit survive; every run completes."""
    copy_assets(home, "market_report_2024.md", "quarterly_revenue.csv")
    # The console goes to a file: a minute of restorations said would fill a pipe read only at
    # the end, and the daemon would wait on it.
    output = (tmp_path / "console.txt").open("w", encoding="utf-8")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "start", "--home", str(home.root)],
        stdout=output,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    writer: subprocess.Popen[bytes] | None = None
    stop, log = tmp_path / "stop", tmp_path / "edits.jsonl"
    catalog = home.db / KNOWLEDGE_CATALOG.filename
    run_ids: list[str] = []
    try:
        # The first run's proposal fills the catalog; the person edits from then on: the
        # catalog, and the tasks.md of the newest run.
        assert cli(home, "submit", "--no-wait", REQUEST).returncode == 0
        wait_for(lambda: "AWAITING_CONFIRMATION" in _statuses(home).values(), "the proposal")
        (first,) = _statuses(home)
        writer = subprocess.Popen(
            [
                sys.executable,
                str(WRITER),
                mode,
                str(SAVE_MS),
                str(stop),
                str(log),
                f"{catalog}:file_path:summary",
                f"{home.runs}/*/db/{TASKS.filename}:task_id:task_purpose",
            ],
        )
        wait_for(lambda: log.exists() and log.stat().st_size > 0, "the editor's first save")
        assert cli(home, "confirm", first).returncode == 0
        wait_for(lambda: _statuses(home).get(first) in ("COMPLETED", "FAILED"), "the run to end")
        run_ids.append(first)
        began = time.monotonic()
        while time.monotonic() - began < SECONDS:  # by hand: runs one after another
            run_ids.append(_one_run(home, REQUEST, set(_statuses(home))))
    finally:
        stop.touch()
        if writer is not None:
            writer.wait(timeout=60)
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)
        output.close()
    console = (tmp_path / "console.txt").read_text(encoding="utf-8")
    statuses = _statuses(home)
    assert all(statuses[run_id] == Status.COMPLETED for run_id in run_ids), console

    # Every edit the "person" saved is still there.
    edits = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert len(edits) >= 20, f"the writer made only {len(edits)} edits"
    lost = _lost(edits, catalog)
    assert not lost, f"{len(lost)} of {len(edits)} edits lost, e.g. {lost[:3]}"

    # Every row the daemon wrote is there: each run's tree COMPLETED, every file catalogued.
    catalogued = {row.file_path for row in TableStore().table(KNOWLEDGE_CATALOG, catalog).rows()}
    for run_id in run_ids:
        tree = json.loads(cli(home, "status", run_id, "--json").stdout)
        for level in ("phases", "stages", "tasks", "tool_tasks"):
            assert tree[level] and {row["status"] for row in tree[level]} == {"COMPLETED"}, level
        paths = home.run(run_id)
        produced = [p for p in paths.workspace.rglob("*") if p.is_file()]
        produced += [p for p in paths.outputs.rglob("*") if p.is_file()]
        produced += [p for p in home.assets.iterdir() if p.is_file()]
        missing = [home.relative(p) for p in produced if home.relative(p) not in catalogued]
        assert not missing, missing
