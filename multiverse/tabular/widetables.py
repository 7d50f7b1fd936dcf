"""Wide tables: one measure spread over columns named by periods or by categories.

Periods as columns: `1990, 2000, 2010`, `1959Q1 …`, or month names `JAN … DEC` beside a year
column in the rows. Categories as columns: three or more numeric columns whose names state no
kind of quantity and no description defines, all non-negative, most of the table's measures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from multiverse.tabular.descriptions import Definition
from multiverse.tabular.models import AxisFrequency, ColumnProfile, TimeAxis
from multiverse.tabular.timeaxis import Found, RowTimes
from multiverse.tabular.timelabels import (
    Moment,
    key_of,
    label_of,
    month_number,
    parse_label,
    quarter_number,
)
from multiverse.tabular.vocabulary import kind_of

_MIN_COLUMNS = 3
_MIN_CATEGORIES = 5  # fewer plain columns are as likely separate measures (invest, value, ...)


@dataclass(frozen=True)
class WideTime:
    """Columns that name periods: each column's moment, or its month within a row's year."""

    columns: list[str]
    axis: TimeAxis
    grain: str
    moments: dict[str, Moment]  # periods named in full by the columns
    months: dict[str, int]  # a month (or a quarter's first month) per column, with `years`
    years: RowTimes | None  # the rows' years, when columns name only months or quarters

    def moment(self, column: str, row: int) -> Moment | None:
        """The moment of one cell: its column's period, or its row's year and column's month."""
        if column in self.moments:
            return self.moments[column]
        if self.years is None or not bool(self.years.valid[row]):
            return None
        return Moment(self.grain, "parts", int(self.years.year[row]), self.months[column])


def time_columns(measures: Sequence[str], found: Found | None) -> WideTime | None:
    """The measure columns named by periods, when there are three or more of one grain."""
    parsed = {name: parse_label(name) for name in measures}
    grains = Counter(m.grain for m in parsed.values() if m is not None)
    if grains and grains.most_common(1)[0][1] >= _MIN_COLUMNS:
        grain = grains.most_common(1)[0][0]
        moments = {n: m for n, m in parsed.items() if m is not None and m.grain == grain}
        keys = sorted({key_of(m, grain) for m in moments.values()})
        frequency = grain if grain in ("year", "quarter", "month", "day") else "irregular"
        axis = TimeAxis(columns=list(moments), form=f"{grain} columns",
                        frequency=cast(AxisFrequency, frequency),
                        first=label_of(grain, keys[0]), last=label_of(grain, keys[-1]),
                        periods=len(keys))
        return WideTime(list(moments), axis, grain, moments, {}, None)
    if found is None or found.times.grain != "year":
        return None
    return _part_columns(measures, found)


def _part_columns(measures: Sequence[str], found: Found) -> WideTime | None:
    """Month or quarter columns (`JAN … DEC`, `Q1 … Q4`) beside a year column in the rows."""
    named = [n for n in measures if not n.strip().isdigit()]
    readers: list[tuple[str, Callable[[str], int | None], int]] = [
        ("month", month_number, 1), ("quarter", quarter_number, 3)]
    for grain, reader, months in readers:
        # A column's month: the month itself, or the first month of its quarter.
        parts = {n: months * k - (months - 1) for n in named if (k := reader(n)) is not None}
        if len(parts) < _MIN_COLUMNS:
            continue
        years = found.times.year[found.times.valid]
        if not len(years):
            return None
        first = key_of(Moment(grain, "", int(years.min()), min(parts.values())), grain)
        last = key_of(Moment(grain, "", int(years.max()), max(parts.values())), grain)
        axis = TimeAxis(columns=[*found.axis.columns, *parts], form=f"year+{grain} columns",
                        frequency=cast(AxisFrequency, grain), first=label_of(grain, first),
                        last=label_of(grain, last),
                        periods=len(set(years.tolist())) * len(parts))
        return WideTime(list(parts), axis, grain, {}, parts, found.times)
    return None


def category_group(measures: Sequence[ColumnProfile], has_axis: bool,
                   definitions: dict[str, Definition]) -> list[str]:
    """Measure columns that read as categories of one measure (one column per country)."""
    if not has_axis:
        return []
    plain = [c.name for c in measures
             if kind_of(c.name) is None and c.name not in definitions and c.unit is None
             and c.minimum is not None and c.minimum >= 0]
    if len(plain) < _MIN_CATEGORIES or 3 * len(plain) < 2 * len(measures):
        return []
    return plain
