"""A chart query checked against a table and resolved: columns found, grain, aggregation, order."""

from __future__ import annotations

from dataclasses import dataclass, field

from multiverse.tabular.dataset import (
    Unanswerable,
    find_column,
    is_time,
    label_columns,
    plain,
)
from multiverse.tabular.models import ChartQuery
from multiverse.tabular.profiling import Analysis
from multiverse.tabular.timelabels import GRAINS, RANK

_GRAIN_WORDS = {"year": "year", "yearly": "year", "annual": "year", "quarter": "quarter",
                "quarterly": "quarter", "month": "month", "monthly": "month", "day": "day",
                "daily": "day", "date": None, "time": None, "period": None}
_FREQUENCY_ADJECTIVE = {"year": "yearly", "quarter": "quarterly", "month": "monthly",
                        "day": "daily", "hour": "hourly", "second": "timed"}
_COMBINED = {"mean": "{} values averaged per {}", "sum": "{} values added up per {}",
             "last": "the last {} value of each {} taken", "count": "{} values counted per {}"}


@dataclass
class Plan:
    """A resolved chart query."""

    query: ChartQuery
    measures: list[str]
    time: bool
    dimension: str | None  # the label column of a category dimension ("_source": the columns)
    grain: str  # the time grain of a time dimension
    series_keys: list[str]
    parts: list[str]  # label columns whose sub-series a `last` value is taken in
    by_aggregation: dict[str, list[str]]
    aggregation: str
    order: str
    unit: str | None
    label: str
    native: str | None = None  # the grain of the table's own periods
    notes: list[str] = field(default_factory=list)

    @property
    def time_words(self) -> str:
        """What the time dimension is called: year, quarter, month, date, time."""
        return {"day": "date", "hour": "time", "second": "time"}.get(self.grain, self.grain)


def native_grain(analysis: Analysis) -> str | None:
    """The grain a table's periods are keyed at."""
    if analysis.wide_time is not None:
        return analysis.wide_time.grain
    return analysis.times.grain if analysis.times is not None else None


def plan_chart(analysis: Analysis, query: ChartQuery) -> Plan:
    """The query resolved against the table, or Unanswerable with the reason."""
    measures = resolve_measures(analysis, query.measures, counting=query.aggregation == "count")
    time, dimension, grain = _dimension(analysis, query)
    series_by = _series_by(analysis, query, dimension)
    wide_time = analysis.wide_time is not None and set(measures) <= set(analysis.wide_time.columns)
    split = len(measures) > 1 and not wide_time and dimension != "_source"
    series_keys = [k for k in (["_source"] if split else []) + ([series_by] if series_by else [])]
    hows = {m: query.aggregation or measure_aggregation(analysis, m) for m in measures}
    by_aggregation: dict[str, list[str]] = {}
    for measure, how in hows.items():
        by_aggregation.setdefault(how, []).append(measure)
    parts = [c for c in label_columns(analysis) if c not in (dimension, series_by)
             and analysis.profile.column(c) is not None
             and analysis.profile.column(c).role != "text"]  # type: ignore[union-attr]
    if not wide_time:
        parts.append("_source")
    order = query.order or ("time" if time else "value_desc")
    frequency = grain if time and grain in ("year", "quarter", "month", "day") else None
    resolved = query.model_copy(update={
        "measures": measures, "frequency": frequency, "aggregation": hows[measures[0]],
        "order": order, "series_by": series_by if series_by != "_source" else query.series_by,
    })
    notes = _notes(analysis, measures, time, grain, hows)
    unit, label = _unit_and_label(analysis, measures)
    return Plan(resolved, measures, time, dimension, grain, series_keys, parts, by_aggregation,
                hows[measures[0]], order, unit, label, native_grain(analysis), notes)


def resolve_measures(analysis: Analysis, names: list[str], *, counting: bool) -> list[str]:
    """The measure columns a query names (a wide table's group by its name or label)."""
    file = analysis.table.file
    wide = analysis.profile.wide
    found: list[str] = []
    if not names:
        raise Unanswerable("no measure was named to chart")
    for name in names:
        if wide is not None and plain(name) in (plain(wide.name), plain(wide.label), "values"):
            found.extend(wide.columns)
            continue
        column = find_column(analysis, name)
        if column is None:
            measures = ", ".join(c.name for c in analysis.profile.role("measure")) or "none"
            raise Unanswerable(f"{file} has no column {name!r} (its measures: {measures})",
                               column=name)
        profile = analysis.profile.column(column)
        empty = profile is not None and profile.distinct == 0  # no values: nothing to refuse
        if profile is not None and profile.role != "measure" and not counting and not empty:
            shown = ", ".join(profile.examples[:3])
            raise Unanswerable(f"{column!r} in {file} is not a numeric measure (it holds "
                               f"{profile.role} values such as {shown})", column=column)
        found.append(column)
    return list(dict.fromkeys(found))


def measure_aggregation(analysis: Analysis, measure: str) -> str:
    """How a measure's values of one period combine: its kind's aggregation."""
    wide = analysis.profile.wide
    if wide is not None and wide.axis == "time" and measure in wide.columns:
        return wide.aggregation
    column = analysis.profile.column(measure)
    if column is None or column.aggregation is None:
        return "count"  # a label column is counted
    return column.aggregation


def _dimension(analysis: Analysis, query: ChartQuery) -> tuple[bool, str | None, str]:
    """Whether the dimension is time, its label column otherwise, and the time grain."""
    name = query.dimension
    wide = analysis.profile.wide
    column = find_column(analysis, name)
    role = analysis.profile.column(column).role if column else None  # type: ignore[union-attr]
    if column is not None and role in ("category", "identifier", "text"):
        return False, column, ""
    if wide is not None and wide.axis == "category" and plain(name) == plain(wide.name):
        return False, "_source", ""
    named_grain = _GRAIN_WORDS.get(plain(name), "")
    if is_time(analysis, name) or named_grain != "" or plain(name) in ("time", "date"):
        native = native_grain(analysis)
        if native is None:
            labels = ", ".join(label_columns(analysis)) or "none"
            raise Unanswerable(f"{analysis.table.file} has no time column to chart by "
                               f"(its label columns: {labels})", column=name)
        grain = query.frequency or _part_grain(analysis, name, native) or named_grain or native
        if RANK[grain] > RANK[native]:
            raise Unanswerable(f"{analysis.table.file} holds {_FREQUENCY_ADJECTIVE[native]} values;"
                               f" they cannot be charted by {grain}", column=name)
        return True, None, grain
    columns = ", ".join(["time", *label_columns(analysis)])
    raise Unanswerable(f"{analysis.table.file} has no column {name!r} to chart by (dimensions: "
                       f"{columns})", column=name)


def _part_grain(analysis: Analysis, name: str, native: str) -> str | None:
    """The grain a time column names: `year` of a year + quarter table is yearly."""
    axis = analysis.profile.time
    if axis is None or "+" not in axis.form:
        return None
    parts = axis.form.split()[0].split("+")
    for part, column in zip(parts, axis.columns, strict=False):
        if plain(column) == plain(name) and part in GRAINS and RANK[part] <= RANK[native]:
            return part
    return None


def _series_by(analysis: Analysis, query: ChartQuery, dimension: str | None) -> str | None:
    """The label column to split series by (`_source`: one series per column of a wide table)."""
    if query.series_by is None:
        return None
    wide = analysis.profile.wide
    if wide is not None and wide.axis == "category" and plain(query.series_by) == plain(wide.name):
        return "_source"
    column = find_column(analysis, query.series_by)
    role = analysis.profile.column(column).role if column else None  # type: ignore[union-attr]
    if column is None or role not in ("category", "identifier", "text"):
        labels = ", ".join(label_columns(analysis)) or "none"
        raise Unanswerable(f"{analysis.table.file} has no category column {query.series_by!r} "
                           f"to split series by (its label columns: {labels})",
                           column=query.series_by)
    if column == dimension:
        raise Unanswerable(f"{column!r} cannot be both the dimension and the series",
                           column=column)
    return column


def _notes(analysis: Analysis, measures: list[str], time: bool, grain: str,
           hows: dict[str, str]) -> list[str]:
    """What a reader of the chart should know: assumed aggregations, combined periods."""
    notes = [n for n in analysis.profile.notes
             if n.startswith("aggregation of") and any(f" {m} " in n or f" {m}:" in n
                                                     for m in measures)]
    native = native_grain(analysis)
    if time and native is not None and grain != native:
        for how in dict.fromkeys(hows.values()):
            notes.append(_COMBINED[how].format(_FREQUENCY_ADJECTIVE[native], grain))
    return notes


def _unit_and_label(analysis: Analysis, measures: list[str]) -> tuple[str | None, str]:
    """The measures' common unit (None if they differ) and what to call their values."""
    wide = analysis.profile.wide
    if wide is not None and ((wide.axis == "time" and set(measures) <= set(wide.columns))
                             or set(measures) == set(wide.columns)):
        return wide.unit, wide.label
    columns = [analysis.profile.column(m) for m in measures]
    units = {c.unit for c in columns if c is not None}
    unit = units.pop() if len(units) == 1 else None
    if len(measures) == 1 and columns[0] is not None:
        return unit, columns[0].label
    return unit, " and ".join(c.label for c in columns if c is not None) if len(
        measures) <= 3 else f"{len(measures)} measures"
