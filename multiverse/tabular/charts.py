"""A chart query checked against a table and resolved: columns found, grain, aggregation, order."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

from multiverse.tabular.cells import GRAINS, RANK, format_number, label_of
from multiverse.tabular.dataset import (
    Combined,
    Unanswerable,
    combine,
    find_column,
    is_time,
    label_columns,
    load,
    long_rows,
    plain,
    select,
    series_parts,
)
from multiverse.tabular.models import ChartAggregation, ChartData, ChartQuery, ChartRefusal, Series
from multiverse.tabular.profiling import Analysis
from multiverse.tabular.words import axis_labels, title

_GRAIN_WORDS = {"decade": "decade", "decades": "decade",
                "year": "year", "yearly": "year", "annual": "year", "quarter": "quarter",
                "quarterly": "quarter", "month": "month", "monthly": "month", "day": "day",
                "daily": "day", "date": None, "time": None, "period": None}
_FREQUENCY_ADJECTIVE = {"decade": "per decade",
                        "year": "yearly", "quarter": "quarterly", "month": "monthly",
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


def native_grain(analysis: Analysis, measures: Sequence[str] = ()) -> str | None:
    """The grain a table's periods are keyed at (of `measures`: a column beside a wide group
    of periods, such as "Annual" beside Jan … Dec, is keyed by its row's time)."""
    wide = analysis.wide_time
    if wide is not None and (not set(measures) - set(wide.columns) or analysis.times is None):
        return wide.grain
    return analysis.times.grain if analysis.times is not None else None


def plan_chart(analysis: Analysis, query: ChartQuery) -> Plan:
    """The query resolved against the table, or Unanswerable with the reason."""
    measures = resolve_measures(analysis, query.measures, counting=query.aggregation == "count")
    time, dimension, grain = _dimension(analysis, query, measures)
    series_by = _series_by(analysis, query, dimension)
    wide_time = analysis.wide_time is not None and set(measures) <= set(analysis.wide_time.columns)
    split = len(measures) > 1 and not wide_time and dimension != "_source"
    series_keys = [k for k in (["_source"] if split else []) + ([series_by] if series_by else [])]
    hows = {m: query.aggregation or measure_aggregation(analysis, m) for m in measures}
    by_aggregation: dict[str, list[str]] = {}
    for measure, how in hows.items():
        by_aggregation.setdefault(how, []).append(measure)
    parts = series_parts(analysis, (dimension, series_by))
    if not wide_time:
        parts.append("_source")
    order = query.order or ("time" if time else "value_desc")
    frequency = grain if time and grain in ("decade", "year", "quarter", "month", "day") else None
    resolved = query.model_copy(update={
        "measures": measures, "frequency": frequency, "aggregation": hows[measures[0]],
        "order": order, "series_by": series_by if series_by != "_source" else query.series_by,
    })
    notes = _notes(analysis, measures, time, grain, hows)
    unit, label = _unit_and_label(analysis, measures)
    return Plan(resolved, measures, time, dimension, grain, series_keys, parts, by_aggregation,
                hows[measures[0]], order, unit, label, native_grain(analysis, measures), notes)


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


def _dimension(analysis: Analysis, query: ChartQuery,
               measures: list[str]) -> tuple[bool, str | None, str]:
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
        native = native_grain(analysis, measures)
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
    native = native_grain(analysis, measures)
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
    labels = [c.label for c in columns if c is not None]
    if len(measures) > 3 or not labels:
        return unit, f"{len(measures)} measures"
    return unit, labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"


MAX_ALTERNATIVES = 4
Draw = Callable[..., ChartData | ChartRefusal]


def _close(word: str, options: list[str], count: int = 3) -> list[str]:
    """The options nearest a word in spelling, the nearest first."""
    lowered = {option.lower(): option for option in options}
    near = difflib.get_close_matches(word.lower(), list(lowered), n=count, cutoff=0.4)
    return [lowered[n] for n in near]


def _candidates(analysis: Analysis, query: ChartQuery, problem: Unanswerable) -> list[ChartQuery]:
    """Changed queries that may be drawable, the closest change first."""
    profile = analysis.profile
    measures = [c.name for c in profile.role("measure")]
    labels = label_columns(analysis)
    time = "time" if profile.time is not None else None
    dimensions = [d for d in [time, *labels[:3]] if d]
    bad = problem.column
    out: list[ChartQuery] = []
    if bad is not None and bad in query.filters:
        values = profile.categories.get(find_column(analysis, bad) or "", [])
        near = [v for wanted in query.filters[bad] for v in _close(wanted, values, 2)]
        if near:
            out.append(query.model_copy(update={"filters": {**query.filters, bad: near[:1]}}))
        out.append(query.model_copy(update={"filters": {
            k: v for k, v in query.filters.items() if k != bad}}))
    elif bad is not None and (bad in query.measures or (bad in labels and bad in query.measures)):
        others = [m for m in query.measures if m != bad]
        for closest in _close(bad, measures) or measures[:3]:
            out.append(query.model_copy(update={"measures": [*others, closest]}))
        if bad in labels:
            out.append(query.model_copy(update={"aggregation": "count", "dimension": bad}))
    elif bad is not None and bad == query.series_by:
        out.append(query.model_copy(update={"series_by": None}))
        out.extend(query.model_copy(update={"series_by": c}) for c in _close(bad, labels))
    if (bad is not None and bad == query.dimension) or query.frequency is not None:
        out.append(query.model_copy(update={"frequency": None}))
        out.extend(query.model_copy(update={"dimension": d, "frequency": None}) for d in dimensions)
    out.extend(ChartQuery(file=query.file, sheet=query.sheet, measures=[m], dimension=d)
               for m in measures[:3] for d in dimensions[:1])
    return out


def chart_alternatives(analysis: Analysis, query: ChartQuery, problem: Unanswerable,
                       draw: Draw) -> list[ChartQuery]:
    """Up to MAX_ALTERNATIVES queries near `query` that draw (each was drawn to be sure)."""
    found: list[ChartQuery] = []
    for candidate in _candidates(analysis, query, problem):
        if candidate == query or candidate in found:
            continue
        if isinstance(draw(analysis, candidate, suggest=False), ChartData):
            found.append(candidate)
        if len(found) >= MAX_ALTERNATIVES:
            break
    return found


if TYPE_CHECKING:
    import pandas as pd

BAR_CAP = 40  # a bar chart keeps its 40 largest categories and says so
LINE_AFTER = 12  # a time dimension with more points than this is drawn as a line


def chart_data(query: ChartQuery, *, root: Path,
               descriptions: Sequence[str] = ()) -> ChartData | ChartRefusal:
    """The chart a query asks of a table, or why it cannot be drawn and what can."""
    analysis = load(query.file, query.sheet, root, descriptions)
    return chart_of(analysis, query)


def chart_of(analysis: Analysis, query: ChartQuery, *,
             suggest: bool = True) -> ChartData | ChartRefusal:
    """The chart of an analysed table (`suggest`: look for alternatives when refusing)."""
    try:
        plan = plan_chart(analysis, query)
        return _draw(analysis, plan)
    except Unanswerable as problem:
        alternatives = chart_alternatives(analysis, query, problem, chart_of) if suggest else []
        return ChartRefusal(query=query, reason=problem.reason, alternatives=alternatives)


@dataclass
class _Grid:
    """Values by label and series, before ordering and trimming."""

    keys: list[object]  # the dimension's values (period keys or labels), in their natural order
    names: list[tuple[object, ...]]  # series keys
    values: dict[tuple[object, ...], dict[object, float]] = field(default_factory=dict)
    cells: int = 0  # the most cells behind one value (1: nothing was combined)


def _draw(analysis: Analysis, plan: Plan) -> ChartData:
    """Compute the series of a planned chart."""
    frame = select(analysis, long_rows(analysis, plan.measures), plan.query.filters)
    plan.query = plan.query.model_copy(update={"filters": frame.attrs.get("kept", {})})
    notes = list(plan.notes)
    skipped = frame[frame["_value"].isna()]["_row"].nunique()
    if plan.time:
        untimed = frame[~frame["_t"].astype(bool)]["_row"].nunique()
        frame = frame[frame["_t"].astype(bool)]
        if untimed:
            notes.append(f"{format_number(untimed, 0)} rows without a readable "
                         f"{plan.time_words} skipped")
    if skipped:
        notes.append(f"{format_number(skipped, 0)} rows with a missing value skipped")
    frame = _keyed(frame, plan)
    combined = _combined(frame, plan)
    grid = _grid(combined, plan)
    if not grid.keys:
        raise Unanswerable(f"no value of {', '.join(plan.measures)} is left in {plan.query.file} "
                           f"after the filters", column=None)
    keys, names = _trim(grid, plan, notes)
    labels = [label_of(plan.grain, cast(int, k)) if plan.time else str(k) for k in keys]
    series = [Series(name=_series_name(plan, name),
                     values=[grid.values[name].get(k) for k in keys]) for name in names]
    lined = plan.time and (len(keys) > LINE_AFTER or bool(plan.series_keys))
    kind: Literal["line", "bar"] = "line" if lined else "bar"
    kept = combined.used[combined.used["_key"].isin(keys)]
    if plan.series_keys:
        import pandas as pd

        pairs = pd.MultiIndex.from_frame(kept[plan.series_keys])
        kept = kept[pairs.isin(pd.MultiIndex.from_tuples(names, names=plan.series_keys))]
    x_label, y_label = axis_labels(analysis, plan)
    return ChartData(
        query=plan.query, title=title(analysis, plan, labels, _combines(plan, grid)), kind=kind,
        x_label=x_label, y_label=y_label, labels=labels, series=series,
        aggregation=cast(ChartAggregation, plan.aggregation), unit=plan.unit,
        citation=combined.citation(analysis.table.file, analysis.table.sheet,
                                   combined.used.index.to_series().isin(kept.index)),
        notes=notes,
    )


def _combines(plan: Plan, grid: _Grid) -> bool:
    """Whether a value of the chart stands for more than one cell (its title then says how)."""
    coarser = plan.time and plan.grain != plan.native
    return grid.cells > 1 or coarser or (not plan.time and plan.aggregation == "last")


def _keyed(frame: pd.DataFrame, plan: Plan) -> pd.DataFrame:
    """The long rows with `_key`: their period at the chart's grain, or their dimension value."""
    from multiverse.tabular.dataset import frame_times

    frame = frame.copy()
    if plan.time:
        frame["_key"] = frame_times(frame, frame.attrs.get("grain") or "year").keys(plan.grain)
    else:
        frame["_key"] = frame[cast(str, plan.dimension)].astype(str)
    return frame


def _combined(frame: pd.DataFrame, plan: Plan) -> Combined:
    """Each group's value, every measure combined by its own aggregation."""
    import pandas as pd

    keys = ["_key", *plan.series_keys]
    results = [combine(frame[frame["_source"].isin(measures)], keys, how, plan.parts)
               for how, measures in plan.by_aggregation.items()]
    if len(results) == 1:
        return results[0]
    groups = pd.concat([r.groups for r in results], ignore_index=True)
    used = pd.concat([r.used for r in results])
    return Combined(groups, used)


def _grid(combined: Combined, plan: Plan) -> _Grid:
    """The values by dimension key and series key."""
    groups = combined.groups
    keys = list(dict.fromkeys(groups["_key"].tolist()))
    if plan.time:
        keys.sort()
    names = list(dict.fromkeys(tuple(r) for r in groups[plan.series_keys].itertuples(index=False)))
    if not plan.series_keys:
        names = [()]
    grid = _Grid(keys, names, {name: {} for name in names},
                 int(groups["cells"].max()) if len(groups) else 0)
    for row in groups.to_dict("records"):
        name = tuple(row[k] for k in plan.series_keys) if plan.series_keys else ()
        if row["value"] == row["value"]:  # NaN is not equal to itself
            grid.values[name][row["_key"]] = float(row["value"])
    return grid


def _trim(grid: _Grid, plan: Plan,
          notes: list[str]) -> tuple[list[object], list[tuple[object, ...]]]:
    """The dimension keys and series kept, in the chart's order (top-n, the bar cap)."""
    def total(key: object) -> float:
        """A key's value summed over the series (its bar's height)."""
        return sum(grid.values[name].get(key, 0.0) for name in grid.names)

    keys, names = list(grid.keys), list(grid.names)
    top = plan.query.top_n
    if top is not None and plan.time and plan.series_keys:
        names = sorted(names, key=lambda n: -_latest(grid.values[n], keys))[:top]
        notes.append(f"the {len(names)} series with the largest latest value kept")
    elif top is not None:
        keys = sorted(keys, key=total, reverse=True)[:top]
        notes.append(f"the {len(keys)} largest kept")
    if not plan.time and len(keys) > BAR_CAP:
        notes.append(f"{format_number(len(keys), 0)} {plan.dimension} values: the {BAR_CAP} "
                     f"largest kept")
        keys = sorted(keys, key=total, reverse=True)[:BAR_CAP]
    if plan.order == "time" and plan.time:
        keys.sort(key=lambda k: cast(int, k))
    elif plan.order == "time":
        keys = [k for k in grid.keys if k in set(keys)]  # the table's order
    else:
        keys.sort(key=total, reverse=plan.order == "value_desc")
    return keys, names


def _latest(values: dict[object, float], keys: list[object]) -> float:
    """A series' value at the last key it has one for."""
    for key in reversed(keys):
        if key in values:
            return values[key]
    return float("-inf")


def _series_name(plan: Plan, name: tuple[object, ...]) -> str:
    """A series' name: its category value(s), its measure, or the measure's label."""
    if not name:
        return plan.label
    return ": ".join(str(part) for part in name)
