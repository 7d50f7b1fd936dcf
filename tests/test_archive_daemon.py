"""The daemon archives final runs by itself, by the policy of the mapping (`live_final_runs`,
`archive_after_days`), while it serves and before `start --once` exits; never a run that is not
final."""

from __future__ import annotations

import json

import yaml
from past_runs import make_history

from multiverse.home import Home
from multiverse.models import Status
from multiverse.store import PROCESS_RUNS, TableStore

from journey import cli, serving, wait_for


def _policy(home: Home, **daemon: int) -> None:
    mapping = yaml.safe_load(home.mapping_file.read_text(encoding="utf-8"))
    mapping.setdefault("daemon", {}).update(daemon)
    home.mapping_file.write_text(yaml.safe_dump(mapping), encoding="utf-8")


def _live(home: Home) -> list[str]:
    return [
        row.run_id for row in TableStore().table(PROCESS_RUNS, home.db / "process_runs.md").rows()
    ]


def test_the_daemon_keeps_only_the_newest_final_runs_live(home: Home) -> None:
    statuses = [Status.COMPLETED, Status.FAILED, Status.PENDING, Status.CANCELLED, Status.COMPLETED]
    run_ids = make_history(home, statuses)
    _policy(home, live_final_runs=2)
    newest_final = sorted(
        r for r, s in zip(run_ids, statuses, strict=True) if s is not Status.PENDING
    )[-2:]
    pending = run_ids[2]
    with serving(home):
        wait_for(lambda: len(list(home.archive_runs.glob("run-*"))) == 2, "two runs archived")
        wait_for(lambda: sorted(_live(home)) == sorted([pending, *newest_final]), "live rows")
        wait_for(lambda: not (home.archive_db / ".intent.json").exists(), "the archive's end")
    listed = json.loads(cli(home, "runs", "--archived", "--json").stdout)
    assert sum(entry["archived"] for entry in listed) == 2 and len(listed) == 5
    assert home.run(pending).root.is_dir()  # a run that is not final stays, whatever its age


def test_old_final_runs_are_archived_by_age(home: Home) -> None:
    """Final runs older than archive_after_days are archived by a serving daemon."""
    run_ids = make_history(home, [Status.COMPLETED, Status.COMPLETED])
    _policy(home, live_final_runs=0, archive_after_days=7)
    with serving(home):
        wait_for(lambda: _live(home) == [], "every old run archived")
    assert sorted(path.name for path in home.archive_runs.iterdir()) == sorted(run_ids)


def test_start_once_archives_by_the_policy_before_it_exits(home: Home) -> None:
    """`start --once` (run from cron, say) keeps the live tables as small as `start` does."""
    statuses = [Status.COMPLETED, Status.FAILED, Status.PENDING, Status.COMPLETED]
    run_ids = make_history(home, statuses)
    _policy(home, live_final_runs=1)
    assert cli(home, "start", "--once").returncode == 0
    archived = sorted(path.name for path in home.archive_runs.iterdir())
    assert archived == [run_ids[0], run_ids[1]]  # the oldest two final runs; the newest stays
    assert run_ids[2] in _live(home)  # PENDING: never archived
    assert not (home.archive_db / ".intent.json").exists()  # the archive finished before the exit
