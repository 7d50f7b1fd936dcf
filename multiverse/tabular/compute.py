"""Computed facts of a measure, each with its citation: first, last, min, max, change, growth,
compound annual growth, mean, and the largest, smallest or fastest-growing category.

Values are first combined per period with the measure's aggregation (a quarterly rate is
averaged per year before the year of its maximum is named), and the fact says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from multiverse.tabular.chartplan import measure_aggregation, native_grain, resolve_measures
from multiverse.tabular.dataset import (
    Unanswerable,
    find_column,
    label_columns,
    load,
    long_rows,
    matching_values,
    plain,
    select,
)
from multiverse.tabular.models import ComputeQuery, Fact, FactRefusal
from multiverse.tabular.numbers import numbers_in
from multiverse.tabular.periods import Point, Values, per_category, per_period
from multiverse.tabular.profiling import Analysis
from multiverse.tabular.timelabels import RANK, years_between

if TYPE_CHECKING:
    import pandas as pd

_BY_CATEGORY = ("largest", "smallest", "fastest_growing")


def compute(query: ComputeQuery, *, root: Path,
            descriptions: Sequence[str] = ()) -> Fact | FactRefusal:
    """A computed fact of a table's measure with its citation, or why it cannot be computed."""
    return compute_in(load(query.file, query.sheet, root, descriptions), query)


def compute_in(analysis: Analysis, query: ComputeQuery) -> Fact | FactRefusal:
    """A computed fact of an analysed table."""
    try:
        setup = _setup(analysis, query)
        if query.kind in _BY_CATEGORY:
            from multiverse.tabular.ranking import by_category

            fact = by_category(setup)
        else:
            fact = _over_time(setup)
    except Unanswerable as problem:
        return FactRefusal(query=query, reason=problem.reason)
    return fact.model_copy(update={"figures": numbers_in(fact.sentence("en"))})


@dataclass(frozen=True)
class Setup:
    """A compute query resolved: the long rows, the grain, the aggregation, the category."""

    analysis: Analysis
    query: ComputeQuery
    frame: pd.DataFrame
    grain: str | None
    how: str
    parts: list[str]
    column: str | None  # the category column compared (largest, smallest, fastest_growing)
    value: str | None  # the category value kept
    label: str
    unit: str | None
    decimals: int

    def periods(self, frame: pd.DataFrame | None = None) -> Values:
        """The measure's value per period."""
        if self.grain is None:
            raise Unanswerable(f"{self.analysis.table.file} has no time column: "
                               f"{self.query.kind} needs periods")
        rows = self.frame if frame is None else frame
        return per_period(self.analysis, rows, self.grain, self.how, self.parts, self.decimals)

    def categories(self, frame: pd.DataFrame) -> Values:
        """The measure's value per category of the compared column."""
        assert self.column is not None
        return per_category(self.analysis, frame, self.column, self.how, self.parts, self.decimals)

    def fact(self, values: Values, keys: list[object], **fields: Any) -> Fact:
        """A fact with the query's measure, label, unit, aggregation and citation."""
        coarser = values.grain is not None and values.grain != native_grain(self.analysis)
        aggregated = values.aggregated or coarser
        return Fact(kind=self.query.kind, measure=self.query.measure, label=self.label,
                    unit=self.unit, category=fields.pop("category", self.value),
                    citation=values.citation(self.analysis, keys),
                    aggregation=self.how if aggregated else None, frequency=self.grain, **fields)


def _setup(analysis: Analysis, query: ComputeQuery) -> Setup:
    """The query checked against the table."""
    measures = resolve_measures(analysis, [query.measure], counting=False)
    wide = analysis.profile.wide
    filters = dict(query.filters)
    column, value = _category(analysis, query, measures)
    if value is not None and column is not None:
        filters[column] = [value]
        column = None
    if query.kind in _BY_CATEGORY and column is None:
        column = _default_category(analysis, measures)
    if len(measures) > 1 and column != "_source" and not (
            analysis.wide_time and set(measures) <= set(analysis.wide_time.columns)):
        raise Unanswerable(f"{query.measure!r} names {len(measures)} columns; name one of them")
    frame = select(analysis, long_rows(analysis, measures), filters)
    grain = _grain(analysis, query)
    how = query.aggregation or measure_aggregation(analysis, measures[0])
    parts = [c for c in label_columns(analysis) if c != column and analysis.profile.column(c)
             and analysis.profile.column(c).role != "text"]  # type: ignore[union-attr]
    if not (analysis.wide_time and set(measures) <= set(analysis.wide_time.columns)):
        parts.append("_source")
    source = analysis.profile.column(measures[0])
    grouped = wide is not None and (wide.axis == "time" or len(measures) > 1)
    label = wide.label if grouped and wide else source.label if source else query.measure
    unit = wide.unit if grouped and wide else source.unit if source else None
    decimals = max((analysis.numbers[m].decimals for m in measures if m in analysis.numbers),
                   default=0)
    kept = frame.attrs.get("kept", {})
    shown = ", ".join(v for values in kept.values() for v in values) or None
    return Setup(analysis, query, frame, grain, how, parts, column, shown, label, unit, decimals)


def _category(analysis: Analysis, query: ComputeQuery,
              measures: list[str]) -> tuple[str | None, str | None]:
    """The query's category: a column to compare, or a value to keep (with its column)."""
    if query.category is None:
        return None, None
    wide = analysis.profile.wide
    if wide is not None and wide.axis == "category" and plain(query.category) == plain(wide.name):
        return "_source", None
    column = find_column(analysis, query.category)
    if column in label_columns(analysis):
        return column, None
    for name, values in analysis.profile.categories.items():
        matched = matching_values(query.category, values)
        if matched:
            return name, matched[0]
    raise Unanswerable(f"{analysis.table.file} has no category column or value "
                       f"{query.category!r} (its category columns: "
                       f"{', '.join(label_columns(analysis)) or 'none'})")


def _default_category(analysis: Analysis, measures: list[str]) -> str:
    """The column whose categories a ranking compares when none is named."""
    if len(measures) > 1:
        return "_source"  # one column per category
    categories = analysis.profile.role("category")
    if not categories:
        raise Unanswerable(f"{analysis.table.file} has no category column to compare")
    return categories[0].name


def _grain(analysis: Analysis, query: ComputeQuery) -> str | None:
    """The grain values are combined to: the query's, else the data's own."""
    native = native_grain(analysis)
    if native is None:
        return None
    grain = query.frequency or native
    if RANK[grain] > RANK[native]:
        raise Unanswerable(f"{analysis.table.file} holds one value a {native} at most; it has no "
                           f"{grain} values")
    return grain


def _over_time(setup: Setup) -> Fact:
    """first, last, min, max, change, growth, cagr or mean of the measure's periods."""
    values = setup.periods()
    query = setup.query
    points = values.between(query.start, query.end)
    if not points:
        raise Unanswerable(f"{query.measure!r} has no value between {query.start or 'the start'} "
                           f"and {query.end or 'the end'}")
    kind = query.kind
    if kind in ("first", "last", "min", "max"):
        pick = {"first": points[0], "last": points[-1],
                "min": min(points, key=lambda p: p.value),
                "max": max(points, key=lambda p: p.value)}[kind]
        return setup.fact(values, [pick.key], value=pick.value, period=pick.label,
                          decimals=pick.decimals)
    if kind == "mean":
        mean = sum(p.value for p in points) / len(points)
        period = points[0].label if len(points) == 1 else f"{points[0].label}–{points[-1].label}"
        single = points[0].decimals if len(points) == 1 else None
        return setup.fact(values, [p.key for p in points], value=mean, period=period,
                          decimals=single, start=points[0].label, end=points[-1].label)
    return _change(setup, values, points[0], points[-1])


def _change(setup: Setup, values: Values, start: Point, end: Point) -> Fact:
    """change, growth or cagr from one period to another."""
    kind = setup.query.kind
    if start.key == end.key:
        raise Unanswerable(f"{kind} needs two periods; {start.label} is the only one")
    percent = (end.value - start.value) / abs(start.value) * 100 if start.value else None
    years = years_between(setup.grain or "year", int(start.key), int(end.key))  # type: ignore[call-overload]
    # The two values keep the source's precision (None: computed means); percents are computed.
    places = None if start.decimals is None or end.decimals is None else max(
        start.decimals, end.decimals)
    common = {"period": f"{start.label}–{end.label}", "start": start.label, "end": end.label,
              "start_value": start.value, "end_value": end.value, "years": years,
              "decimals": places}
    keys = [start.key, end.key]
    if kind == "change":
        return setup.fact(values, keys, value=end.value - start.value, percent=percent, **common)
    if percent is None:
        raise Unanswerable(f"{setup.label} was 0 in {start.label}: a growth from 0 has no percent")
    if kind == "growth":
        return setup.fact(values, keys, value=percent, percent=percent, **common)
    if start.value <= 0 or end.value <= 0 or years <= 0:
        raise Unanswerable("a compound annual growth needs positive values a year or more apart")
    cagr = ((end.value / start.value) ** (1 / years) - 1) * 100
    return setup.fact(values, keys, value=cagr, percent=cagr, **common)
