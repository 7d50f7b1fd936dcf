"""Durability (SPEC §14): a daemon killed with SIGKILL at many points of a run, restarted
each time, finishes the run as if nothing happened."""

from __future__ import annotations

import itertools
import json
from collections import Counter

from multiverse.home import Home
from multiverse.store import GLOBAL_TABLES, RUN_TABLES, TableStore

from forked import forked_once
from journey import cli, copy_assets, only_run

# Different write counts make each life of the daemon die at a different kind of step; the
# larger ones let a step that makes many files (publishing the report) finish in some life.
KILL_POINTS = (2, 3, 2, 12, 2, 3, 2, 9, 2, 2)
MAX_LIVES = 150


def _tables_parse(home: Home, run_id: str) -> None:
    store = TableStore()
    for spec in GLOBAL_TABLES:
        store.table(spec, home.db / spec.filename).rows()
    for spec in RUN_TABLES:
        store.table(spec, home.run(run_id).db / spec.filename).rows()


def _executions(home: Home) -> Counter[str]:
    counts: Counter[str] = Counter()
    log = home.state / "logs" / "daemon.jsonl"
    for line in log.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("event") == "step_started" and "EXECUTE" in str(event.get("step")):
            counts[str(event["step"])] += 1
    return counts


def test_sigkill_at_many_points_then_restart_completes(home: Home) -> None:
    """Every life is cut after k durable writes; the run still completes exactly once."""
    copy_assets(home)  # four sources: two fact-extraction tasks, more steps to cut
    assert (
        cli(
            home,
            "submit",
            # Outside information and a chart asked for: a web-search tool task, a drawn chart.
            "Analyse the market report with the latest news and write a memo with a chart of "
            "revenue by region",
        ).returncode
        == 0
    )
    kills = 0
    points = itertools.cycle(KILL_POINTS)
    for _ in range(MAX_LIVES):
        result = forked_once(home, env={"MULTIVERSE_KILL_AFTER_WRITES": str(next(points))})
        if result.returncode == -9:
            kills += 1
            rows = only_run(home) if (home.db / "process_runs.md").exists() else None
            if rows is not None:
                _tables_parse(home, rows["run_id"])
            continue
        assert result.returncode == 0, result.stderr
        run = only_run(home)
        if run["status"] == "AWAITING_CONFIRMATION":
            assert cli(home, "confirm", run["run_id"]).returncode == 0
            continue
        break
    run = only_run(home)
    assert run["status"] == "COMPLETED", run
    assert kills >= 20
    _tables_parse(home, run["run_id"])
    assert (home.run(run["run_id"]).outputs / "report.md").exists()
    # Work is redone only when it was the step in flight at a kill: at most once per kill.
    executions = _executions(home)
    assert executions
    assert sum(count - 1 for count in executions.values()) <= kills, executions
    messages = home.run(run["run_id"]).messages.read_text(encoding="utf-8")
    assert messages.count("· COMPLETION") == 1
