"""Which columns of a table tell the time, in which form, at which grain, and each row's period.

The forms: an integer year column; year + quarter; year + month (+ day); one label column
(`1959Q1`, `2001-03`, ISO dates with or without a clock, `Jan 2000`, `3/4/2001`, `YYYYMM` when
the name says so). The frequency comes from the spacing of the periods; dates spaced a month,
a quarter or a year apart are keyed at that grain, so yearly `2001-01-01` rows read as `2001`.

"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from multiverse.tabular.cells import (
    RANK,
    YEARS,
    Moment,
    Numbers,
    key_of,
    label_of,
    month_number,
    parse_label,
    quarter_number,
)
from multiverse.tabular.columns import Definition, kind_of, name_tokens, says_date
from multiverse.tabular.models import AxisFrequency, ColumnProfile, TimeAxis

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

_PARSED_SHARE = 0.95  # a label column: at least this share of its filled cells read as time
_YEAR_NAMES = {"year", "years", "yr", "yyyy", "연도", "년", "년도", "해", "fy", "fiscal_year"}
_QUARTER_NAMES = {"quarter", "qtr", "q", "분기"}
_MONTH_NAMES = {"month", "mon", "mo", "mth", "월"}
_DAY_NAMES = {"day", "dd", "일"}


@dataclass(frozen=True)
class RowTimes:
    """Each row's moment (year, month, day, second of day) and the grain they are keyed at."""

    grain: str
    valid: np.ndarray  # rows whose time was read
    year: np.ndarray
    month: np.ndarray
    day: np.ndarray
    second: np.ndarray

    def keys(self, grain: str | None = None) -> np.ndarray:
        """Each row's period key at `grain` (default: the data's own grain)."""
        import numpy as np

        grain = grain or self.grain
        if grain == "decade":
            keys = self.year // 10
        elif grain == "year":
            keys = self.year.copy()
        elif grain == "quarter":
            keys = self.year * 4 + (self.month - 1) // 3
        elif grain == "month":
            keys = self.year * 12 + self.month - 1
        else:
            months = ((self.year - 1970) * 12 + self.month - 1).astype("datetime64[M]")
            days = (months.astype("datetime64[D]") + (self.day - 1)).astype(np.int64)
            keys = (days * 24 + self.second // 3600 if grain == "hour" else
                    days * 86_400 + self.second if grain == "second" else days)
        return np.asarray(keys, dtype=np.int64)


@dataclass(frozen=True)
class Found:
    """A time axis and the rows' times it reads."""

    axis: TimeAxis
    times: RowTimes


def row_times(grain: str, valid: np.ndarray, year: np.ndarray, month: np.ndarray | None = None,
              day: np.ndarray | None = None, second: np.ndarray | None = None) -> RowTimes:
    """Rows' moments from arrays (a row whose time was not read holds 1970-01-01)."""
    import numpy as np

    def clean(values: np.ndarray | None, default: int) -> np.ndarray:
        """Integer values where valid, `default` elsewhere."""
        if values is None:
            return np.full(len(valid), default, dtype=np.int64)
        return np.where(valid, values, default).astype(np.int64)

    return RowTimes(grain, valid, clean(year, 1970), clean(month, 1), clean(day, 1),
                    clean(second, 0))


def _integer_years(values: pd.Series) -> bool:
    """Whether every filled value of a numeric column is a whole year number."""
    filled = values.dropna()
    return bool(len(filled) and (filled % 1 == 0).all()
                and filled.between(YEARS[0], YEARS[1]).all())


def _rising(values: pd.Series) -> bool:
    """Whether a column runs through its values in order (a few restarts allowed: long tables)."""
    steps = values.dropna().diff().dropna()
    up, down = int((steps > 0).sum()), int((steps < 0).sum())
    if up + down == 0 or values.nunique() < 3:
        return False
    return min(up, down) <= max(1, (up + down) // 5)


def _named(name: str, words: set[str]) -> bool:
    """Whether a column's name is (or ends in) one of `words`."""
    tokens = name_tokens(name)
    return bool(tokens) and (tokens[-1] in words or name.strip().lower() in words)


# A calendar part's name and the whole numbers it takes: `month` 1–12, `day_of_year` 1–366.
_PART_RANGES: list[tuple[set[str], int, int]] = [
    (_YEAR_NAMES, YEARS[0], YEARS[1]), (_QUARTER_NAMES, 1, 4), (_MONTH_NAMES, 1, 12),
    ({"week", "wk", "weekofyear", "주"}, 0, 53), ({"wday", "weekday", "dow", "요일"}, 0, 7),
    ({"hour", "hr", "시"}, 0, 23), (_DAY_NAMES | {"mday", "dom", "dayofmonth"}, 1, 31),
    ({"yday", "doy", "dayofyear"}, 1, 366),
]


def calendar_parts(readings: dict[str, Numbers], axis: Found | None) -> set[str]:
    """Numeric columns that restate a part of the time axis (`year`, `month`, `day_of_year`
    beside a date column): labels of the rows' time, never measures to sum or chart."""
    if axis is None:
        return set()
    parts = set()
    for name, reading in readings.items():
        if name in axis.axis.columns or not reading.numeric:
            continue
        tokens = name_tokens(name)
        joined = "".join(tokens)
        values = reading.values.dropna()
        for words, low, high in _PART_RANGES:
            if (joined in words or (tokens and tokens[-1] in words and len(tokens) <= 3)) and len(
                values
            ) and (values % 1 == 0).all() and values.between(low, high).all():
                parts.add(name)
                break
    return parts


def detect(readings: dict[str, Numbers], excluded: set[str]) -> Found | None:
    """The time axis of a table: the finest form its columns show, or None."""
    found: list[Found] = []
    for name, reading in readings.items():
        if name in excluded or not reading.numeric or not _integer_years(reading.values):
            continue
        measured = bool(re.search(r"\d", name))  # `2017`, `var1`: a year column is not numbered
        if _named(name, _YEAR_NAMES) or (not measured and _rising(reading.values) and
                                         name_tokens(name)[-1:] != ["count"]):
            found.append(_with_parts(name, readings, excluded))
    for name, reading in readings.items():
        if name in excluded or (reading.numeric and not says_date(name)):
            continue
        label = _label_column(name, reading)
        if label is not None:
            found.append(label)
    if not found:
        return None
    return max(found, key=lambda f: RANK[f.times.grain])  # the finest; the first on a tie


def _part(reading: Numbers, reader: Callable[[str], int | None]) -> np.ndarray:
    """Per row, the number `reader` reads from its cell (0 where it reads none)."""
    import numpy as np

    per_text = np.array([reader(text) or 0 for text in reading.texts], dtype=np.int64)
    return per_text[reading.codes] if len(per_text) else np.zeros(len(reading.codes), np.int64)


def _with_parts(year: str, readings: dict[str, Numbers], excluded: set[str]) -> Found:
    """A year column with its quarter or month (and day) columns when the table has them."""
    import numpy as np

    parts = {part: next((n for n, r in readings.items() if n not in excluded and n != year
                         and _named(n, words) and _all_read(r, reader)), None)
             for part, words, reader in (("quarter", _QUARTER_NAMES, quarter_number),
                                         ("month", _MONTH_NAMES, month_number),
                                         ("day", _DAY_NAMES, _day_of_month))}
    values = readings[year].values.to_numpy(dtype=float)
    valid = ~np.isnan(values)
    years = np.where(valid, values, 1970)
    quarter, month, day = parts["quarter"], parts["month"], parts["day"]
    if quarter:
        q = _part(readings[quarter], quarter_number)
        times = row_times("quarter", valid & (q > 0), years, 3 * q - 2)
        return _found([year, quarter], "year+quarter", times)
    if month:
        m = _part(readings[month], month_number)
        valid &= m > 0
        if day:
            d = _part(readings[day], _day_of_month)
            valid &= (d > 0) & (d <= _days_in_month(years, m))
            times = row_times("day", valid, years, m, d)
            return _found([year, month, day], "year+month+day", times)
        return _found([year, month], "year+month", row_times("month", valid, years, m))
    return _found([year], "year", row_times("year", valid, years))


def _days_in_month(years: np.ndarray, months: np.ndarray) -> np.ndarray:
    """Per row, the days its year's month has."""
    import numpy as np

    first = ((years.astype(np.int64) - 1970) * 12 + np.clip(months, 1, 12) - 1).astype(
        "datetime64[M]")
    return np.asarray(((first + 1).astype("datetime64[D]") - first.astype("datetime64[D]"))
                      .astype(np.int64))


def _day_of_month(text: str) -> int | None:
    """A day of the month written as a number (`5`, `05`, `5일`)."""
    cell = text.strip().removesuffix("일")
    return int(cell) if cell.isdigit() and 1 <= int(cell) <= 31 else None


def _all_read(reading: Numbers, reader: Callable[[str], int | None]) -> bool:
    """Whether every filled cell of a column reads with `reader`."""
    filled = reading.distinct
    return bool(filled) and all(reader(c) is not None for c in filled)


def _label_column(name: str, reading: Numbers) -> Found | None:
    """A column of time labels, when nearly all its filled cells read as one kind of moment."""
    import numpy as np

    distinct = reading.distinct
    if len(distinct) < 2:
        return None
    numeric = [p for p in distinct if re.fullmatch(r"\d{1,2}[/.-]\d{1,2}[/.-]\d{4}.*", p)]
    dayfirst = any(int(re.split(r"[/.-]", p)[0]) > 12 for p in numeric) or None
    compact = says_date(name)
    years = _named(name, _YEAR_NAMES) or compact
    moments = [None if blank else parse_label(text, dayfirst=dayfirst, compact=compact,
                                              year=years)
               for text, blank in zip(reading.texts, reading.blank.tolist(), strict=True)]
    counts = np.bincount(reading.codes, minlength=len(moments))
    kinds: Counter[str] = Counter()
    for moment, count in zip(moments, counts.tolist(), strict=True):
        if moment is not None:
            kinds[moment.grain] += count
    if not kinds:
        return None
    grain, share = kinds.most_common(1)[0]
    if share < _PARSED_SHARE * reading.filled:
        return None
    kept = [m if m is not None and m.grain == grain else None for m in moments]
    forms = Counter(m.form for m in kept if m is not None)
    per_text = row_times(grain, np.array([m is not None for m in kept], dtype=bool),
                         *(np.array([getattr(m, f) if m else 0 for m in kept], dtype=np.int64)
                           for f in ("year", "month", "day", "second")))
    codes = reading.codes
    times = RowTimes(grain, per_text.valid[codes], per_text.year[codes],
                     per_text.month[codes], per_text.day[codes], per_text.second[codes])
    return _found([name], _form_name(forms.most_common(1)[0][0], grain), times)


def _form_name(form: str, grain: str) -> str:
    """The name a TimeAxis gives the form of a label column."""
    if form == "compact":
        return "yyyymm" if grain == "month" else "yyyymmdd"
    if form == "date" and grain == "second":
        return "datetime"
    if form == "quarter":
        return "quarter label"
    return form


def _found(columns: list[str], form: str, times: RowTimes) -> Found:
    """The axis of the rows' moments: the grain their spacing shows, their first and last."""
    import numpy as np

    frequency, grain = _spacing(times)
    times = RowTimes(grain, times.valid, times.year, times.month, times.day, times.second)
    keys = np.unique(times.keys()[times.valid])
    first, last = (label_of(grain, int(keys[0])), label_of(grain, int(keys[-1]))) if len(
        keys) else ("", "")
    axis = TimeAxis(columns=columns, form=form, frequency=cast(AxisFrequency, frequency),
                    first=first, last=last, periods=len(keys))
    return Found(axis, times)


def _spacing(times: RowTimes) -> tuple[str, str]:
    """The frequency the periods' spacing shows and the grain to key them at."""
    import numpy as np

    if times.grain in ("year", "quarter", "month"):
        return times.grain, times.grain
    fine = times.grain == "second"
    unit = 86_400 if fine else 1
    points = np.unique(times.keys("second" if fine else "day")[times.valid])
    if len(points) < 2:
        return ("day", "day") if not fine else ("irregular", "second")
    step = float(np.median(np.diff(points))) / unit  # in days
    for frequency, low, high in (("year", 364, 366), ("quarter", 89, 92), ("month", 28, 31)):
        if low <= step <= high and _lossless(times, frequency, len(points)):
            return frequency, frequency
    if fine:
        if step * 24 == 1 and _lossless(times, "hour", len(points)):
            return "hour", "hour"
        if step == 1 and _lossless(times, "day", len(points)):
            return "day", "day"
        return "irregular", "second"
    if step == 1:
        return "day", "day"
    return ("week" if step == 7 else "irregular"), "day"


def _lossless(times: RowTimes, grain: str, points: int) -> bool:
    """Whether keying at `grain` keeps every distinct moment apart."""
    import numpy as np

    return len(np.unique(times.keys(grain)[times.valid])) == points


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
