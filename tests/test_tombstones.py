"""The tombstone file stays small: the daemon applies tombstones to its journal, then drops
those older than an hour; an append racing a compaction is never lost."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from past_runs import make_history

from multiverse.home import Home
from multiverse.models import ProcessRun, Status
from multiverse.store import PROCESS_RUNS, TableStore
from multiverse.store.journal import (
    TOMBSTONE_KEEP_SECONDS,
    RowJournal,
    add_tombstones,
    compact_tombstones,
)

from journey import once

RUN = "run-20261123-100000-{:03d}"


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _old_tombstone(path: Path, table: Path, key: str, age: float) -> None:
    line = {"table": str(table), "key": key, "at": time.time() - age}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(line) + "\n")


def test_compaction_drops_old_and_cut_lines_and_keeps_recent_ones(tmp_path: Path) -> None:
    path, table = tmp_path / "deleted_rows.jsonl", tmp_path / "t.md"
    _old_tombstone(path, table, "old", 2 * TOMBSTONE_KEEP_SECONDS)
    with path.open("a", encoding="utf-8") as file:
        file.write('{"table": "cut by a cra')  # a crash mid-append
        file.write("\n")
    add_tombstones(path, table, ["new"])
    assert compact_tombstones(path, time.time() - TOMBSTONE_KEEP_SECONDS) == 2
    assert [line["key"] for line in _lines(path)] == ["new"]
    assert compact_tombstones(path, time.time() - TOMBSTONE_KEEP_SECONDS) == 0  # nothing to do


def test_appends_from_other_processes_survive_compactions(tmp_path: Path) -> None:
    """Two processes append 200 tombstones each while this one compacts in a loop: none lost."""
    path, table = tmp_path / "deleted_rows.jsonl", tmp_path / "t.md"
    _old_tombstone(path, table, "old", 2 * TOMBSTONE_KEEP_SECONDS)
    script = (
        "import sys; from pathlib import Path\n"
        "from multiverse.store.journal import add_tombstones\n"
        "for n in range(200):\n"
        "    add_tombstones(Path(sys.argv[1]), Path(sys.argv[2]), [f'{sys.argv[3]}-{n}'])\n"
    )
    writers = [
        subprocess.Popen([sys.executable, "-c", script, str(path), str(table), name])
        for name in ("a", "b")
    ]
    while any(writer.poll() is None for writer in writers):
        compact_tombstones(path, time.time() - TOMBSTONE_KEEP_SECONDS)
        _old_tombstone(path, table, "old", 2 * TOMBSTONE_KEEP_SECONDS)  # unlocked: may go
    assert all(writer.wait() == 0 for writer in writers)
    compact_tombstones(path, time.time() - TOMBSTONE_KEEP_SECONDS)
    keys = [str(line["key"]) for line in _lines(path)]
    assert sorted(keys) == sorted(f"{name}-{n}" for name in "ab" for n in range(200))


def test_a_journal_forgets_rows_deleted_after_it_wrote_them_then_never_restores_them(
    tmp_path: Path,
) -> None:
    """Once applied, a compacted-away tombstone no longer matters: the row stays deleted."""
    path, tombstones = tmp_path / "process_runs.md", tmp_path / "deleted_rows.jsonl"
    store = TableStore(RowJournal(tombstones))
    table = store.table(PROCESS_RUNS, path)
    rows = [ProcessRun(run_id=RUN.format(n), user_request="r") for n in (1, 2)]
    store.modify(PROCESS_RUNS, path, lambda current: [*current, *rows])
    # Another process deletes run 1 on purpose (as `multiverse archive` does) ...
    other = TableStore(RowJournal(tombstones))
    add_tombstones(tombstones, path, [RUN.format(1)])
    other.modify(PROCESS_RUNS, path, lambda current: current[1:])
    # ... and the tombstone is applied to our journal, then compacted away.
    assert store.journal.forget_deleted() == 1
    assert compact_tombstones(tombstones, time.time() + 1) == 1
    store.modify(PROCESS_RUNS, path, lambda current: current)  # our next write merges
    assert [row.run_id for row in table.rows()] == [RUN.format(2)]


def test_the_daemon_drops_tombstones_older_than_an_hour_when_it_starts(home: Home) -> None:
    make_history(home, [Status.COMPLETED])
    table = home.db / PROCESS_RUNS.filename
    _old_tombstone(home.deleted_rows, table, "run-20200101-000000-000", 2 * 3600)
    add_tombstones(home.deleted_rows, table, ["run-20200101-000000-001"])
    assert once(home).returncode == 0  # a start: the daemon drops them before any step
    assert [line["key"] for line in _lines(home.deleted_rows)] == ["run-20200101-000000-001"]
