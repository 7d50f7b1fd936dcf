"""The tables' part of a deliverable made from the request spec: each question answered again now,
the standard facts of the tables the spec uses, and its charts drawn from the very data the
proposal previewed (`chart_data` of the chart's query), all through `multiverse.tabular`.

Pure but for reading the spec's own sources: a file left out is never read, not even as the
description of a table.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from executor.builtin.charts import ChartSpec, SeriesLine, render_svg
from executor.builtin.relevance import without_left_out
from multiverse.documents import look, source_text, why_unread
from multiverse.spec import ChartAsk, ComputeKind, Question, RequestSpec
from multiverse.tabular import (
    RANKING_KINDS,
    TABLE_SUFFIXES,
    ChartData,
    ChartQuery,
    ComputeQuery,
    Fact,
    LookupQuery,
    TableProfile,
    chart_data,
    compute,
    format_number,
    lookup,
    profile,
)
from offline.resolve import column_hits, measures_named

Frequency = Literal["year", "quarter", "month", "day"]  # the grains a table is computed at
# The standard facts of a measure, the most telling first (the brief takes them in turn).
TIME_KINDS: tuple[ComputeKind, ...] = ("change", "cagr", "max", "min", "mean", "last", "first")
MAX_TARGETS = 4  # measures whose facts a brief computes
MAIN_MEASURES = 2  # of a table the spec names no measure of
YEARLY_AFTER = 3  # years: finer data spanning more are combined per year for the facts
_GRAIN_KO = {"decade": "10년 단위",
             "year": "연도", "quarter": "분기", "month": "월", "week": "주", "day": "날짜"}
_COMBINED = ("Mean ", "Total ", "Number of ")


def is_table(path: str) -> bool:
    """Whether a source is a data table (charted and computed, not quoted)."""
    return PurePosixPath(path).suffix.lower() in TABLE_SUFFIXES


def _stem(path: str) -> str:
    return re.sub(r"[^0-9a-z가-힣]+", "", PurePosixPath(path).stem.lower())


def describes(document: str, text: str, table: str) -> bool:
    """Whether a document describes a table: the same stem, one stem the other's start, or the
    document names the table's file (the rule of the home's scan)."""
    doc, tab = _stem(document), _stem(table)
    if doc == tab or doc.startswith(tab) or tab.startswith(doc):
        return bool(doc and tab)
    return PurePosixPath(table).name.lower() in text.lower()


class SourceTexts:
    """The text of each of the spec's sources, read once; nothing else is ever read."""

    def __init__(self, home: Path, sources: Sequence[str]) -> None:
        # A link leaving the home, a pipe, a socket… is never opened (a FIFO named .csv blocks).
        readable = [path for path in sources if why_unread(look(home / path, home)) is None]
        self.home, self.sources = home, readable
        self._texts: dict[str, str | None] = {}
        self._profiles: dict[str, TableProfile | None] = {}

    def text(self, path: str) -> str | None:
        """The source's text (a document converted), or None when it gives none."""
        if path not in self.sources:
            return None
        if path not in self._texts:
            self._texts[path] = source_text(self.home, self.home / path)[0]
        return self._texts[path]

    def descriptions(self, table: str) -> list[str]:
        """The texts of the documents among the sources that describe a table."""
        found = []
        for path in self.sources:
            if path == table or is_table(path):
                continue
            text = self.text(path)
            if text and describes(path, text, table):
                found.append(text)
        return found

    def profile(self, table: str) -> TableProfile | None:
        """The table's profile, read once (None for a file that is no table)."""
        if table not in self._profiles:
            try:
                self._profiles[table] = profile(self.home / table, root=self.home,
                                                descriptions=self.descriptions(table))  # fmt: skip
            except Exception:  # a file that is no table gives no facts; the brief goes on
                self._profiles[table] = None
        return self._profiles[table]

    def read(self) -> dict[str, str]:
        """Every source read so far, with its text."""
        return {path: text for path, text in self._texts.items() if text}


@dataclass(frozen=True)
class Answer:
    """A question of the spec answered now: its sentence with figure and citation, or why not."""

    said: str
    sentence: str
    found: bool
    # What answers it, for telling whether a text states it: its value at full precision, what
    # it may be written as with a percent sign (a change's percent, else the value itself), or
    # the category a ranking names. Not the period, the unit or the row, which a text that
    # never gives the answer also writes.
    values: tuple[float, ...] = ()
    percents: tuple[float, ...] = ()
    names: tuple[str, ...] = ()


def answer(question: Question, texts: SourceTexts, lang: str, generic: str) -> Answer:
    """One question answered from the table (`generic`: why not, in the brief's language)."""
    said = question.reading.phrase
    asked = question.lookup or question.compute
    if asked is None or asked.file not in texts.sources:
        why = question.reason if lang == "en" and question.reason else generic
        return Answer(said, why, False)
    if question.lookup is not None:
        ask = question.lookup
        cell = lookup(LookupQuery(file=ask.file, selectors=ask.selectors, column=ask.column),
                      root=texts.home)  # fmt: skip
        if cell.number is not None:  # a cell of a percent column may be written with "%"
            number = (cell.number,)
            return Answer(said, cell.sentence(lang), cell.found, values=number, percents=number)
        names = (cell.text,) if cell.text else ()
        return Answer(said, cell.sentence(lang), cell.found, names=names)
    assert question.compute is not None
    ask_ = question.compute
    query = ComputeQuery(kind=ask_.kind, file=ask_.file, measure=ask_.measure,
                         compared=ask_.compared, category=ask_.category, start=ask_.start,
                         end=ask_.end,
                         frequency=ask_.frequency if ask_.frequency != "week" else None,
                         filters=ask_.filters)  # fmt: skip
    fact = compute(query, root=texts.home, descriptions=texts.descriptions(ask_.file))
    if isinstance(fact, Fact):
        if fact.kind in RANKING_KINDS and fact.category:
            return Answer(said, fact.sentence(lang), True, names=(fact.category,))
        # A change's size is no percent; any other value may be one (a rate, a growth).
        percent = fact.value if fact.percent is None else fact.percent
        return Answer(said, fact.sentence(lang), True, values=(fact.value,), percents=(percent,))
    return Answer(said, fact.reason if lang == "en" else generic, False)


@dataclass(frozen=True)
class Target:
    """A measure whose standard facts the brief states, as the spec narrows it."""

    file: str
    measure: str
    filters: dict[str, list[str]] = field(default_factory=dict)
    category: str | None = None  # the column whose categories are compared
    frequency: Frequency | None = None
    aggregation: Literal["mean", "sum", "last"] | None = None  # as the chart asked, else the kind's

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes two targets the same."""
        return self.file, self.measure.casefold(), repr(sorted(self.filters.items()))


def _frequency(value: str | None) -> Frequency | None:
    return value if value in ("year", "quarter", "month", "day") else None  # type: ignore[return-value]


def targets(spec: RequestSpec, texts: SourceTexts) -> list[Target]:
    """The measures the spec's charts and questions name; else each source table's main ones."""
    found: list[Target] = []
    for chart in spec.charts:
        ask = chart.data
        if ask is not None and ask.file in texts.sources:
            category = ask.series_by or (ask.dimension if ask.dimension != "time" else None)
            how = ask.aggregation if ask.aggregation != "count" else None
            grain = _frequency(ask.frequency)
            charted = texts.profile(ask.file) if len(ask.measures) > 1 else None
            wide = charted.wide if charted is not None else None
            if wide is not None and wide.axis == "category" and set(ask.measures) == set(
                    wide.columns):  # fmt: skip
                # the columns of one measure charted as its categories: compared as such
                found.append(Target(ask.file, wide.name, dict(ask.filters), wide.name, grain,
                                    how))  # fmt: skip
                continue
            found += [Target(ask.file, measure, dict(ask.filters), category, grain, how)
                      for measure in ask.measures]  # fmt: skip
    for question in spec.questions:
        if question.compute is not None and question.compute.file in texts.sources:
            ask_ = question.compute
            ranked = ask_.kind in RANKING_KINDS
            category = ask_.category if ranked else None
            found.append(Target(ask_.file, ask_.measure, dict(ask_.filters), category,
                                _frequency(ask_.frequency)))  # fmt: skip
        elif question.lookup is not None and question.lookup.file in texts.sources:
            found.append(Target(question.lookup.file, question.lookup.column))
    asked = without_left_out(spec, spec.request)  # an exclusion's words name nothing
    if not found:
        for table in [path for path in texts.sources if is_table(path)][:MAX_TARGETS]:
            found += _main_measures(table, texts, asked)
    else:  # "a brief on unemployment and inflation, with a chart of unemp": inflation too
        scopes = {target.file: target.filters for target in reversed(found)}
        for table, filters in scopes.items():
            named = texts.profile(table)
            beside = [target.measure for target in found if target.file == table]
            found += [Target(table, measure, dict(filters))
                      for measure in (measures_named(asked, named, beside) if named else [])]
    unique = {target.key: target for target in reversed(found)}
    return [target for target in found if unique.get(target.key) is target][:MAX_TARGETS]


def _main_measures(table: str, texts: SourceTexts, asked: str = "") -> list[Target]:
    """A table's measures the request names ("inflation and unemployment": infl, unemp), then
    its first measures (those whose kind is known first), and its first category."""
    found = texts.profile(table)
    if found is None:
        return []
    named = [hit.column for hit in column_hits(asked, found, ("measure",))] if asked else []
    assumed = {c.name for c in found.role("measure")
               if any(note.startswith(f"aggregation of {c.name} ") for note in found.notes)}
    wide = found.wide
    grouped = set(wide.columns) if wide is not None else set()
    measures = [c.name for c in found.role("measure") if c.name not in assumed | grouped]
    measures += [c.name for c in found.role("measure") if c.name in assumed - grouped]
    measures = [*[m for m in named if m not in grouped], *[m for m in measures if m not in named]]
    categories = found.role("category") if found.shape == "long" or found.time is None else []
    category = categories[0].name if categories else None
    chosen = [Target(table, measure, {}, category) for measure in measures]
    if wide is not None:  # one measure spread over columns: its columns are its categories
        by_column = wide.name if wide.axis == "category" else category
        chosen.insert(0, Target(table, wide.name, {}, by_column))
    return chosen[:MAIN_MEASURES]


def _grain(found: TableProfile, asked: Frequency | None) -> Frequency | None:
    """The chart's grain, else yearly when finer data span several years, else the data's own."""
    axis = found.time
    if asked is not None or axis is None:
        return asked
    first, last = re.match(r"\d{4}", axis.first), re.match(r"\d{4}", axis.last)
    spans = first and last and int(last.group()) - int(first.group()) >= YEARLY_AFTER
    if axis.frequency in ("quarter", "month", "week", "day") and spans:
        return "year"
    return _frequency(axis.frequency)


def _queries(target: Target, found: TableProfile) -> list[ComputeQuery]:
    """The standard facts' queries of one measure, the most telling first."""
    kinds: list[ComputeKind] = list(TIME_KINDS) if found.time is not None else []
    column = found.column(target.measure)
    rate = column is not None and (column.kind in ("rate", "share") or column.unit == "%")
    if rate:  # a rate's growth rate says nothing a reader wants: its change is in points
        kinds = [kind for kind in kinds if kind != "cagr"]
    filtered = set(target.filters)
    categories = [c.name for c in found.role("category") if c.name not in filtered]
    own = found.shape == "long" or found.time is None  # its rows are categories' values
    category = target.category or (categories[0] if categories and own else None)
    category = category if category not in filtered else None
    if category is not None:
        kinds += (["largest"] if rate else ["largest", "fastest_growing"]) if found.time \
            is not None else ["largest", "smallest"]
    grain = _grain(found, target.frequency)
    return [
        ComputeQuery(kind=kind, file=target.file, measure=target.measure, filters=target.filters,
                     category=category if kind in RANKING_KINDS else None, frequency=grain,
                     aggregation=target.aggregation, whole_periods=True)
        for kind in kinds
    ]  # fmt: skip


def _compared(spec: RequestSpec, texts: SourceTexts) -> list[Fact]:
    """For a chart of several measures of one kind ("deaths by cause: disease, wounds,
    other"), which of them is largest over the chart's rows."""
    facts: list[Fact] = []
    for chart in spec.charts:
        ask = chart.data
        if ask is None or ask.file not in texts.sources or len(ask.measures) < 2:
            continue
        found = texts.profile(ask.file)
        if found is None:
            continue
        columns = [found.column(m) for m in ask.measures]
        kinds = {(c.kind, c.aggregation, c.unit) for c in columns if c is not None}
        if len(kinds) != 1 or None in columns or (found.wide and set(ask.measures) <= set(
                found.wide.columns)):  # fmt: skip
            continue  # unlike measures are not ranked; a wide group has its own facts
        axis = found.time
        query = ComputeQuery(kind="largest", file=ask.file, measure=ask.measures[0],
                             compared=ask.measures[1:], filters=ask.filters,
                             start=axis.first if axis else None, end=axis.last if axis else None,
                             aggregation=ask.aggregation if ask.aggregation != "count" else None)
        fact = compute(query, root=texts.home, descriptions=texts.descriptions(ask.file))
        if isinstance(fact, Fact):
            facts.append(fact)
    return facts


def standard_facts(spec: RequestSpec, texts: SourceTexts) -> list[list[Fact]]:
    """The standard facts of each target measure (first/last, extremes, change, annual growth,
    mean, largest and fastest-growing category), one list per measure, the most telling first;
    first, which of a chart's like measures is largest."""
    compared = _compared(spec, texts)
    lists: list[list[Fact]] = [compared] if compared else []
    for target in targets(spec, texts):
        found = texts.profile(target.file)
        if found is None:
            continue
        facts: list[Fact] = []
        for query in _queries(target, found):
            fact = compute(query, root=texts.home, descriptions=texts.descriptions(target.file))
            # A ranking of one category tells nothing nobody asked (a table filtered to one
            # country, ranked by its continent): a standard fact is a comparison or nothing.
            if isinstance(fact, Fact) and fact.among != 1 and fact.sentence("en") not in {
                    f.sentence("en") for f in facts}:  # fmt: skip
                facts.append(fact)
        lists.append(facts)
    return lists


def query_of(ask: ChartAsk) -> ChartQuery:
    """The table computation a chart asks for: the proposal's preview computed the same."""
    return ChartQuery(file=ask.file, measures=ask.measures, dimension=ask.dimension,
                      frequency=ask.frequency if ask.frequency != "week" else None,
                      aggregation=ask.aggregation, filters=ask.filters, series_by=ask.series_by,
                      top_n=ask.top_n)  # fmt: skip


@dataclass(frozen=True)
class Drawn:
    """A chart asked for: its data and SVG, or why it was not drawn (in the brief's language)."""

    said: str
    data: ChartData | None = None
    why: str = ""
    title: str = ""
    file_name: str = ""
    svg: str = ""
    printed: list[str] = field(default_factory=list)  # every value as the text prints it


def draw_charts(spec: RequestSpec, texts: SourceTexts, stem: str, refused: str) -> list[Drawn]:
    """Each chart of the spec drawn from its table (`refused`: why not, in the language)."""
    drawn: list[Drawn] = []
    for number, chart in enumerate(spec.charts, start=1):
        said = chart.reading.phrase
        ask = chart.data
        if ask is None or ask.file not in texts.sources:
            drawn.append(Drawn(said, why=chart.reason if spec.language == "en" and chart.reason
                               else refused))  # fmt: skip
            continue
        data = chart_data(query_of(ask), root=texts.home,
                          descriptions=texts.descriptions(ask.file))  # fmt: skip
        if not isinstance(data, ChartData):
            drawn.append(Drawn(said, why=data.reason if spec.language == "en" else refused))
            continue
        title = chart_title(data, spec.language)
        spec_ = ChartSpec(title=title, kind=data.kind, labels=data.labels, source=ask.file,
                          lines=[SeriesLine(name=s.name, values=s.values) for s in data.series])
        x_title = axis_title(data, spec.language)
        svg = render_svg(spec_, f"{stem}-{number}", x_title=x_title, y_title=data.y_label)
        printed = [shown(value, _places(series.values)) for series in data.series
                   for value in series.values]  # fmt: skip
        drawn.append(Drawn(said, data, "", title, f"{stem}-chart-{number}.svg", svg, printed))
    return drawn


def _places(values: Sequence[float | None]) -> int | None:
    """A series of whole numbers prints whole; any other to two decimals."""
    return 0 if all(v is None or float(v).is_integer() for v in values) else None


def shown(value: float | None, places: int | None) -> str:
    """A chart's value as the brief prints it."""
    return format_number(value, places)


def axis_title(data: ChartData, lang: str) -> str:
    """The x axis: the time grain or the category column (data names stay as written)."""
    frequency = data.query.frequency
    if lang == "ko" and frequency is not None:
        return _GRAIN_KO.get(frequency, "시간")
    return data.x_label


def chart_title(data: ChartData, lang: str) -> str:
    """The chart's title stating its aggregation: tabular's in English, built the same in Korean."""
    if lang != "ko":
        return data.title
    combined = data.title.startswith(_COMBINED) or "(last value of each" in data.title
    label = data.y_label
    measures = data.query.measures
    if len(measures) > 1 and data.query.dimension != "series" and len(data.series) > 1:
        # several measures: their names as written, without the English "and"
        label = ", ".join(measures) if len(measures) <= 3 else f"측정값 {len(measures)}개"
    if combined:
        label = {"mean": f"평균 {label}", "sum": f"합계 {label}", "count": f"{label} 값의 개수",
                 "last": f"{label}(기간별 마지막 값)"}.get(data.aggregation, label)  # fmt: skip
    by = axis_title(data, lang)
    if data.query.series_by:
        by += f"·{data.query.series_by}"
    text = f"{by}별 {label}"
    if data.query.frequency is not None and data.labels:
        first, last = data.labels[0], data.labels[-1]
        text += f", {first}–{last}" if first != last else f", {first}"
    kept = [f"{key}: {', '.join(values)}" for key, values in data.query.filters.items() if values]
    return text + (f" ({'; '.join(kept)})" if kept else "")


def verified_facts(home: Path, spec: RequestSpec) -> list[str]:
    """The answers and standard facts of a spec as sentences with their citations, in its
    language: what a model writer is given to use and cite."""
    texts = SourceTexts(home, spec.kept())
    found = [answer(q, texts, spec.language, "") for q in spec.questions]
    sentences = [item.sentence for item in found if item.found]
    sentences += [fact.sentence(spec.language) for facts in standard_facts(spec, texts)
                  for fact in facts]  # fmt: skip
    return list(dict.fromkeys(sentences))
