"""The one validator of a request spec (SPEC §6a): every item checked against the home's files.

Whether the rules read the request or a model filled the spec, it passes through here before
the proposal shows it: files that do not exist are dropped and said; a file left out is never a
source, a chart's table or a question's; each chart is computed (the same code that draws it
later) and carries its first values, or why it cannot be drawn and the nearest drawable
chart; each question is answered now with its figure and citation, or said unanswerable with
the nearest cells; a web search no provider can make is never promised.
"""

from __future__ import annotations

from pathlib import Path

from multiverse.documents import source_text
from multiverse.spec.model import (
    Chart,
    ChartAsk,
    Computation,
    FileSet,
    Lookup,
    Question,
    Reading,
    RequestSpec,
    Research,
)
from multiverse.spec.scan import HomeScan
from multiverse.tabular import (
    ChartData,
    ChartQuery,
    ComputeQuery,
    Fact,
    LookupQuery,
    chart_data,
    compute,
    format_number,
    lookup,
)

PREVIEW_POINTS = 4


def check_spec(spec: RequestSpec, scan: HomeScan, root: Path) -> RequestSpec:
    """The spec with every item checked against the files (idempotent)."""
    known = {item.path for item in scan.files}
    not_understood = list(spec.not_understood)
    left_out: list[FileSet] = []
    for group in spec.left_out:
        files = [path for path in group.files if path in known]
        if files:
            left_out.append(group.model_copy(update={"files": files}))
        else:
            not_understood.append(
                Reading(phrase=f"{group.reading.phrase}: no such file", origin=group.reading.origin)
            )
    excluded = {path for group in left_out for path in group.files}
    sources = [path for path in (spec.sources or sorted(known)) if path in known - excluded]
    descriptions = _Descriptions(scan, root)
    charts = [_chart(chart, excluded, descriptions, root, spec.language) for chart in spec.charts]
    questions = [_question(q, excluded, descriptions, root, spec.language) for q in spec.questions]
    return spec.model_copy(
        update={
            "left_out": left_out,
            "sources": sources,
            "charts": charts,
            "questions": questions,
            "research": _research(spec.research, scan),
            "not_understood": not_understood,
        }
    )


class _Descriptions:
    """The description texts of each table (read once per check)."""

    def __init__(self, scan: HomeScan, root: Path) -> None:
        self.scan, self.root = scan, root
        self._texts: dict[str, list[str]] = {}

    def of(self, table: str) -> list[str]:
        if table not in self._texts:
            item = self.scan.get(table)
            readers = [path for path in self.scan.companions(table) if path != table]
            texts = [source_text(self.root, self.root / path)[0] or "" for path in readers]
            self._texts[table] = [text for text in texts if text] if item else []
        return self._texts[table]


def _chart(
    chart: Chart, excluded: set[str], descriptions: _Descriptions, root: Path, language: str
) -> Chart:
    ask = chart.data
    if ask is None:
        return chart.model_copy(update={"drawable": False})
    if ask.file in excluded:
        return chart.model_copy(
            update={"drawable": False, "reason": f"{ask.file} is left out, as you asked"}
        )
    drawn = chart_data(query_of(ask), root=root, descriptions=descriptions.of(ask.file))
    if isinstance(drawn, ChartData):
        return chart.model_copy(
            update={
                "drawable": True,
                "title": drawn.title,
                "preview": preview(drawn),
                "reason": "",
                "alternative": None,
            }
        )
    alternative = drawn.alternatives[0] if drawn.alternatives else None
    return chart.model_copy(
        update={
            "drawable": False,
            "reason": drawn.reason,
            "alternative": ask_of(alternative) if alternative is not None else None,
        }
    )


def query_of(ask: ChartAsk) -> ChartQuery:
    """The table computation a chart asks for."""
    return ChartQuery(
        file=ask.file,
        measures=ask.measures,
        dimension=ask.dimension,
        frequency=ask.frequency if ask.frequency != "week" else None,
        aggregation=ask.aggregation,
        filters=ask.filters,
        series_by=ask.series_by,
        top_n=ask.top_n,
    )


def ask_of(query: ChartQuery) -> ChartAsk:
    """A table computation as a chart asked for (an alternative offered)."""
    return ChartAsk(
        file=query.file,
        measures=query.measures,
        dimension=query.dimension,
        frequency=query.frequency,
        aggregation=query.aggregation,
        filters=query.filters,
        series_by=query.series_by,
        top_n=query.top_n,
    )


def preview(drawn: ChartData) -> list[str]:
    """The chart's first values, as the proposal shows them: `1959: 5.13`."""
    shown: list[str] = []
    for index, label in enumerate(drawn.labels[:PREVIEW_POINTS]):
        values = [
            f"{series.name} {_number(series.values[index])}"
            if len(drawn.series) > 1
            else _number(series.values[index])
            for series in drawn.series
        ]
        shown.append(f"{label}: {', '.join(values)}")
    return shown


def _number(value: float | None) -> str:
    """A chart value as the chart prints it: whole numbers without decimals."""
    if value is not None and float(value).is_integer():
        return format_number(value, 0)
    return format_number(value)


def _question(
    question: Question, excluded: set[str], descriptions: _Descriptions, root: Path, language: str
) -> Question:
    asked = question.lookup or question.compute
    file = asked.file if asked is not None else None
    if file is None:
        return question.model_copy(
            update={"answerable": False, "reason": "no table of the sources holds what it asks"}
        )
    if file in excluded:
        return question.model_copy(
            update={"answerable": False, "reason": f"{file} is left out, as you asked"}
        )
    if question.lookup is not None:
        return _looked_up(question, question.lookup, descriptions.of(file), root, language)
    assert question.compute is not None
    return _computed(question, question.compute, descriptions.of(file), root, language)


def _looked_up(
    question: Question, ask: Lookup, descriptions: list[str], root: Path, language: str
) -> Question:
    answer = lookup(
        LookupQuery(file=ask.file, selectors=ask.selectors, column=ask.column),
        root=root,
        descriptions=descriptions,
    )
    return question.model_copy(
        update={
            "answerable": answer.found,
            "answer": answer.sentence(language),
            "reason": "" if answer.found else answer.sentence(language),
        }
    )


def _computed(
    question: Question, ask: Computation, descriptions: list[str], root: Path, language: str
) -> Question:
    query = ComputeQuery(
        kind=ask.kind,
        file=ask.file,
        measure=ask.measure,
        compared=ask.compared,
        category=ask.category,
        start=ask.start,
        end=ask.end,
        frequency=ask.frequency if ask.frequency != "week" else None,
        aggregation=ask.aggregation if ask.aggregation != "count" else None,
        filters=ask.filters,
        whole_periods=ask.whole_periods,
    )
    fact = compute(query, root=root, descriptions=descriptions)
    if isinstance(fact, Fact):
        return question.model_copy(
            update={"answerable": True, "answer": fact.sentence(language), "reason": ""}
        )
    return question.model_copy(update={"answerable": False, "reason": fact.reason})


def _research(research: Research | None, scan: HomeScan) -> Research | None:
    if research is None:
        return None
    if scan.search_provider:
        return research.model_copy(update={"provider": scan.search_provider, "note": ""})
    return research.model_copy(
        update={
            "provider": None,
            "note": "no web search provider is configured in runtime-mapping.yaml: nothing "
            "will be searched, and the deliverable says so",
        }
    )
