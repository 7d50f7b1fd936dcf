"""A measure's values per period (and per category), combined by its aggregation, with the lines
each value comes from: what computed facts are made of.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from multiverse.tabular.cells import (
    RANK,
    coarsen,
    key_of,
    label_of,
    numbers_in,
    parse_label,
    years_between,
)
from multiverse.tabular.charts import measure_aggregation, native_grain, resolve_measures
from multiverse.tabular.dataset import (
    Combined,
    Unanswerable,
    combine,
    find_column,
    frame_times,
    label_columns,
    load,
    long_rows,
    matching_values,
    plain,
    select,
    series_parts,
)
from multiverse.tabular.lookup import table_fact
from multiverse.tabular.models import (
    RANKING_KINDS,
    Citation,
    ComputeQuery,
    Fact,
    FactRefusal,
)
from multiverse.tabular.profiling import Analysis

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Point:
    """One period's (or one category's) value."""

    key: object  # a period key, or a category value
    label: str
    value: float
    cells: int  # how many cells it combines
    decimals: int | None  # the source's precision; None for a computed mean


@dataclass(frozen=True)
class Values:
    """Points in order and the long rows behind them."""

    points: list[Point]
    combined: Combined
    how: str
    grain: str | None
    aggregated: bool  # some value stands for several cells (its sentence says how)
    trimmed: bool = False  # a first or last period held in part was left out (whole periods)

    def citation(self, analysis: Analysis, keys: list[object]) -> Citation:
        """The lines behind the points of `keys`."""
        used = self.combined.used
        return self.combined.citation(analysis.table.file, analysis.table.sheet,
                                      used["_key"].isin(keys))

    def between(self, start: str | None, end: str | None) -> list[Point]:
        """The points from the period `start` names to the one `end` names (both included)."""
        if self.grain is None:
            return list(self.points)
        low = _bound(start, self.grain, last=False)
        high = _bound(end, self.grain, last=True)
        return [p for p in self.points if _within(p, self.grain, low, high)]


def _bound(text: str | None, grain: str, *, last: bool) -> tuple[str, int] | None:
    """A period bound as (its grain, its key), or None for an open end."""
    if text is None or not text.strip():
        return None
    moment = parse_label(text)
    if moment is None:
        raise Unanswerable(f"{text!r} is not a period (a year such as 2001, 2001Q3, 2001-03)")
    at = "day" if moment.grain == "second" else moment.grain
    if RANK[at] > RANK[grain]:
        raise Unanswerable(f"{text!r} is finer than the {grain} the values are combined to")
    return at, key_of(moment, at)


def _within(point: Point, grain: str, low: tuple[str, int] | None,
            high: tuple[str, int] | None) -> bool:
    """Whether a point's period lies between two bounds."""
    key = int(point.key)  # type: ignore[call-overload]
    if low is not None and coarsen(key, grain, low[0]) < low[1]:
        return False
    return high is None or coarsen(key, grain, high[0]) <= high[1]


def per_period(analysis: Analysis, frame: pd.DataFrame, grain: str, how: str,
               parts: list[str], decimals: int, whole: bool = False) -> Values:
    """The values of each period at `grain`, in time order (with `whole`, a first or last
    period the data covers only in part is left out: six months of 1967 are no year)."""
    frame = frame[frame["_t"].astype(bool)].copy()
    native = frame.attrs.get("grain") or grain
    frame["_key"] = frame_times(frame, native).keys(grain)
    trimmed = False
    if whole and native in RANK and RANK[native] > RANK[grain]:
        kept = _whole_periods(frame, native)
        trimmed, frame = len(kept) < len(frame), kept
    combined = combine(frame, ["_key"], how, parts)
    groups = combined.groups.sort_values("_key")
    first = _first_used(combined)
    points = [_point(analysis, first, row, label_of(grain, int(row["_key"])), how, decimals)
              for row in groups.to_dict("records") if row["value"] == row["value"]]
    return Values(points, combined, how, grain, _several(frame), trimmed)


def _whole_periods(frame: pd.DataFrame, native: str) -> pd.DataFrame:
    """The rows without a first or last period holding fewer native periods than most do."""
    import pandas as pd

    sub = pd.Series(frame_times(frame, native).keys(native), index=frame.index)
    counts = sub.groupby(frame["_key"]).nunique()
    if len(counts) < 4:
        return frame
    full = counts.median()
    partial = [key for key in (counts.index[0], counts.index[-1]) if counts[key] < full]
    return frame[~frame["_key"].isin(partial)] if partial else frame


def per_category(analysis: Analysis, frame: pd.DataFrame, column: str, how: str,
                 parts: list[str], decimals: int) -> Values:
    """The values of each category (of `column`) over the rows given."""
    frame = frame.copy()
    frame["_key"] = frame[column].astype(str)
    combined = combine(frame, ["_key"], how, parts)
    first = _first_used(combined)
    points = [_point(analysis, first, row, str(row["_key"]), how, decimals)
              for row in combined.groups.to_dict("records") if row["value"] == row["value"]]
    return Values(points, combined, how, None, _several(frame))


def _several(frame: pd.DataFrame) -> bool:
    """Whether some key has more than one cell with a value (so its value combines them)."""
    filled = frame[frame["_value"].notna()]
    return bool(len(filled)) and int(filled.groupby("_key").size().max()) > 1


def _first_used(combined: Combined) -> dict[Any, tuple[str, int]]:
    """Each key's first used row (its source column and row), found in one pass: filtering
    the used rows once per point was quadratic in the periods of a long series."""
    used = combined.used.drop_duplicates("_key")
    return {key: (str(source), int(row)) for key, source, row
            in zip(used["_key"], used["_source"], used["_row"], strict=True)}


def _point(analysis: Analysis, first: dict[Any, tuple[str, int]], row: dict[Any, Any],
           label: str, how: str, decimals: int) -> Point:
    """One group's point, with the precision its number is printed at."""
    cells = int(row["cells"])
    value = float(row["value"])
    if cells == 1:
        _, cell = analysis.cell(*first[row["_key"]])
        places: int | None = cell.decimals if cell is not None else decimals
    elif how in ("sum", "last"):
        places = decimals
    elif how == "count":
        places = 0
    else:
        places = None
    return Point(row["_key"], label, value, cells, places)


def by_category(setup: Setup) -> Fact:
    """The largest, smallest or fastest-growing category of the setup's column."""
    if setup.query.kind == "fastest_growing":
        return _fastest(setup)
    frame, period = _in_period(setup)
    values = setup.categories(frame)
    if not values.points:
        raise Unanswerable(f"no category of {setup.column} has a value of {setup.query.measure}"
                           + (f" in {period}" if period else ""))
    largest = setup.query.kind == "largest"
    pick = (max if largest else min)(values.points, key=lambda p: p.value)
    return setup.fact(values, [pick.key], value=pick.value, period=period or "",
                      category=pick.label, decimals=pick.decimals, column=_column_name(setup),
                      among=len(values.points))


COMPARED = "columns"  # a fact's `column` when the measure's own columns were compared


def _among(analysis: Analysis, measures: list[str]) -> str:
    """What columns compared with one another are called together ("wounds, other or disease")."""
    labels = [column.label if (column := analysis.profile.column(m)) else m for m in measures]
    return ", ".join(labels)


def _column_name(setup: Setup) -> str | None:
    """The compared column as a reader knows it."""
    if setup.column == "_source":
        wide = setup.analysis.profile.wide
        return wide.name if wide and not setup.query.compared else COMPARED
    return setup.column


def _in_period(setup: Setup) -> tuple[pd.DataFrame, str | None]:
    """The rows of the period compared: the query's range when it spans several periods (each
    category's value over it, combined as the measure combines), else its end or start, else
    the latest."""
    if setup.grain is None:
        return setup.frame, None
    values = setup.periods()
    query = setup.query
    if query.start and query.end and query.start != query.end:
        points = values.between(query.start, query.end)
        if not points:
            raise Unanswerable(f"{query.measure!r} has no value between {query.start} and "
                               f"{query.end}")
        frame = setup.frame[setup.frame["_t"].astype(bool)]
        keys = frame_times(frame, frame.attrs.get("grain") or setup.grain).keys(setup.grain)
        import numpy as np

        kept = frame[np.isin(keys, np.array([p.key for p in points]))]
        return kept, f"{points[0].label}–{points[-1].label}"
    wanted = query.end or query.start
    points = values.between(wanted, wanted) if wanted else values.points[-1:]
    if not points:
        raise Unanswerable(f"{setup.query.measure!r} has no value in {wanted}")
    point = points[-1]
    frame = setup.frame[setup.frame["_t"].astype(bool)]
    keys = frame_times(frame, frame.attrs.get("grain") or setup.grain).keys(setup.grain)
    return frame[keys == point.key], point.label


def _fastest(setup: Setup) -> Fact:
    """The category whose value grew the most (in percent) between the same two periods: the
    first and last the query's range holds (a category without both is left out)."""
    assert setup.column is not None
    overall = setup.periods().between(setup.query.start, setup.query.end)
    if len(overall) < 2:
        raise Unanswerable(f"fastest_growing needs two periods of {setup.query.measure!r}")
    first, last = overall[0], overall[-1]
    growth = _growth(setup, first.key, last.key)
    if not growth:
        raise Unanswerable(f"no category of {setup.column} has positive values in both "
                           f"{first.label} and {last.label}")
    category = max(growth, key=lambda c: growth[c])
    values = setup.periods(setup.frame[setup.frame[setup.column] == category])
    start, end = (next(p for p in values.points if p.key == k) for k in (first.key, last.key))
    return setup.fact(values, [start.key, end.key], value=growth[category],
                      percent=growth[category], period=f"{start.label}–{end.label}",
                      category=category, start=start.label, end=end.label,
                      start_value=start.value, end_value=end.value, column=_column_name(setup),
                      decimals=None if start.decimals is None or end.decimals is None
                      else max(start.decimals, end.decimals), among=len(growth))


def _growth(setup: Setup, first: object, last: object) -> dict[str, float]:
    """Each category's growth in percent from one period to another (both combined at once)."""
    assert setup.column is not None and setup.grain is not None
    frame = setup.frame[setup.frame["_t"].astype(bool)].copy()
    frame["_key"] = frame_times(frame, frame.attrs.get("grain") or setup.grain).keys(setup.grain)
    frame = frame[frame["_key"].isin([first, last])]
    groups = combine(frame, ["_key", setup.column], setup.how, setup.parts).groups
    at = {(row["_key"], str(row[setup.column])): float(row["value"])
          for row in groups.to_dict("records") if row["value"] == row["value"]}
    return {category: (at[(last, category)] - start) / start * 100
            for (key, category), start in at.items()
            if key == first and start > 0 and (last, category) in at}


if TYPE_CHECKING:
    import pandas as pd



def compute(query: ComputeQuery, *, root: Path,
            descriptions: Sequence[str] = ()) -> Fact | FactRefusal:
    """A computed fact of a table's measure with its citation, or why it cannot be computed."""
    return compute_in(load(query.file, query.sheet, root, descriptions), query)


def compute_in(analysis: Analysis, query: ComputeQuery) -> Fact | FactRefusal:
    """A computed fact of an analysed table."""
    try:
        if query.kind in ("distinct", "columns"):
            return table_fact(analysis, query)
        setup = _setup(analysis, query)
        if query.kind in RANKING_KINDS:
            from multiverse.tabular.compute import by_category

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
    measures: list[str]
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
        return per_period(self.analysis, rows, self.grain, self.how, self.parts, self.decimals,
                          self.query.whole_periods)

    def categories(self, frame: pd.DataFrame) -> Values:
        """The measure's value per category of the compared column."""
        assert self.column is not None
        return per_category(self.analysis, frame, self.column, self.how, self.parts, self.decimals)

    def fact(self, values: Values, keys: list[object], **fields: Any) -> Fact:
        """A fact with the query's measure, label, unit, aggregation and citation."""
        coarser = values.grain is not None and values.grain != native_grain(
            self.analysis, self.measures)
        aggregated = values.aggregated or coarser
        return Fact(kind=self.query.kind, measure=self.query.measure, label=self.label,
                    unit=self.unit, category=fields.pop("category", self.value),
                    citation=values.citation(self.analysis, keys),
                    aggregation=self.how if aggregated else None, frequency=self.grain, **fields)


def _setup(analysis: Analysis, query: ComputeQuery) -> Setup:
    """The query checked against the table."""
    measures = resolve_measures(analysis, [query.measure, *query.compared], counting=False)
    if query.compared and (len(measures) < 2 or query.kind not in ("largest", "smallest")):
        raise Unanswerable("columns are compared for the largest or smallest only")
    wide = analysis.profile.wide
    filters = dict(query.filters)
    column, value = _category(analysis, query, measures)
    if value is not None and column is not None:
        filters[column] = [value]
        column = None
    if query.kind in RANKING_KINDS and column is None:
        column = _default_category(analysis, measures)
    if len(measures) > 1 and column != "_source" and not (
            analysis.wide_time and set(measures) <= set(analysis.wide_time.columns)):
        raise Unanswerable(f"{query.measure!r} names {len(measures)} columns; name one of them")
    frame = select(analysis, long_rows(analysis, measures), filters)
    grain = _grain(analysis, query, measures)
    how = query.aggregation or measure_aggregation(analysis, measures[0])
    parts = series_parts(analysis, (column,))
    if not (analysis.wide_time and set(measures) <= set(analysis.wide_time.columns)):
        parts.append("_source")
    source = analysis.profile.column(measures[0])
    # The group's label only for its own members ("Annual" beside Jan … Dec is itself).
    grouped = wide is not None and set(measures) <= set(wide.columns) and (
        wide.axis == "time" or len(measures) > 1)
    label = wide.label if grouped and wide else source.label if source else query.measure
    if query.compared and not grouped:
        label = _among(analysis, measures)
    unit = wide.unit if grouped and wide else source.unit if source else None
    decimals = max((analysis.numbers[m].decimals for m in measures if m in analysis.numbers),
                   default=0)
    kept = frame.attrs.get("kept", {})
    shown = ", ".join(v for values in kept.values() for v in values) or None
    return Setup(analysis, query, measures, frame, grain, how, parts, column, shown, label, unit,
                 decimals)


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


def _grain(analysis: Analysis, query: ComputeQuery, measures: list[str]) -> str | None:
    """The grain values are combined to: the query's, else the data's own."""
    native = native_grain(analysis, measures)
    if native is None:
        return None
    grain = query.frequency or native
    if RANK[grain] > RANK[native]:
        raise Unanswerable(f"{analysis.table.file} holds one value a {native} at most; it has no "
                           f"{grain} values")
    return grain


def _over_time(setup: Setup) -> Fact:
    """first, last, min, max, change, growth, cagr or mean of the measure's periods."""
    if setup.grain is None and setup.query.kind == "mean":
        return _mean_of_rows(setup)
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
        # a period left out for being held in part: the one said is not the data's first/last
        start = query.start or (points[0].label if values.trimmed else None)
        end = query.end or (points[-1].label if values.trimmed else None)
        return setup.fact(values, [pick.key], value=pick.value, period=pick.label,
                          decimals=pick.decimals, start=start, end=end)
    if kind == "mean":
        mean = sum(p.value for p in points) / len(points)
        period = points[0].label if len(points) == 1 else f"{points[0].label}–{points[-1].label}"
        single = points[0].decimals if len(points) == 1 else None
        return setup.fact(values, [p.key for p in points], value=mean, period=period,
                          decimals=single, start=points[0].label, end=points[-1].label)
    return _change(setup, values, points[0], points[-1])


def _mean_of_rows(setup: Setup) -> Fact:
    """The mean of a measure over the rows kept, in a table without time ("the average murder
    rate across the states"): each row's value counts once."""
    values = per_category(setup.analysis, setup.frame, "_row", "mean", setup.parts,
                          setup.decimals)
    if not values.points:
        raise Unanswerable(f"{setup.query.measure!r} has no value in the rows kept")
    mean = sum(p.value for p in values.points) / len(values.points)
    return setup.fact(values, [p.key for p in values.points], value=mean, period="")


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
