"""Benchmark of `multiverse status` and `multiverse runs` with a long history, and of archiving it.

Run: `make bench-status` (or `.venv/bin/python bench/status.py`). Each home is built in a fresh
temporary folder: N COMPLETED past runs as the daemon leaves them (a process_runs row, an
instruction and two catalog rows each, a run folder with its request and a timeline), plus 10
live runs. Each command is timed as a user runs it: a new process of the installed CLI, from
start to exit, median of REPEATS after one warm-up. The anchor is the same CLI's `--version`
(interpreter start and the CLI's imports), timed in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from multiverse.home import Home, init_home
from multiverse.models import (
    AssetType,
    CatalogEntry,
    InstructionStatus,
    ProcessRun,
    Status,
    UserInstruction,
)
from multiverse.store import KNOWLEDGE_CATALOG, PROCESS_RUNS, USER_INSTRUCTIONS, TableStore

# bench/orchestrator.py is named like the package: bench/ must not shadow `orchestrator`.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from orchestrator.archiving import Archiver  # noqa: E402

LIVE = 10
CLI = [sys.executable, "-m", "app.cli"]


def _run_id(n: int) -> str:
    """The n-th past run, one every 7 s from 2026-10-01 (a valid, unique, sortable id)."""
    day, second = divmod(n * 7, 86_400)
    hour, rest = divmod(second, 3600)
    return f"run-202610{1 + day:02d}-{hour:02d}{rest // 60:02d}{rest % 60:02d}-001"


def build(folder: Path, past: int) -> Home:
    """A home with `past` COMPLETED runs and LIVE recent ones (one waiting for an answer)."""
    home = Home(folder)
    init_home(home)
    store = TableStore()
    runs, instructions, catalog = [], [], []
    for n in range(past + LIVE):
        run_id = _run_id(n) if n < past else f"run-20261123-1000{n - past:02d}-001"
        status = Status.COMPLETED if n < past + LIVE - 1 else Status.AWAITING_CONFIRMATION
        request = f"Analyse quarterly report {n} and write a two-page market memo"
        runs.append(ProcessRun(run_id=run_id, user_request=request, status=status))
        instructions.append(
            UserInstruction(
                instruction_id=f"I{n + 1:05d}",
                run_id=run_id,
                instruction_type="GOAL",
                content=request,
                status=InstructionStatus.ACTIVE,
            )
        )
        for path, kind in (
            (f"runs/{run_id}/workspace/ANALYZING/analysis.md", AssetType.ANALYSIS_REPORT),
            (f"outputs/{run_id}/report.md", AssetType.FINAL_OUTPUT),
        ):
            catalog.append(CatalogEntry(file_path=path, run_id=run_id, asset_type=kind))
        root = home.run(run_id).root
        (root / "workspace" / "ANALYZING").mkdir(parents=True)
        (root / "request.md").write_text(request + "\n", encoding="utf-8")
        at = f"{run_id[4:8]}-{run_id[8:10]}-{run_id[10:12]}T{run_id[13:15]}:{run_id[15:17]}"
        events = [
            {"at": f"{at}:00.000Z", "event": "created"},
            {"at": f"{at}:01.000Z", "event": "step_started", "step": "PLAN"},
            {"at": f"{at}:09.000Z", "event": "step_finished", "step": "PLAN", "status": "ok"},
        ]
        lines = "".join(json.dumps(event) + "\n" for event in events)
        (root / "timeline.jsonl").write_text(lines, encoding="utf-8")
    store.table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).insert(*runs)
    store.table(USER_INSTRUCTIONS, home.db / USER_INSTRUCTIONS.filename).insert(*instructions)
    store.table(KNOWLEDGE_CATALOG, home.db / KNOWLEDGE_CATALOG.filename).insert(*catalog)
    return home


def timed(home: Home, args: list[str], repeats: int, code: Path | None = None) -> float:
    """Median seconds of one CLI command in a new process (after one warm-up; `repeats` 0: one
    run, timed); `code`: run the CLI of that checkout instead (an older commit, on the same
    machine)."""
    home_args = [] if args == ["--version"] else ["--home", str(home.root)]
    command = [*CLI, *args, *home_args]
    # As a user's install runs it: compiled modules cached (no PYTHONDONTWRITEBYTECODE).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    times = []
    for attempt in range(repeats + 1):
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, env=env, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(args)} failed: {done.stderr.decode()}")
        if attempt or not repeats:
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    """Print the results as markdown."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--past", type=int, default=10_000)
    parser.add_argument(
        "--baseline",
        type=Path,
        help="a checkout of an older commit: its `status` is timed on the same homes",
    )
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {platform.system()} {platform.release()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print("| measure | median | target |")
    print("| --- | ---: | ---: |")
    with tempfile.TemporaryDirectory() as folder:
        empty = build(Path(folder) / "empty", 0)
        home = build(Path(folder) / "history", args.past)
        before = {"status, all live": (home, ["status"], None)}
        if args.baseline:
            before["baseline status, all live"] = (home, ["status"], args.baseline)
        live = interleaved(before, args.repeats)
        print(
            f"| `status`, {args.past:,} past runs all live (never archived) | "
            f"{live['status, all live']:.3f} s | |"
        )
        if args.baseline:
            print(
                f"| baseline ({args.baseline}) `status`, {args.past:,} past runs all live | "
                f"{live['baseline status, all live']:.3f} s | |"
            )
        started = time.perf_counter()
        cut = datetime(2026, 11, 1, tzinfo=UTC)  # the past runs, not the live ones
        result = Archiver(home, TableStore()).archive(before=cut)
        took = time.perf_counter() - started
        print(
            f"| `archive` of {len(result.archived):,} final runs (rows, folders, catalog) "
            f"| {took:.2f} s | |"
        )
        # Interleaved (one of each per round), so that the machine's drift hits all alike.
        commands = {
            "anchor": (empty, ["--version"], None),
            "status, 0 past": (empty, ["status"], None),
            "status, archived": (home, ["status"], None),
            "runs": (home, ["runs", "--archived", "--limit", "50"], None),
            "tree": (home, ["status", "latest"], None),
        }
        if args.baseline:
            commands["baseline status, 0 past"] = (empty, ["status"], args.baseline)
        found = interleaved(commands, args.repeats)
        rows = [
            ("anchor: `multiverse --version` (start and imports)", "anchor", ""),
            (f"`status`, 0 past runs, {LIVE} live", "status, 0 past", ""),
            (
                f"`status`, {args.past:,} past runs archived, {LIVE} live",
                "status, archived",
                "≤ 0.3 s",
            ),
            (f"`runs --archived --limit 50`, {args.past:,} archived", "runs", ""),
            (f"`status latest` (one run's tree), {args.past:,} archived", "tree", ""),
        ]
        if args.baseline:
            rows.insert(
                2, (f"baseline `status`, 0 past runs, {LIVE} live", "baseline status, 0 past", "")
            )
        for label, key, target in rows:
            print(f"| {label} | {found[key]:.3f} s | {target} |")


def interleaved(
    commands: dict[str, tuple[Home, list[str], Path | None]], repeats: int
) -> dict[str, float]:
    """Median seconds of each command, timed one of each per round (after a warm-up round)."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats + 1):
        for name, (home, args, code) in commands.items():
            times[name].append(timed(home, args, 0, code))
    return {name: statistics.median(values[1:]) for name, values in times.items()}


if __name__ == "__main__":
    main()
