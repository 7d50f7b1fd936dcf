"""`multiverse archive`, `runs` and `open` (SPEC §13): final runs leave the live tables and
folders for db/archive/ and runs/archive/, crash-safe, and stay readable, searchable and in the
learning context; a daemon never puts their rows back."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import jsonschema
import pytest
from past_runs import make_history

from app.cli_schemas import schema_for
from multiverse.home import Home
from multiverse.models import (
    InstructionStatus,
    ProcessRun,
    Status,
)
from multiverse.runs import archived_rows, archived_run, shard_of
from multiverse.store import (
    GLOBAL_TABLES,
    KNOWLEDGE_CATALOG,
    PROCESS_RUNS,
    USER_INSTRUCTIONS,
    TableStore,
)
from orchestrator.archiving import Archiver, choose
from orchestrator.learning import (
    archived_catalog,
    instructions_of,
    read_learning_context,
    supersede_archived,
)
from orchestrator.past_runs import rank_past_runs
from orchestrator.upkeep import wake_key

from journey import cli, copy_assets, once, running_daemon, runs, wait_for
from stepping import builtin_collaborators

FINAL = (Status.COMPLETED, Status.FAILED, Status.CANCELLED)


def _keys(home: Home) -> dict[str, tuple[list[str], list[str]]]:
    """Each global table's keys: (live, archived)."""
    store = TableStore()
    return {
        spec.filename: (
            [row.key for row in store.table(spec, home.db / spec.filename).rows()],
            [row.key for row in archived_rows(store, home, spec)],
        )
        for spec in GLOBAL_TABLES
    }


def test_choose_takes_only_final_runs() -> None:
    rows = [
        ProcessRun(run_id=f"run-20261101-00000{n}-001", user_request="r", status=status)
        for n, status in enumerate(Status)
    ]
    chosen, refused = choose(rows, None, None, lambda row: None)
    assert sorted(chosen) == sorted(r.run_id for r in rows if r.status in FINAL)
    assert {kept.status for kept in refused} == {"PENDING", "AWAITING_CONFIRMATION"}
    named, kept = choose(rows, [rows[2].run_id], None, lambda row: "a step is in flight")
    assert named == [] and kept[0].reason == "a step is in flight"


def test_archive_moves_rows_folders_and_catalog_paths(home: Home) -> None:
    done, failed, waiting = make_history(
        home, [Status.COMPLETED, Status.FAILED, Status.AWAITING_CONFIRMATION]
    )
    result = cli(home, "archive", "--before", "2099-01-01", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    jsonschema.validate(data, schema_for("archive"))
    assert [moved["run_id"] for moved in data["archived"]] == [done, failed]
    assert [(kept["run_id"], kept["status"]) for kept in data["refused"]] == [
        (waiting, "AWAITING_CONFIRMATION")
    ]
    assert not home.run(done).root.exists() and (home.archive_runs / done / "request.md").exists()
    assert (home.outputs / done / "report.md").exists()  # deliverables stay where they were
    keys = _keys(home)
    assert keys[PROCESS_RUNS.filename] == ([waiting], [done, failed])
    assert keys[USER_INSTRUCTIONS.filename] == (["I0003"], ["I0001", "I0002"])
    live, archived = keys[KNOWLEDGE_CATALOG.filename]
    assert f"runs/archive/{done}/workspace/ANALYZING/notes.md" in archived
    assert f"outputs/{done}/report.md" in archived and all(done not in path for path in live)
    for path in archived:  # every archived catalog path names a file that is there
        assert (home.root / path).is_file(), path
    shards = {p.parent.name for p in home.archive_db.glob("*/process_runs.md")}
    assert shards == {shard_of(done), shard_of(failed)}  # dated shards: an hour each


def test_a_shard_of_a_day_from_an_older_version_is_still_read(home: Home) -> None:
    """Shards were a day each before they were an hour each: a run archived then is still shown,
    opened, its instructions and catalog rows found, and ranked by the learning context."""
    (run_id,) = make_history(home, [Status.COMPLETED])
    Archiver(home, TableStore()).archive([run_id])
    hour = home.archive_db / shard_of(run_id)
    day = hour.rename(home.archive_db / shard_of(run_id)[:10])  # as the older version left it
    assert archived_run(TableStore(), home, run_id) is not None
    shown = cli(home, "show", run_id, "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["status"] == "COMPLETED"
    path = cli(home, "open", run_id, "--print")
    assert path.returncode == 0 and path.stdout.strip() == str(home.outputs / run_id / "report.md")
    crew = builtin_collaborators(home)
    assert [row.run_id for row in instructions_of(crew, [run_id])] == [run_id]
    assert {row.run_id for row in archived_catalog(crew, [run_id])} == {run_id}
    ranked = rank_past_runs("heat pumps", crew.past_runs()).past_runs
    assert [past.run_id for past in ranked] == [run_id]
    assert day.is_dir() and not hour.exists()


def test_archived_runs_are_readable_and_read_only(home: Home) -> None:
    (run_id,) = make_history(home, [Status.COMPLETED])
    assert cli(home, "archive", run_id[-10:]).returncode == 0  # a unique part names it
    shown = cli(home, "show", run_id, "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["status"] == "COMPLETED"
    tree = cli(home, "status", "latest", "--json")
    assert tree.returncode == 0 and json.loads(tree.stdout)["run"]["archived"] is True
    assert cli(home, "logs", run_id).returncode == 0
    path = cli(home, "open", run_id, "--print")
    assert path.returncode == 0 and path.stdout.strip() == str(home.outputs / run_id / "report.md")
    answered = cli(home, "confirm", run_id)
    assert answered.returncode == 1 and "is archived" in answered.stderr
    again = cli(home, "archive", run_id)
    assert again.returncode == 1 and "archived already" in again.stdout


def test_archive_refuses_a_run_that_is_not_final_by_name(home: Home) -> None:
    (run_id,) = make_history(home, [Status.PENDING])
    result = cli(home, "archive", run_id)
    assert result.returncode == 1
    assert "not final" in result.stdout and home.run(run_id).root.is_dir()
    usage = cli(home, "archive", "--json")
    assert usage.returncode == 2 and json.loads(usage.stdout)["code"] == 2
    unknown = cli(home, "archive", "run-20990101-000000-001")
    assert unknown.returncode == 2 and "no run run-20990101-000000-001" in unknown.stderr


@pytest.mark.parametrize("kill_after", range(1, 8))
def test_an_archive_killed_at_any_write_is_finished_by_the_next(
    home: Home, kill_after: int
) -> None:
    run_ids = make_history(home, [Status.COMPLETED, Status.CANCELLED, Status.PENDING])
    before = {name: sorted(live) for name, (live, _) in _keys(home).items()}
    killed = cli(
        home,
        "archive",
        "--before",
        "2099-01-01",
        env={"MULTIVERSE_KILL_AFTER_WRITES": str(kill_after)},
    )
    assert killed.returncode in (0, -9)
    Archiver(home, TableStore()).finish()  # what the next archive or daemon start does first
    after = _keys(home)
    for name, (live, archived) in after.items():
        was = [key.replace("runs/archive/", "runs/") for key in archived]  # moved with its file
        assert sorted(live + was) == before[name], name  # every row once, none lost
        assert not set(live) & set(was)
    assert [key for key in after[PROCESS_RUNS.filename][0]] == [run_ids[2]]
    for run_id in run_ids[:2]:
        assert (home.archive_runs / run_id).is_dir() and not home.run(run_id).root.exists()
    assert not (home.archive_db / ".intent.json").exists()


def test_archive_then_a_similar_request_ranks_the_archived_run(home: Home) -> None:
    copy_assets(home)
    assert cli(home, "submit", "--no-wait", "Write a memo on the heat pump market").returncode == 0
    once(home)
    (first,) = runs(home)
    assert cli(home, "confirm", first["run_id"]).returncode == 0
    once(home)
    assert cli(home, "archive", "latest").returncode == 0
    assert runs(home) == []
    listed = json.loads(cli(home, "runs", "--archived", "--json").stdout)
    assert [(r["run_id"], r["archived"]) for r in listed] == [(first["run_id"], True)]
    assert cli(home, "submit", "--no-wait", "A memo on the heat pump market").returncode == 0
    once(home)
    (second,) = runs(home)
    ranked = read_learning_context(home.run(second["run_id"]).root / "learning_context.md")
    assert [past.run_id for past in ranked.past_runs] == [first["run_id"]]
    proposal = home.run(second["run_id"]).feedback.read_text(encoding="utf-8")
    assert f"outputs/{first['run_id']}/" in proposal  # its deliverables are reused
    assert cli(home, "confirm", second["run_id"]).returncode == 0
    once(home)
    live, archived = _keys(home)[USER_INSTRUCTIONS.filename]
    assert live and archived and not set(live) & set(archived)  # ids stay global
    assert min(live) > max(archived)
    store = TableStore()
    for row in archived_rows(store, home, USER_INSTRUCTIONS):
        if row.status is InstructionStatus.SUPERSEDED:  # by the new run: marked in its shard
            assert row.superseded_by_id in live


def test_a_serving_daemon_never_puts_archived_rows_back(home: Home) -> None:
    """The daemon and the `archive` command are two processes writing the same tables (as in
    use): the daemon's own process, never a thread of the command's."""
    with running_daemon(home, quiet=True):
        assert cli(home, "submit", "--no-wait", "Write a memo on heat pumps").returncode == 0
        wait_for(lambda: len(runs(home)) == 1, "the run")
        run_id = runs(home)[0]["run_id"]
        wait_for(lambda: runs(home)[0]["status"] == "AWAITING_CONFIRMATION", "the proposal")
        assert cli(home, "confirm", run_id).returncode == 0
        wait_for(lambda: runs(home)[0]["status"] == "COMPLETED", "the run to complete")
        result = cli(home, "archive", run_id)
        assert result.returncode == 0, result.stdout + result.stderr
        # The daemon writes the live tables again (a new run): the archived rows stay out.
        assert cli(home, "submit", "--no-wait", "Write a memo on solar panels").returncode == 0
        wait_for(lambda: [r["status"] for r in runs(home)] == ["AWAITING_CONFIRMATION"], "run two")
    keys = _keys(home)
    assert run_id not in keys[PROCESS_RUNS.filename][0]
    assert keys[PROCESS_RUNS.filename][1] == [run_id]
    live_catalog = TableStore().table(KNOWLEDGE_CATALOG, home.db / KNOWLEDGE_CATALOG.filename)
    assert all(row.run_id != run_id for row in live_catalog.rows())


def test_runs_filters_by_status_date_and_limit(home: Home) -> None:
    make_history(home, [Status.COMPLETED, Status.FAILED, Status.COMPLETED, Status.PENDING])

    def listed(*args: str) -> list[str]:
        result = cli(home, "runs", *args, "--json")
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        jsonschema.validate(data, schema_for("runs"))
        return [row["run_id"][4:12] + row["status"][0] for row in data]

    assert listed() == ["20261001C", "20261001C", "20261101F", "20261101P"]
    assert listed("--status", "failed,pending") == ["20261101F", "20261101P"]
    assert listed("--status", "final", "--limit", "1") == ["20261101F"]
    assert listed("--since", "2026-10-15") == ["20261101F", "20261101P"]
    text = cli(home, "runs", "--limit", "2")
    assert "… and 2 older runs" in text.stdout
    bad = cli(home, "runs", "--status", "done")
    assert bad.returncode == 2 and "not a status" in bad.stderr
    assert cli(home, "runs", "--since", "soon").returncode == 2


def _fake_opener(folder: Path, record: Path) -> dict[str, str]:
    """An `xdg-open` on PATH that writes what it was asked to open, and a desktop session."""
    script = folder / "xdg-open"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nopen({str(record)!r}, 'w').write(sys.argv[1])\n",
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "DISPLAY": ":0"}


def test_open_uses_the_desktop_opener_or_prints_the_path(home: Home, tmp_path: Path) -> None:
    (run_id,) = make_history(home, [Status.COMPLETED])
    report = home.outputs / run_id / "report.md"
    record = tmp_path / "opened.txt"
    opened = cli(home, "open", "latest", "--json", env=_fake_opener(tmp_path, record))
    assert opened.returncode == 0, opened.stderr
    jsonschema.validate(json.loads(opened.stdout), schema_for("open"))
    assert json.loads(opened.stdout)["opened"] is True
    assert record.read_text(encoding="utf-8") == str(report)
    headless = cli(home, "open", run_id, env={"DISPLAY": "", "WAYLAND_DISPLAY": ""})
    assert headless.returncode == 0 and headless.stdout.strip() == str(report)
    assert "open the path yourself" in headless.stderr


def test_open_says_when_there_is_no_report(home: Home) -> None:
    (run_id,) = make_history(home, [Status.PENDING])
    for path in (home.outputs / run_id).iterdir():
        path.unlink()
    result = cli(home, "open", run_id)
    assert result.returncode == 1 and "no report yet" in result.stderr


def test_the_watcher_ignores_the_archive(home: Home) -> None:
    assert wake_key(home, str(home.archive_runs / "run-20261101-000000-001" / "x.md")) is None
    assert wake_key(home, str(home.archive_db / "2026-11" / "process_runs.md")) is None
    assert wake_key(home, str(home.runs / "run-20261101-000000-001" / "x.md")) == (
        "run-20261101-000000-001"
    )


def test_a_new_instruction_supersedes_an_archived_one_in_its_shard(home: Home) -> None:
    (run_id,) = make_history(home, [Status.COMPLETED])
    Archiver(home, TableStore()).archive([run_id])
    crew = builtin_collaborators(home)
    supersede_archived(crew, {"I0001": "I0002"})
    supersede_archived(crew, {"I0001": "I0002"})  # again, as after a crash: nothing changes
    (row,) = archived_rows(TableStore(), home, USER_INSTRUCTIONS)
    assert (row.status, row.superseded_by_id) == (InstructionStatus.SUPERSEDED, "I0002")


def test_a_new_run_never_takes_an_archived_runs_id(home: Home) -> None:
    """A run archived in the second it was made leaves its id free in runs/; the next run made
    in that second (or after the clock stepped back over it) takes the next number."""
    from datetime import UTC, datetime

    from orchestrator.intake import allocate_run_id

    crew = builtin_collaborators(home)
    now = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    first = allocate_run_id(crew.home, crew.store, now)
    assert first == "run-20260301-120000-001"
    home.archive_runs.mkdir(parents=True, exist_ok=True)
    (home.runs / first).rename(home.archive_runs / first)  # archived, folder and all
    assert allocate_run_id(crew.home, crew.store, now) == "run-20260301-120000-002"


def test_an_id_is_never_reused_whatever_the_clock_did_and_archiving_never_replaces(
    home: Home,
) -> None:
    """With the clock stepped back (an injected time): an id whose deliverables are in
    outputs/, or whose row is live without its folder, is skipped; a live run that holds an
    archived run's id (made before ids were checked) is refused by `archive`, with its reason,
    and the archived run's row and files stay as they were."""
    from datetime import UTC, datetime

    from multiverse.models import ProcessRun, Status
    from multiverse.store import PROCESS_RUNS
    from orchestrator.archiving import Archiver
    from orchestrator.intake import allocate_run_id

    crew = builtin_collaborators(home)
    now = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    (home.outputs / "run-20260301-120000-001").mkdir(parents=True)  # its folder is gone
    crew.process_runs.insert(ProcessRun(run_id="run-20260301-120000-002",
                                        user_request="x", status=Status.COMPLETED))  # fmt: skip
    assert allocate_run_id(crew.home, crew.store, now) == "run-20260301-120000-003"

    twin = "run-20260301-120000-009"
    home.archive_runs.mkdir(parents=True, exist_ok=True)
    (home.archive_runs / twin).mkdir()
    (home.archive_runs / twin / "request.md").write_text("the archived one\n", "utf-8")
    (home.runs / twin).mkdir()
    crew.process_runs.insert(ProcessRun(run_id=twin, user_request="the live one",
                                        status=Status.COMPLETED))  # fmt: skip
    result = Archiver(home, TableStore(), started=lambda _: None).archive([twin])
    assert not result.archived
    (refused,) = [r for r in result.refused if r.run_id == twin]
    assert "an archived run has the same id" in refused.reason
    assert (home.archive_runs / twin / "request.md").read_text("utf-8") == "the archived one\n"
    assert (home.runs / twin).is_dir()
    live = TableStore().table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).get(twin)
    assert live is not None and live.user_request == "the live one"


def test_open_prefers_the_reports_html_page_and_md_asks_for_the_markdown(home: Home) -> None:
    """`open` gives the self-contained report.html beside report.md (charts inline); `--md`
    the markdown; a report without a page is opened as it is."""
    (run_id,) = make_history(home, [Status.COMPLETED])
    report = home.outputs / run_id / "report.md"
    page = report.with_suffix(".html")
    assert cli(home, "open", run_id, "--print").stdout.strip() == str(report)  # no page yet
    page.write_text("<!doctype html><html lang=\"en\"><body>report</body></html>\n", "utf-8")
    assert cli(home, "open", run_id, "--print").stdout.strip() == str(page)
    assert cli(home, "open", run_id, "--print", "--md").stdout.strip() == str(report)
