"""The whole journey through the CLI, on the builtin offline engine: the first one as a user
makes it (each command a child process, a home as `multiverse init` makes it), the others with
the commands run in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from multiverse.home import Home
from multiverse.store import KNOWLEDGE_CATALOG, USER_INSTRUCTIONS, TableStore

from journey import cli, cli_process, copy_assets, once, once_process, only_run, run_tree, runs

REQUEST = (
    "Analyse these reports and write a 2-page market-entry memo with a chart of revenue by region."
)


def _all_rows_final(tree: dict[str, object]) -> list[str]:
    statuses = []
    for name in ("phases", "stages", "tasks", "tool_tasks"):
        statuses += [row["status"] for row in tree[name]]  # type: ignore[attr-defined]
    return statuses


@pytest.fixture
def user_home(_isolated_home: Path) -> Home:
    """A home exactly as `multiverse init` makes it (an inbox file settles for a second)."""
    made = Home(_isolated_home)
    assert cli_process(made, "init").returncode == 0
    return made


def test_submit_confirm_complete(user_home: Home) -> None:
    """Submit → proposal → confirm → COMPLETED, every table final, outputs and catalog complete
    (every command a child process, as a user's shell runs them)."""
    home = user_home
    copy_assets(home)
    assert cli_process(home, "submit", REQUEST).returncode == 0
    first = once_process(home)
    assert first.returncode == 0, first.stderr
    run = only_run(home)
    assert run["status"] == "AWAITING_CONFIRMATION"
    run_id = run["run_id"]
    proposal = home.run(run_id).feedback.read_text(encoding="utf-8")
    assert f"multiverse confirm {run_id}" in proposal
    assert list((home.inbox / "done").glob("*.md"))

    assert cli_process(home, "confirm", run_id).returncode == 0
    second = once_process(home)
    assert second.returncode == 0, second.stderr

    run = only_run(home)
    assert run["status"] == "COMPLETED"
    assert (run["current_phase_id"], run["current_stage_id"], run["current_task_id"]) == (
        None,
        None,
        None,
    )
    tree = run_tree(home, run_id)
    assert [p["phase_id"] for p in tree["phases"]] == ["P0", "P1", "P2", "P3", "P4"]
    assert set(_all_rows_final(tree)) == {"COMPLETED"}
    assert tree["tool_tasks"] == []  # no web search was asked for; the brief draws the chart

    outputs = home.run(run_id).outputs
    report = (outputs / "report.md").read_text(encoding="utf-8")
    assert "offline" in report.lower()
    assert "18.5" in report  # a real figure of the assets, not boilerplate
    html = (outputs / "report.html").read_text(encoding="utf-8")
    assert "<svg" in html and (outputs / "report-chart-1.svg").is_file()
    assert (outputs / "report.docx").is_file()  # the Word export, catalogued below

    catalog = {
        row.file_path
        for row in TableStore()
        .table(KNOWLEDGE_CATALOG, home.db / KNOWLEDGE_CATALOG.filename)
        .rows()
    }
    produced = [p for p in (home.run(run_id).workspace.rglob("*")) if p.is_file()]
    produced += [p for p in outputs.rglob("*") if p.is_file()]
    for path in produced:
        assert home.relative(path) in catalog, f"{path} is not in the catalog"
    for asset in home.assets.iterdir():
        assert home.relative(asset) in catalog

    messages = home.run(run_id).messages.read_text(encoding="utf-8")
    assert "COMPLETION" in messages and "report.md" in messages
    instructions = TableStore().table(USER_INSTRUCTIONS, home.db / USER_INSTRUCTIONS.filename)
    assert {row.run_id for row in instructions.rows()} == {run_id}


def test_modify_then_confirm(home: Home) -> None:
    """MODIFY makes a revised proposal and asks again; CONFIRM then completes the run."""
    copy_assets(home, "market_report_2024.md")
    cli(home, "submit", "Summarise the market report as a short memo for the board.")
    once(home)
    run_id = only_run(home)["run_id"]
    assert (
        cli(home, "modify", run_id, "Please add a chart of the revenue by country").returncode == 0
    )
    once(home)
    run = only_run(home)
    assert run["status"] == "AWAITING_CONFIRMATION"
    signals = home.run(run_id).signals
    revised = json.loads((signals / "proposal-2.json").read_text(encoding="utf-8"))
    assert revised["modification"] == "Please add a chart of the revenue by country"
    assert "chart" in home.run(run_id).feedback.read_text(encoding="utf-8").lower()
    cli(home, "confirm", run_id)
    assert once(home).returncode == 0
    assert only_run(home)["status"] == "COMPLETED"


def test_cancel(home: Home) -> None:
    """CANCEL ends the run as CANCELLED and nothing more happens for it."""
    cli(home, "submit", "Write a strategy memo about the e-bike market.")
    once(home)
    run_id = only_run(home)["run_id"]
    assert cli(home, "cancel", run_id).returncode == 0
    once(home)
    assert only_run(home)["status"] == "CANCELLED"
    assert not any(home.run(run_id).outputs.iterdir())
    assert "cancelled" in home.run(run_id).messages.read_text(encoding="utf-8").lower()
    refused = cli(home, "confirm", run_id)
    assert refused.returncode == 1 and "not waiting" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_an_answer_that_is_not_one_of_the_three_is_refused(home: Home) -> None:
    """An unreadable answer is refused with a message and the question stays open."""
    cli(home, "submit", "Write a strategy memo about the e-bike market.")
    once(home)
    run_id = only_run(home)["run_id"]
    home.run(run_id).user_response.write_text("maybe later?\n", encoding="utf-8")
    once(home)
    assert only_run(home)["status"] == "AWAITING_CONFIRMATION"
    messages = home.run(run_id).messages.read_text(encoding="utf-8")
    assert "ANSWER_REFUSED" in messages and "maybe later?" in messages


def test_korean_request_round_trips(home: Home) -> None:
    """A Korean request and asset go through unchanged; the request text round-trips exactly."""
    copy_assets(home, "korea_market_ko.md")
    request = "국내 전기자전거 시장 보고서를 분석하고 | 진입 전략 메모를 작성해 주세요 😀"
    cli(home, "submit", request)
    once(home)
    run = only_run(home)
    assert run["user_request"] == request
    cli(home, "confirm", run["run_id"])
    assert once(home).returncode == 0
    run = only_run(home)
    assert run["status"] == "COMPLETED" and run["user_request"] == request
    report = (home.run(run["run_id"]).outputs / "report.md").read_text(encoding="utf-8")
    assert "1,200억" in report


def test_two_runs_in_parallel(home: Home) -> None:
    """Two runs advance together; the global tables lose no row of either."""
    copy_assets(home, "market_report_2024.md", "competitor_review.txt")
    cli(home, "submit", "Write a market memo about the European e-bike market.")
    cli(home, "submit", "Write a competitor analysis of the premium e-bike brands.")
    once(home)
    rows = runs(home)
    assert [r["status"] for r in rows] == ["AWAITING_CONFIRMATION"] * 2
    for row in rows:
        cli(home, "confirm", row["run_id"])
    assert once(home).returncode == 0
    rows = runs(home)
    assert [r["status"] for r in rows] == ["COMPLETED"] * 2
    store = TableStore()
    instructions = store.table(USER_INSTRUCTIONS, home.db / USER_INSTRUCTIONS.filename).rows()
    assert {r.run_id for r in instructions} == {r["run_id"] for r in rows}
    catalog = store.table(KNOWLEDGE_CATALOG, home.db / KNOWLEDGE_CATALOG.filename).rows()
    for row in rows:
        assert f"outputs/{row['run_id']}/report.md" in {c.file_path for c in catalog}


def test_simple_task_replies_without_a_run(home: Home) -> None:
    """A simple command is answered in inbox/done/<stem>.reply.md beside the request kept as
    inbox/done/<name>; nothing in runs/ or outputs/."""
    copy_assets(home, "quarterly_revenue.csv")
    (home.inbox / "ask.md").write_text("List the assets\n", encoding="utf-8")
    assert once(home).returncode == 0
    assert (home.inbox / "done" / "ask.md").exists()
    reply = (home.inbox / "done" / "ask.reply.md").read_text(encoding="utf-8")
    assert "quarterly_revenue.csv" in reply
    assert runs(home) == []
    assert not [p for p in home.runs.iterdir() if not p.name.startswith(".")]
    assert not [p for p in home.outputs.iterdir() if not p.name.startswith(".")]


def test_bad_inbox_files_are_rejected_with_a_reason(home: Home) -> None:
    """Empty, binary, non-UTF-8 and oversized requests move to inbox/rejected/ with a reason."""
    bad = {
        "empty.md": b"",
        "binary.md": b"\x00\x01\x02PNG",
        "latin1.txt": "café crème".encode("latin-1"),
        "huge.md": b"a" * (1024 * 1024 + 1),
    }
    for name, data in bad.items():
        (home.inbox / name).write_bytes(data)
    assert once(home).returncode == 0
    for name, data in bad.items():
        assert (home.inbox / "rejected" / name).read_bytes() == data
        assert (home.inbox / "rejected" / f"{name}.reason.md").exists()
    assert runs(home) == []


def test_user_errors_are_one_clear_line(home: Home, tmp_path: Path) -> None:
    """A user error prints one line and exits non-zero, never a traceback."""
    for args in (
        ("confirm", "run-20990101-000000-001"),
        ("confirm", "nonsense"),
        ("status", "run-20990101-000000-001"),
        ("submit", "   "),
    ):
        result = cli(home, *args)
        assert result.returncode != 0
        assert "Traceback" not in result.stderr
        assert result.stderr.startswith("error: ")
    missing = cli(Home(tmp_path / "nowhere"), "status")
    assert missing.returncode == 2 and "multiverse init" in missing.stderr
