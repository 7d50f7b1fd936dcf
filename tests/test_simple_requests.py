"""SIMPLE_TASK is never a dead end: short requests of the kinds people type, in English and
Korean, taken in by the real intake (builtin Planner and Executor) over a real home, are either
answered from the assets, in `inbox/done/<stem>.reply.md` beside the request, or become a run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from multiverse.atomic import atomic_write_text
from multiverse.home import Home
from orchestrator.intake import take_in

from forked import forked_once
from journey import cli, once, runs
from stepping import builtin_collaborators

BRIEF_ASSETS = Path(__file__).resolve().parent / "fixtures" / "brief_assets"
RUN = None  # the request becomes a run
HELP_MARK = "understands these simple commands"  # the old command list, never an answer
LISTED = "`assets/` holds 3 file(s)"

# (request, RUN or a piece of the reply that shows it was answered from the assets)
CASES: list[tuple[str, str | None]] = [
    ("What's in the assets folder?", "- `assets/nordic_ev_market.md` ("),
    ("List the assets", LISTED),
    ("Convert the revenue CSV to a table", "`assets/revenue_by_country.csv` as a table"),
    ("Show revenue by country as a table", "Summed over 48 of the 48 rows"),
    (
        "Summarise the Nordic charging brief for a board meeting.",
        "Taken to mean `assets/nordic_ev_market.md`",
    ),
    ("summarize assets/nordic_ev_market.md", "## Summary of `assets/nordic_ev_market.md`"),
    ("What was Norway's revenue in 2023?", "for Norway was 49,706,000 EUR in 2023"),
    ("How many fast chargers does Sweden have?", "only 4,300 fast chargers"),
    ("Which file talks about Korea?", '`assets/korea_battery_recycling.md` ("korea")'),
    ("Count the words in the Korean battery brief", "`assets/korea_battery_recycling.md`: "),
    ("What was Germany's revenue in 2023?", RUN),
    ("Summarise the reports", RUN),
    ("Show the risks in the Nordic brief", RUN),
    ("What is the capital of France?", RUN),
    ("Give me an overview of the Korean battery recycling brief", RUN),
    ("Write a one-page memo on entering the Nordic charging market", RUN),
    ("Make me a sandwich", RUN),
    (
        "한국 배터리 시장 문서를 요약해줘",
        "Taken to mean `assets/korea_battery_recycling.md`",
    ),
    ("자산 목록 보여줘", LISTED),
    ("assets 폴더에 뭐가 있어?", LISTED),
    ("국가별 매출을 표로 보여줘", "| **Total** "),
    ("매출 CSV를 표로 변환해줘", "`assets/revenue_by_country.csv` as a table"),
    ("한국 배터리 재활용 시장 규모는 얼마야?", "2024년 1조 2천억 원으로 추정된다"),
    ("2024년 회수된 폐배터리는 몇 톤이야?", "약 60,000 t이었고"),
    ("노르웨이 충전소 수는?", RUN),
    ("독일 매출 알려줘", RUN),
    ("북유럽 충전 시장 보고서를 써줘", RUN),
]


@pytest.fixture
def brief_home(home: Home) -> Home:
    """An initialised home whose assets are the Nordic, Korean and revenue fixtures."""
    for path in BRIEF_ASSETS.iterdir():
        shutil.copy(path, home.assets / path.name)
    return home


def test_the_table_has_enough_requests_of_both_kinds_and_languages() -> None:
    """At least 20 requests, answered and declined ones, English and Korean."""
    korean = [r for r, _ in CASES if any("가" <= c <= "힣" for c in r)]
    assert len(CASES) >= 20 and len(korean) >= 8
    assert {expected is RUN for _, expected in CASES} == {True, False}


@pytest.mark.parametrize(("request_text", "expected"), CASES)
def test_a_short_request_is_answered_from_the_assets_or_becomes_a_run(
    brief_home: Home, request_text: str, expected: str | None
) -> None:
    """Answered: a reply beside the request that cites an asset and is no command list, no run.
    Declined by the Executor after the Planner said SIMPLE_TASK: a run, and the log says why."""
    crew = builtin_collaborators(brief_home)
    atomic_write_text(brief_home.inbox / "ask.md", request_text + "\n")
    with capture_logs() as logs:
        run_id = take_in(crew, brief_home.inbox / "ask.md", 1 << 20)
    done, reply = brief_home.inbox_done / "ask.md", brief_home.inbox_done / "ask.reply.md"
    assert done.read_text(encoding="utf-8") == request_text + "\n"
    if expected is RUN:
        assert run_id is not None and crew.process_runs.get(run_id) is not None
        assert (brief_home.run(run_id).root / "request.md").exists()
        assert not reply.exists()
        said_simple = any(e.get("mode") == "SIMPLE_TASK" for e in logs)
        overridden = [e for e in logs if e["event"] == "mode_overridden"]
        assert bool(overridden) == said_simple
        assert all(e["mode"] == "INITIAL_RUN" for e in overridden)
        return
    assert run_id is None and crew.process_runs.rows() == []
    text = reply.read_text(encoding="utf-8")
    assert text.startswith("> Produced offline by the multiverse builtin engine")
    assert HELP_MARK not in text and "assets/" in text  # it cites the asset it read
    assert expected in text
    assert not [p for p in brief_home.runs.iterdir() if not p.name.startswith(".")]


def test_a_declined_request_after_past_runs_is_a_continuous_run(brief_home: Home) -> None:
    """The override picks the mode a structured request would get: CONTINUOUS_RUN with past runs,
    also when the person forced `mode: simple`."""
    crew = builtin_collaborators(brief_home)
    atomic_write_text(brief_home.inbox / "memo.md", "Write a memo on the Nordic market.\n")
    assert take_in(crew, brief_home.inbox / "memo.md", 1 << 20) is not None
    forced = "---\nmode: simple\n---\nWhat was Germany's revenue in 2023?\n"
    atomic_write_text(brief_home.inbox / "ask.md", forced)
    with capture_logs() as logs:
        run_id = take_in(crew, brief_home.inbox / "ask.md", 1 << 20)
    assert run_id is not None and len(crew.process_runs.rows()) == 2
    [overridden] = [e for e in logs if e["event"] == "mode_overridden"]
    assert overridden["mode"] == "CONTINUOUS_RUN" and "executor cannot" in overridden["reason"]
    context = (brief_home.run(run_id).root / "learning_context.md").read_text(encoding="utf-8")
    assert "CONTINUOUS_RUN" in context


def _tree(home: Home) -> list[tuple[str, int]]:
    return sorted(
        (p.relative_to(home.root).as_posix(), p.stat().st_mtime_ns) for p in home.root.rglob("*")
    )


def test_replies_sit_beside_their_requests_and_status_lists_them(brief_home: Home) -> None:
    """Through the real daemon: `ask.md` ↔ `ask.reply.md`, the same name again `ask-1.md` ↔
    `ask-1.reply.md`; a declined request is a run; `multiverse status` lists both replies and
    the run (text and JSON) and writes nothing."""
    summary = "Summarise the Nordic charging brief for a board meeting."
    (brief_home.inbox / "ask.md").write_text(summary + "\n", encoding="utf-8")
    germany = "What was Germany's revenue in 2023?\n"
    (brief_home.inbox / "germany.txt").write_text(germany, encoding="utf-8")
    assert once(brief_home).returncode == 0
    (brief_home.inbox / "ask.md").write_text("Which file talks about Korea?\n", encoding="utf-8")
    assert once(brief_home).returncode == 0
    done = brief_home.inbox_done
    assert sorted(p.name for p in done.iterdir() if not p.name.startswith(".")) == [
        "ask-1.md",
        "ask-1.reply.md",
        "ask.md",
        "ask.reply.md",
        "germany.txt",
    ]
    assert "nordic_ev_market.md" in (done / "ask.reply.md").read_text(encoding="utf-8")
    assert "korea_battery_recycling.md" in (done / "ask-1.reply.md").read_text(encoding="utf-8")
    [run] = runs(brief_home)
    assert run["user_request"] == "What was Germany's revenue in 2023?"

    before = _tree(brief_home)
    shown = cli(brief_home, "status")
    assert shown.returncode == 0, shown.stderr
    assert run["run_id"] in shown.stdout
    assert "↩ inbox/done/ask.reply.md  " in shown.stdout and summary in shown.stdout
    assert "↩ inbox/done/ask-1.reply.md  " in shown.stdout
    assert "Which file talks about Korea?" in shown.stdout
    listed = json.loads(cli(brief_home, "status", "--json").stdout)
    replies = [entry for entry in listed if entry.get("kind") == "simple_reply"]
    assert [(r["request"], r["reply"]) for r in replies] == [
        ("inbox/done/ask.md", "inbox/done/ask.reply.md"),
        ("inbox/done/ask-1.md", "inbox/done/ask-1.reply.md"),
    ]
    assert replies[0]["first_line"] == summary
    assert _tree(brief_home) == before


def test_a_declined_request_killed_at_any_write_still_makes_one_run(brief_home: Home) -> None:
    """Declining writes nothing, so the first write is the run's claim: a daemon killed after
    it, or after any next write, and started again makes exactly one run, and no reply."""
    question = "What was Germany's revenue in 2023?\n"
    (brief_home.inbox / "germany.md").write_text(question, encoding="utf-8")
    first = forked_once(brief_home, env={"MULTIVERSE_KILL_AFTER_WRITES": "1"})
    assert first.returncode == -9
    assert (brief_home.inbox / "germany.md").exists()
    assert [p.name for p in (brief_home.state / "intake").iterdir()] == ["germany.md.json"]
    for writes in (2, 3):
        killed = forked_once(brief_home, env={"MULTIVERSE_KILL_AFTER_WRITES": str(writes)})
        assert killed.returncode == -9
    assert once(brief_home).returncode == 0
    [run] = runs(brief_home)
    assert run["user_request"] == question.strip()
    assert (brief_home.inbox_done / "germany.md").read_text(encoding="utf-8") == question
    assert not list(brief_home.inbox_done.glob("*.reply.md"))
