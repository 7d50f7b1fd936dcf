"""A corpus case end to end (`make eval-local CASES=en-chart-01`): its deliverable judged by the
offline corpus eval's own judges (`evals.corpus.judge` on the spec CONFIRM froze,
`judge_deliverable` on what was published), and each expected chart's values, computed from its
table by the engine's tabular code, looked up in the charts the run drew.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path, PurePosixPath
from typing import Any

from evals import chartread, checklist, collect
from evals.corpus import Verdict, judge, judge_deliverable
from multiverse.home import Home
from multiverse.spec import FileSet, Question, Reading, RequestSpec

# A number as a chart prints it: 1,234.5 or 1234.5 or -3; a group of three after a comma.
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w])")
_LANGUAGES = {"en": "English", "ko": "Korean"}  # the corpus's languages, as offline names them


@dataclass(frozen=True)
class ExpectedChart:
    """What one expected chart must show: the values its table gives (none: nothing to draw)."""

    index: int  # 1-based, in the case's expectations
    file: str
    values: list[float] = field(default_factory=list)
    note: str = ""  # why no value is expected: refused by the case, or by the table


def _base(path: str) -> str:
    return PurePosixPath(path).name


def expected_charts(expect: dict[str, Any], home: Path) -> list[ExpectedChart]:
    """Each chart the case expects, computed from its table in the home's assets/ (the same
    tabular code draws the proposal's preview and the deliverable's chart)."""
    from multiverse.tabular import ChartData, ChartQuery, chart_data

    found = []
    for index, chart in enumerate(expect.get("charts") or [], start=1):
        file = f"assets/{_base(chart['file'])}"
        if not chart.get("drawable", True):
            found.append(ExpectedChart(index, file, note="not drawable, as the case expects"))
            continue
        dimension = chart.get("dimension") or {}
        frequency = dimension.get("time")
        query = ChartQuery(
            file=file, measures=list(chart.get("measures") or []),
            dimension="time" if "time" in dimension else str(dimension.get("column", "time")),
            frequency=frequency if frequency != "week" else None,
            aggregation=chart.get("aggregation"), filters=chart.get("filter") or {},
            series_by=chart.get("series_by"), top_n=chart.get("top_n"),
        )  # fmt: skip
        data = chart_data(query, root=home)
        if isinstance(data, ChartData):
            values = [v for series in data.series for v in series.values if v is not None]
            found.append(ExpectedChart(index, file, values))
        else:
            found.append(ExpectedChart(index, file, note=f"the table refuses it: {data.reason}"))
    return found


def printed_numbers(text: str) -> dict[int, set[Decimal]]:
    """The numbers of a text by the decimals they are printed with."""
    found: dict[int, set[Decimal]] = {}
    for match in _NUMBER.finditer(text):
        raw = match[0].replace(",", "")
        places = len(raw.partition(".")[2])
        found.setdefault(places, set()).add(Decimal(raw))
    return found


def is_shown(value: float, printed: dict[int, set[Decimal]]) -> bool:
    """Whether a chart printed the value at some precision; a small whole number stands for no
    rounding (an axis tick of 10 is not the 9.7 of a point)."""
    try:
        exact = Decimal(repr(float(value)))
    except InvalidOperation:
        return False
    for places, numbers in printed.items():
        if places == 0 and abs(exact) < 1000 and exact != exact.to_integral_value():
            continue
        quantum = Decimal(1).scaleb(-places)
        if any(exact.quantize(quantum, rounding=way) in numbers
               for way in (ROUND_HALF_UP, ROUND_HALF_EVEN)):  # fmt: skip
            return True
    return False


@dataclass(frozen=True)
class ChartValues:
    """The drawn chart that shows most of an expected chart's values, and how many."""

    index: int
    passed: bool | None  # None: no value expected
    file: str | None = None
    charts: int = 0
    found: int = 0
    total: int = 0
    note: str = ""


def check_chart_values(drawn: dict[str, str], expected: ExpectedChart) -> ChartValues:
    """Right values: one drawn chart shows at least half the values the table gives (as the
    fixed cases' chart shows half the CSV's cells), printed or plotted at their height."""
    total = len(expected.values)
    if not total:
        return ChartValues(expected.index, None, charts=len(drawn), note=expected.note)
    best = ChartValues(expected.index, False, charts=len(drawn), total=total)
    for name, markup in sorted(drawn.items()):
        printed = printed_numbers(checklist.visible_text(markup))
        shown = max(sum(is_shown(value, printed) for value in expected.values),
                    chartread.matched(markup, expected.values))  # fmt: skip
        if shown > best.found:
            best = ChartValues(expected.index, 2 * shown >= total, name, len(drawn), shown, total)
    return best


def _spec_for_deliverable(case: dict[str, Any], spec: RequestSpec | None,
                          text: str) -> RequestSpec:  # fmt: skip
    """The spec the deliverable is judged with: the files the case leaves out added (a spec that
    kept one is the spec judge's problem, its naming the deliverable's), and its answers taken
    out, so that an expected figure counts only where the deliverable states it; without a
    run, the reply is the one answer."""
    if spec is None:
        reply = Question(reading=Reading(origin="the reply"), answerable=True, answer=text)
        spec = RequestSpec(request=case["request"], mode="simple", questions=[reply])
    named = (case.get("expect") or {}).get("left_out") or []
    left_out = [f"assets/{_base(path)}" for path in named]
    expected = [FileSet(files=left_out, reading=Reading(origin="the case"))] if left_out else []
    kept = [q for q in spec.questions if not q.answerable or q.reading.origin == "the reply"]
    return spec.model_copy(update={"left_out": [*spec.left_out, *expected], "questions": kept})


def judge_run(case: dict[str, Any], spec: RequestSpec | None, text: str,
              record: dict[str, Any] | None, drawn: dict[str, str],
              expected: list[ExpectedChart]) -> dict[str, Any]:  # fmt: skip
    """A corpus case's checklist from what its run left: the frozen spec (None: no run or no
    CONFIRM), the deliverable's text, its delivery record, the charts drawn (pure)."""
    expect = case.get("expect") or {}
    verdict = judge(case, spec) if spec is not None else Verdict(case["id"], expect=expect)
    if spec is None and expect.get("mode", "run") == "run":
        verdict.problems.append("no confirmed spec: the request did not become a confirmed run")
    judge_deliverable(_spec_for_deliverable(case, spec, text), text, record or {}, verdict)
    if record is None and text and spec is not None:  # a reply without a run records none
        verdict.problems.append("no delivery record: the numbers were not traced")
    charts = [check_chart_values(drawn, chart) for chart in expected]
    for chart in charts:
        if chart.passed is False:
            verdict.problems.append(f"chart {chart.index} drawn with {chart.found}/{chart.total} "
                                    f"of its values (best of {chart.charts} chart(s))")  # fmt: skip
    right, asked = verdict.delivered
    if right < asked:
        verdict.problems.append(f"deliverable states {right}/{asked} expected figure(s)")
    language = _language(expect.get("language"), text)
    if language["passed"] is False:
        verdict.problems.append(f"deliverable written in {language['written']}")
    target = expect.get("length_words") or (spec.length_words if spec is not None else None)
    words = checklist.word_count(text)
    length = checklist.LengthCheck(words, target, None if not target else
                                   abs(words - target) <= checklist.LENGTH_TOLERANCE * target)
    if length.passed is False:
        verdict.problems.append(f"deliverable of {words} words for {target}")
    return {
        "spec": spec is not None, "ok": verdict.ok, "problems": verdict.problems,
        "notes": verdict.notes, "charts_asked": list(verdict.charts),
        "charts_drawn": [sum(c.passed is True for c in charts),
                         sum(c.passed is not None for c in charts)],
        "chart_values": [asdict(chart) for chart in charts],
        "exclusions": list(verdict.exclusions), "leaked": verdict.leaked,
        "questions": list(verdict.questions), "delivered": list(verdict.delivered),
        "untraced": verdict.untraced if record is not None else None,
        "language": language, "length": asdict(length),
    }  # fmt: skip


def _language(expected: str | None, text: str) -> dict[str, Any]:
    """The language the deliverable is written in, by its script, against the expected one."""
    from offline.asks import script_language

    written = script_language(text) if text.strip() else None
    wanted = _LANGUAGES.get(expected or "", expected)
    passed = None if not wanted or written is None else written == wanted
    return {"expected": wanted, "written": written, "passed": passed}


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def run_spec(home: Path, run_id: str | None) -> RequestSpec | None:
    """The spec CONFIRM froze (runs/<run_id>/spec.json), None when there is none or it is of
    another version of the engine."""
    data = _json(Home(home).run(run_id).spec) if run_id else None
    try:
        return RequestSpec.model_validate(data) if isinstance(data, dict) else None
    except ValueError:
        return None


def checks(case: dict[str, Any], home: Path, run_id: str | None, text: str) -> dict[str, Any]:
    """The checklist of a corpus case's deliverable, read from the home its run left."""
    out_dir = home / "outputs" / (run_id or "-")
    workspace = Home(home).run(run_id).phase_workspace("GENERATING_OUTPUT") if run_id else None
    record = _json(workspace / "delivery.json") if workspace else None
    drawn = collect.charts(out_dir, home, text) if out_dir.is_dir() else {}
    spec = run_spec(home, run_id)
    return judge_run(case, spec, text, record if isinstance(record, dict) else None, drawn,
                     expected_charts(case.get("expect") or {}, home))  # fmt: skip
