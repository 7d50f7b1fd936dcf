"""The daemon archives final runs by itself, by the policy of the mapping (`live_final_runs`,
`archive_after_days`); never with `start --once`, never a run that is not final."""

from __future__ import annotations

import json

import yaml
from past_runs import make_history

from multiverse.home import Home
from multiverse.models import Status
from multiverse.schemas import PROCESS_RUNS
from multiverse.store import TableStore

from journey import cli, running_daemon, wait_for


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
    with running_daemon(home, quiet=True):
        wait_for(lambda: len(list(home.archive_runs.glob("run-*"))) == 2, "two runs archived")
        wait_for(lambda: sorted(_live(home)) == sorted([pending, *newest_final]), "live rows")
        wait_for(lambda: not (home.archive_db / ".intent.json").exists(), "the archive's end")
    listed = json.loads(cli(home, "runs", "--archived", "--json").stdout)
    assert sum(entry["archived"] for entry in listed) == 2 and len(listed) == 5
    assert home.run(pending).root.is_dir()  # a run that is not final stays, whatever its age


def test_old_final_runs_are_archived_by_age_and_once_never_archives(home: Home) -> None:
    run_ids = make_history(home, [Status.COMPLETED, Status.COMPLETED])
    _policy(home, live_final_runs=0, archive_after_days=7)
    assert cli(home, "start", "--once").returncode == 0
    assert sorted(_live(home)) == sorted(run_ids)  # `--once` leaves the history alone
    with running_daemon(home, quiet=True):
        wait_for(lambda: _live(home) == [], "every old run archived")
    assert sorted(path.name for path in home.archive_runs.iterdir()) == sorted(run_ids)
