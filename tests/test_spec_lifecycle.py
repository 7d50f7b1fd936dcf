"""The request spec through a run's life (SPEC §6a), driven in process over a real home with the
builtin roles: the proposal shows what the files allow (charts with their first values, charts
that cannot be drawn with why and what instead, questions answered, files left out), in the
requester's language; CONFIRM freezes spec.json; T02's instructions derive from it; every
later task reads it; a MODIFY that cannot be applied is said; the completion lists what was
asked and not done."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from multiverse.atomic import atomic_write_text
from multiverse.home import Home
from multiverse.models import Status
from multiverse.roles import Declined, ResultSignal, TaskAssignment, ToolAssignment
from multiverse.spec import RequestSpec
from orchestrator.crew import Collaborators
from orchestrator.decide import StepKind
from orchestrator.intake import take_in
from orchestrator.perform import StepRunner
from orchestrator.perform.master import not_done_lines
from planner.proposal_doc import read_instructions

from stepping import builtin_collaborators, steps_until_settled

CORPUS = Path(__file__).resolve().parent / "corpus" / "tables"
BRIEF_ASSETS = Path(__file__).resolve().parent / "fixtures" / "brief_assets"
TABLES = (
    "us_marriages_divorces.csv",
    "us_marriages_divorces.md",
    "superstore.csv",
    "superstore.md",
    "stocks_monthly.csv",
    "stocks_monthly.md",
    "tech_stocks_weekly.csv",
    "tech_stocks_weekly.md",
)
STOCK_FILES = [f"assets/{name}" for name in TABLES[4:]]
ENGLISH = (
    "Could you put together a short brief on how the US marriage rate has moved since the "
    "1860s? A line chart of marriages per 1,000 people, year by year, would help a lot. Chart "
    "our profit month by month for the last year. How many marriages were recorded in 1867? "
    "Leave out the stock price files, they're for something else."
)
KOREAN = (
    "미국 혼인율이 1860년대 이후 어떻게 변했는지 짧은 브리프로 정리해 주세요. 연도별 1,000명당 "
    "혼인 건수를 선 그래프로 그려 주세요. 월별 이익도 차트로 그려 주세요. 1867년 혼인 건수는 "
    "몇 건이었나요? stocks 파일들은 빼 주세요."
)
# Words that stay as they are in any language: answers, commands, statuses, instruction types.
KEPT_WORDS = frozenset(
    {"CONFIRM", "MODIFY", "CANCEL", "ACTIVE", "SUPERSEDED", "BM25", "multiverse"}
    | {"GOAL", "DELIVERABLE", "AUDIENCE", "LENGTH", "LANGUAGE", "SOURCES", "LEAVE_OUT"}
    | {"CHART", "QUESTION", "RESEARCH", "FORMAT", "STYLE", "USER_MODIFICATION"}
)


def corpus_home(home: Home) -> Collaborators:
    """The home with the corpus tables and their descriptions in assets/, and its crew."""
    for name in TABLES:
        shutil.copy(CORPUS / name, home.assets / name)
    return builtin_collaborators(home)


def proposed(crew: Collaborators, request: str, name: str = "ask.md") -> tuple[str, StepRunner]:
    """A request taken in and advanced until it waits for the answer to its proposal."""
    atomic_write_text(crew.home.inbox / name, request)
    run_id = take_in(crew, crew.home.inbox / name, 1 << 20)
    assert run_id is not None
    runner = StepRunner(crew)
    steps_until_settled(runner, run_id)
    return run_id, runner


def section(document: str, heading: str) -> str:
    """The text under a `## heading` of the proposal, up to the next heading."""
    return document.split(f"{heading}\n", 1)[1].split("\n## ", 1)[0]


def rows(name: str) -> list[dict[str, str]]:
    """A corpus table read with the csv module alone (the independent computation)."""
    with (CORPUS / name).open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def saved_spec(crew: Collaborators, run_id: str) -> RequestSpec:
    """runs/<run_id>/spec.json as written."""
    return RequestSpec.model_validate_json(crew.home.run(run_id).spec.read_text("utf-8"))


def check_first_values(line: str) -> None:
    """The chart's first values are the table's own yearly marriage rates."""
    per_year = {row["Year"]: float(row["Marriages_per_1000"]) for row in rows(TABLES[0])[:10]}
    shown = re.findall(r"(\d{4}): ([\d.,]+)", line)
    assert len(shown) == 4, line
    assert [year for year, _ in shown] == ["1867", "1868", "1869", "1870"]
    for year, value in shown:
        assert abs(float(value.replace(",", "")) - per_year[year]) < 0.005


def test_the_proposal_shows_what_the_files_allow(home: Home) -> None:
    """A chart with its first values (as the csv module computes them), a chart that cannot be
    drawn with its reason and what could be drawn instead, a question with its answer, files
    left out by a plural phrase, why a question became a run; short lines; spec.json written."""
    crew = corpus_home(home)
    run_id, _ = proposed(crew, ENGLISH)
    document = crew.home.run(run_id).feedback.read_text(encoding="utf-8")
    understood = section(document, "## How I understood the request")
    chart = next(line for line in understood.splitlines() if "Marriages per 1000 by year" in line)
    check_first_values(chart)
    assert "(`assets/us_marriages_divorces.csv`)" in chart
    undrawn = next(line for line in understood.splitlines() if "cannot be drawn" in line)
    assert undrawn.startswith('  - "Chart our profit month by month for the last year."')
    assert "assets/superstore.csv has no time column" in undrawn
    assert "instead: `Profit` by `Ship Mode` (`assets/superstore.csv`) (offered" in undrawn
    first = rows(TABLES[0])[0]
    assert first["Year"] == "1867"
    question = next(line for line in understood.splitlines() if "1867?" in line)
    assert f"{int(first['Marriages']):,}" in question and "row 2" in question
    left_out = understood.split("- **Left out:**\n", 1)[1].splitlines()[0]
    assert all(f"`{path}`" in left_out for path in STOCK_FILES)
    assert 'from the request: "Leave out the stock price files"' in left_out
    assert "- **Why a run:** it asks for a chart" in understood
    assert "- **Web search:** not asked" in understood
    assert max(len(line) for line in understood.splitlines()) < 400
    kinds = [item.instruction_type for item in read_instructions(document)]
    assert kinds.count("CHART") == 1 and kinds.count("QUESTION") == 1
    assert kinds.count("LEAVE_OUT") == 1
    spec = saved_spec(crew, run_id)
    assert (spec.confirmed, spec.revision, spec.language) == (False, 0, "en")
    assert spec.excluded() == set(STOCK_FILES)
    assert not set(spec.sources) & set(STOCK_FILES)


def _values(spec: RequestSpec) -> list[str]:
    """Every string of the spec that is a value shown as it is: the request's words, file and
    column names, chart titles, first values, answers and reasons."""
    found: list[str] = [spec.request, spec.audience or "", spec.why_run]
    data: dict[str, Any] = spec.model_dump()

    def walk(node: object, key: str = "") -> None:
        if isinstance(node, dict):
            for name, value in node.items():
                walk(value, name)
        elif isinstance(node, list):
            for value in node:
                walk(value, key)
        elif isinstance(node, str) and key in VALUE_KEYS:
            found.append(node)

    walk(data)
    return sorted({value for value in found if value}, key=len, reverse=True)


VALUE_KEYS = frozenset(
    {"phrase", "file", "files", "measures", "dimension", "title", "preview", "reason", "answer"}
    | {"sources", "text", "detail", "queries", "note", "series_by"}
)


def english_fixed_words(document: str, spec: RequestSpec, run_id: str) -> set[str]:
    """The Latin-script words of a document that are neither values nor kept words."""
    text = re.sub(r"`[^`]*`", " ", document).replace(run_id, " ")
    for value in _values(spec):
        text = text.replace(value, " ")
    return {word for word in re.findall(r"[A-Za-z][A-Za-z_]+", text) if word not in KEPT_WORDS}


def test_a_korean_request_gets_a_korean_proposal(home: Home) -> None:
    """Every fixed word of a Korean request's proposal is Korean; values stay as they are; the
    chart, the chart that cannot be drawn, the answer and the files left out are all shown."""
    crew = corpus_home(home)
    run_id, _ = proposed(crew, KOREAN)
    document = crew.home.run(run_id).feedback.read_text(encoding="utf-8")
    spec = saved_spec(crew, run_id)
    assert spec.language == "ko"
    assert document.startswith(f"# 실행 {run_id} 제안서\n")
    for heading in ("## 요청을 이해한 방식", "## 제안하는 지침", "## 답하는 방법"):
        assert f"\n{heading}\n" in document
    assert english_fixed_words(document, spec, run_id) == set()
    understood = section(document, "## 요청을 이해한 방식")
    check_first_values(next(line for line in understood.splitlines() if "1867: " in line))
    assert "그릴 수 없음: assets/superstore.csv has no time column" in understood
    assert "대신: `Ship Mode`별 `Profit`" in understood
    answer = "1867년 Marriages는 357,000이었습니다 (assets/us_marriages_divorces.csv 2행)"
    assert answer in understood
    assert all(f"`{path}`" in section(understood, "- **제외한 파일:**") for path in STOCK_FILES)
    assert "- **실행이 된 이유:** 질문의 답 외에 차트" in understood
    instructions = {item.instruction_type: item for item in read_instructions(document)}
    assert instructions["LANGUAGE"].content == "한국어로 씁니다."
    messages = crew.home.run(run_id).messages.read_text(encoding="utf-8")
    assert "요청을 읽고 실행" in messages  # the Communicator speaks Korean to a Korean requester


class Recording:
    """The builtin Executor, keeping every assignment it is handed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.tasks: list[TaskAssignment] = []
        self.tools: list[ToolAssignment] = []

    def execute_task(self, assignment: TaskAssignment) -> ResultSignal:
        self.tasks.append(assignment)
        result: ResultSignal = self.inner.execute_task(assignment)
        return result

    def execute_tool_task(self, assignment: ToolAssignment) -> ResultSignal:
        self.tools.append(assignment)
        result: ResultSignal = self.inner.execute_tool_task(assignment)
        return result

    def summarize(self, path: Path) -> str:
        summary: str = self.inner.summarize(path)
        return summary

    def simple_task(self, request: str, home: Path) -> str | Declined:
        reply: str | Declined = self.inner.simple_task(request, home)
        return reply


def test_confirm_freezes_the_spec_and_every_task_reads_it(home: Home) -> None:
    """CONFIRM freezes spec.json before the run goes on; T02's instructions are the spec's
    items; the tasks the Executor performs carry the frozen spec."""
    crew = corpus_home(home)
    recording = Recording(crew.executor)
    crew.executor = recording
    run_id, runner = proposed(crew, ENGLISH)
    before = saved_spec(crew, run_id)
    atomic_write_text(crew.home.run(run_id).user_response, "CONFIRM\n")
    while (step := runner.advance(run_id)) is not None and step.kind is not StepKind.BUILD_CATALOG:
        if step.kind is StepKind.HANDLE_RESPONSE:
            frozen = saved_spec(crew, run_id)
            assert frozen == before.model_copy(update={"confirmed": True})
    rows_of_run = [row for row in crew.instructions.rows() if row.run_id == run_id]
    by_type: dict[str, list[str]] = {}
    for row in rows_of_run:
        by_type.setdefault(row.instruction_type, []).append(row.content)
    spec = saved_spec(crew, run_id)
    assert spec.confirmed
    assert len(by_type["CHART"]) == sum(chart.drawable for chart in spec.charts) == 1
    assert spec.charts[0].title in by_type["CHART"][0]
    assert len(by_type["QUESTION"]) == len(spec.questions) == 1
    assert spec.questions[0].answer in by_type["QUESTION"][0]
    assert all(path in by_type["LEAVE_OUT"][0] for path in STOCK_FILES)
    assert "Left out: " + ", ".join(f"`{p}`" for p in STOCK_FILES) in by_type["SOURCES"][0]
    assert by_type["GOAL"] == [spec.request]
    steps_until_settled(runner, run_id)
    assert recording.tasks, "no task reached the Executor"
    assert all(task.spec == spec for task in recording.tasks)
    assert all(tool.spec == spec for tool in recording.tools)
    publish = next(t for t in recording.tasks if t.task.output_path.startswith("outputs/"))
    assert not set(publish.task.related_references) & set(STOCK_FILES)
    catalogued = {row.file_path: row.summary for row in crew.catalog.rows()}
    assert catalogued["assets/us_marriages_divorces.csv"].startswith(
        "CSV table, 145 rows: Year (1867–2011), Marriages"
    )


def test_a_modify_that_cannot_be_applied_is_said_as_not_applied(home: Home) -> None:
    """A MODIFY that drops a chart the proposal does not have is shown as not applied; the
    revised spec is revision 1 and records it."""
    crew = corpus_home(home)
    run_id, runner = proposed(crew, ENGLISH)
    text = "Drop the chart of divorces by decade."
    atomic_write_text(crew.home.run(run_id).user_response, f"MODIFY: {text}\n")
    steps_until_settled(runner, run_id)
    document = crew.home.run(run_id).feedback.read_text(encoding="utf-8")
    assert f'MODIFY 1 "{text}": not applied: ' in document
    spec = saved_spec(crew, run_id)
    assert spec.revision == 1 and [c.applied for c in spec.changes] == [False]
    assert sum(chart.drawable for chart in spec.charts) == 1  # nothing was dropped


def test_the_completion_lists_what_was_not_done(home: Home) -> None:
    """What the deliverable was asked and did not do (here a chart no table can draw) reaches
    the COMPLETION message and the `run_completed` event, from the Executor's delivery
    record."""
    for path in sorted(BRIEF_ASSETS.iterdir()):
        shutil.copy(path, home.assets / path.name)
    crew = builtin_collaborators(home)
    request = "Write a one-page note on the Nordic charging market, with a chart of wind by city."
    run_id, runner = proposed(crew, request)
    atomic_write_text(crew.home.run(run_id).user_response, "CONFIRM\n")
    with capture_logs() as logs:
        while (step := runner.advance(run_id)) is not None and step.is_work:
            pass
    assert crew.process_runs.get(run_id).status is Status.COMPLETED  # type: ignore[union-attr]
    delivery = crew.home.run(run_id).phase_workspace("GENERATING_OUTPUT") / "delivery.json"
    record = json.loads(delivery.read_text(encoding="utf-8"))
    (not_drawn,) = [line for line in record["not_done"] if "wind by city" in line]
    assert record["untraced_numbers"] == 0  # the offline engine writes no number of its own
    messages = crew.home.run(run_id).messages.read_text(encoding="utf-8")
    completion = messages.split("· COMPLETION", 1)[1]
    assert "Asked but not done:" in completion
    assert f"- {not_drawn}" in completion
    completed = [event for event in logs if event["event"] == "run_completed"]
    assert not_drawn in completed[0]["not_done"]
    assert completed[0]["untraced_numbers"] == 0


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"not_done": ["a", " ", 7, "b  c"], "untraced_numbers": 0}', ["a", "b c"]),
        ('{"untraced_numbers": 2}', ["출처에서 찾지 못한 숫자 2개"]),
        ('{"not_done": "a chart", "untraced_numbers": true}', []),
        ("not json", []),
    ],
)
def test_the_delivery_record_is_read_tolerantly(
    home: Home, content: str, expected: list[str]
) -> None:
    """Lines that are not text are skipped; the untraced count is said in the run's language;
    a damaged record is no line at all, never a failed completion."""
    paths = home.run("run-20260301-090000-001")
    (paths.workspace / "GENERATING_OUTPUT").mkdir(parents=True)
    atomic_write_text(paths.spec, '{"request": "x", "language": "ko"}')
    atomic_write_text(paths.workspace / "GENERATING_OUTPUT" / "delivery.json", content)
    assert not_done_lines(paths)[0] == expected
