"""Questions over a table answered at once (SPEC §5): a lookup asked as a short request is a
SIMPLE_TASK answered offline with its figure and citation, in the requester's language; a
question that must become a run says why, at `submit` and in the proposal. Real intake, real
builtin roles, a real home holding tables of the corpus."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

from app.cli_home import as_data, follow, report, snapshot
from app.commands import drop_request
from executor.builtin import BuiltinExecutor
from multiverse.atomic import atomic_write_text
from multiverse.home import Home
from multiverse.roles import Declined
from orchestrator.crew import Collaborators
from orchestrator.inbox import reply_path
from orchestrator.intake import take_in
from orchestrator.learning import read_why_run
from orchestrator.perform import StepRunner
from planner.builtin import decide_mode

from stepping import builtin_collaborators, steps_until_settled

CORPUS = Path(__file__).resolve().parent / "corpus" / "tables"
GRUNFELD = "Quick one: what was Atlantic Refining's gross investment in 1950?"
LONG = (
    "Quick one, for the board pack: what was Atlantic Refining's gross investment in 1950 "
    "according to the Grunfeld table?"
)
KOREAN = "2012년 6월 소비자물가지수가 얼마였나요?"
CHART_TOO = "Chart the average tip by day and tell me the largest tip?"
CHART_TOO_KO = "요일별 평균 팁을 차트로 그리고 가장 큰 팁이 얼마였는지 알려 주세요?"


def crew_with(home: Home, *tables: str) -> Collaborators:
    """The crew of a home whose assets/ holds these corpus tables and their descriptions."""
    for table in tables:
        for suffix in (".csv", ".md"):
            shutil.copy(CORPUS / f"{table}{suffix}", home.assets / f"{table}{suffix}")
    return builtin_collaborators(home)


def cell(table: str, column: str, **where: str) -> tuple[str, int]:
    """A cell of a corpus table and its line (header = 1), found with the csv module."""
    with (CORPUS / f"{table}.csv").open(encoding="utf-8", newline="") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            if all(row[key] == value for key, value in where.items()):
                return row[column], line
    raise AssertionError(f"no row {where} in {table}")


def asked(crew: Collaborators, text: str, name: str = "ask.md") -> str | None:
    """Drop a request into inbox/ and take it in; returns the run id it became, if any."""
    atomic_write_text(crew.home.inbox / name, text)
    return take_in(crew, crew.home.inbox / name, 1 << 20)


def test_a_lookup_is_answered_at_once_with_its_figure_and_citation(home: Home) -> None:
    """The figure a question asks for is read from the table and cited with its line; no run."""
    crew = crew_with(home, "grunfeld")
    assert asked(crew, GRUNFELD) is None
    reply = reply_path(home, "ask.md").read_text(encoding="utf-8")
    value, line = cell("grunfeld", "invest", firm="Atlantic Refining", year="1950")
    assert reply.startswith("> Produced offline by the multiverse builtin engine")
    assert f"**{GRUNFELD}**" in reply
    # the unit is the description's ("Gross investment in 1947 dollars")
    assert f"was {value} 1947 dollars (assets/grunfeld.csv row {line})." in reply
    assert not any(home.runs.iterdir())


def test_a_korean_question_is_answered_in_korean(home: Home) -> None:
    """A Korean question gets its answer, citation and banner in Korean."""
    crew = crew_with(home, "cpi_inflation")
    assert asked(crew, KOREAN) is None
    reply = reply_path(home, "ask.md").read_text(encoding="utf-8")
    value, line = cell("cpi_inflation", "CPI", Year="2012", Month="6")
    assert reply.startswith("> multiverse 내장 엔진이 오프라인으로 만든 답입니다")
    # the unit is the description's; the particle follows the last sound said (1984: 사)
    assert f"{value} base=100 in 1984였습니다 (assets/cpi_inflation.csv {line}행)." in reply
    assert "Consumer Price Index" in reply
    assert "Produced offline" not in reply


def test_a_long_question_the_table_answers_is_still_answered_at_once(home: Home) -> None:
    """A question longer than the heuristic's fifteen words is a SIMPLE_TASK when the home's
    table answers it: the builtin Planner reads it against the tables."""
    assert decide_mode(LONG, False).mode.value == "INITIAL_RUN"
    crew = crew_with(home, "grunfeld")
    decided = crew.planner.decide_mode(LONG, False)
    assert decided.mode.value == "SIMPLE_TASK" and "assets/grunfeld.csv" in decided.reason
    assert asked(crew, LONG) is None
    value, line = cell("grunfeld", "invest", firm="Atlantic Refining", year="1950")
    reply = reply_path(home, "ask.md").read_text(encoding="utf-8")
    assert f"{value} 1947 dollars (assets/grunfeld.csv row {line})" in reply


def test_a_question_that_must_be_a_run_says_why_at_submit_and_in_the_proposal(
    home: Home,
) -> None:
    """A question asking for a chart too is declined by the Executor with why; `submit` says
    why on one line (from the intake's record, then from the spec), and so does the proposal."""
    crew = crew_with(home, "tips")
    declined = BuiltinExecutor().simple_task(CHART_TOO, home.root)
    assert isinstance(declined, Declined)
    why = "it asks for a chart as well as the answer to its question"
    assert declined.reason == why
    before = snapshot(home)
    path, data = drop_request(home, CHART_TOO, None)
    run_id = take_in(crew, path, 1 << 20)  # the daemon's intake, in process
    assert run_id is not None and read_why_run(home.run(run_id)) == why
    taken = follow(home, path, data, before, proposal=False, timeout=10)
    lines, warning, code = report(taken)
    assert (lines[1:], warning, code) == ([f"run: {run_id}", f"why a run: {why}"], None, 0)
    assert as_data(taken)["why_run"] == why
    steps_until_settled(StepRunner(crew), run_id)
    waited = follow(home, path, data, before, proposal=True, timeout=10)
    shown = report(waited)[0]
    assert shown[1:3] == [f"run: {run_id}", f"why a run: {why}"]
    proposal = home.run(run_id).feedback.read_text(encoding="utf-8")
    assert f"- **Why a run:** {why}" in proposal
    assert [line for line in shown if line.startswith("why a run:")] == [f"why a run: {why}"]


def test_a_korean_question_that_must_be_a_run_says_why_in_korean(home: Home) -> None:
    """The reason a Korean question became a run is said in Korean."""
    crew = crew_with(home, "tips")
    run_id = asked(crew, CHART_TOO_KO)
    assert run_id is not None
    why = "질문의 답 외에 차트도 요청했습니다"
    assert read_why_run(home.run(run_id)) == why
    steps_until_settled(StepRunner(crew), run_id)
    assert f"- **실행이 된 이유:** {why}" in home.run(run_id).feedback.read_text(encoding="utf-8")
