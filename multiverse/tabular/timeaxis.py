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

from multiverse.tabular.models import AxisFrequency, TimeAxis
from multiverse.tabular.timelabels import (
    RANK,
    YEARS,
    Moment,
    key_of,
    label_of,
    month_number,
    parse_label,
    quarter_number,
)
from multiverse.tabular.vocabulary import name_tokens, says_date

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
        if grain == "year":
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


def _moments(cells: pd.Series, read: Callable[[str], Moment | None]) -> list[Moment | None]:
    """`read` applied once per distinct cell (a time column repeats its labels)."""
    import pandas as pd

    codes, uniques = pd.factorize(cells)
    parsed = [read(str(value)) for value in uniques]
    return [parsed[code] if code >= 0 else None for code in codes]


def row_times(moments: Sequence[Moment | None], grain: str) -> RowTimes:
    """Arrays of the rows' moments (an unread row holds 1970-01-01 and is not valid)."""
    import numpy as np

    blank = Moment("year", "", 1970)
    filled = [m or blank for m in moments]
    return RowTimes(
        grain,
        np.array([m is not None for m in moments], dtype=bool),
        np.array([m.year for m in filled], dtype=np.int64),
        np.array([m.month for m in filled], dtype=np.int64),
        np.array([m.day for m in filled], dtype=np.int64),
        np.array([m.second for m in filled], dtype=np.int64),
    )


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


def detect(cells: dict[str, pd.Series], numbers: dict[str, pd.Series],
           excluded: set[str]) -> Found | None:
    """The time axis of a table: the finest form its columns show, or None."""
    found: list[Found] = []
    for name, values in numbers.items():
        if name in excluded or not _integer_years(values):
            continue
        measured = bool(re.search(r"\d", name))  # `2017`, `var1`: a year column is not numbered
        if _named(name, _YEAR_NAMES) or (not measured and _rising(values) and
                                         name_tokens(name)[-1:] != ["count"]):
            found.append(_with_parts(name, cells, values, excluded))
    for name, column in cells.items():
        if name in excluded or (name in numbers and not says_date(name)):
            continue
        label = _label_column(name, column)
        if label is not None:
            found.append(label)
    if not found:
        return None
    return max(found, key=lambda f: RANK[f.times.grain])  # the finest; the first on a tie


def _with_parts(year: str, cells: dict[str, pd.Series], values: pd.Series,
                excluded: set[str]) -> Found:
    """A year column with its quarter or month (and day) columns when the table has them."""
    parts = {part: next((n for n in cells if n not in excluded and n != year and _named(n, words)
                         and _all_read(cells[n], reader)), None)
             for part, words, reader in (("quarter", _QUARTER_NAMES, quarter_number),
                                         ("month", _MONTH_NAMES, month_number),
                                         ("day", _DAY_NAMES, _day_of_month))}
    years = [None if v != v else int(v) for v in values]  # NaN is not equal to itself
    quarter, month, day = parts["quarter"], parts["month"], parts["day"]
    if quarter:
        q = [quarter_number(str(c)) for c in cells[quarter]]
        moments = [Moment("quarter", "year+quarter", y, 3 * n - 2) if y and n else None
                   for y, n in zip(years, q, strict=True)]
        return _found([year, quarter], "year+quarter", moments, "quarter")
    if month:
        m = [month_number(str(c)) for c in cells[month]]
        if day:
            d = [_day_of_month(str(c)) for c in cells[day]]
            moments = [_safe_day(y, n, e) for y, n, e in zip(years, m, d, strict=True)]
            return _found([year, month, day], "year+month+day", moments, "day")
        moments = [Moment("month", "year+month", y, n) if y and n else None
                   for y, n in zip(years, m, strict=True)]
        return _found([year, month], "year+month", moments, "month")
    moments = [Moment("year", "year", y) if y else None for y in years]
    return _found([year], "year", moments, "year")


def _day_of_month(text: str) -> int | None:
    """A day of the month written as a number (`5`, `05`, `5일`)."""
    cell = text.strip().removesuffix("일")
    return int(cell) if cell.isdigit() and 1 <= int(cell) <= 31 else None


def _safe_day(year: int | None, month: int | None, day: int | None) -> Moment | None:
    """The moment of a year, month and day, or None when they name no real day."""
    if not (year and month and day):
        return None
    return parse_label(f"{year:04d}-{month:02d}-{day:02d}")


def _all_read(column: pd.Series, reader: Callable[[str], int | None]) -> bool:
    """Whether every filled cell of a column reads with `reader`."""
    filled = [str(c) for c in column.unique() if str(c).strip()]
    return bool(filled) and all(reader(c) is not None for c in filled)


def _label_column(name: str, column: pd.Series) -> Found | None:
    """A column of time labels, when nearly all its filled cells read as one kind of moment."""
    texts = column.astype(str).str.strip()
    filled = texts[texts != ""]
    if filled.nunique() < 2:
        return None
    distinct = [str(v) for v in filled.unique()]
    numeric = [p for p in distinct if re.fullmatch(r"\d{1,2}[/.-]\d{1,2}[/.-]\d{4}.*", p)]
    dayfirst = any(int(re.split(r"[/.-]", p)[0]) > 12 for p in numeric) or None
    compact = says_date(name)

    def read(text: str) -> Moment | None:
        return parse_label(text, dayfirst=dayfirst, compact=compact, year=_named(name, _YEAR_NAMES)
                           or compact)

    moments = _moments(texts, read)
    kinds = Counter(m.grain for m in moments if m is not None)
    if not kinds:
        return None
    grain = kinds.most_common(1)[0][0]
    kept = [m if m is not None and m.grain == grain else None for m in moments]
    if sum(m is not None for m in kept) < _PARSED_SHARE * len(filled):
        return None
    form = Counter(m.form for m in kept if m is not None).most_common(1)[0][0]
    return _found([name], _form_name(form, grain), kept, grain)


def _form_name(form: str, grain: str) -> str:
    """The name a TimeAxis gives the form of a label column."""
    if form == "compact":
        return "yyyymm" if grain == "month" else "yyyymmdd"
    if form == "date" and grain == "second":
        return "datetime"
    if form == "quarter":
        return "quarter label"
    return form


def _found(columns: list[str], form: str, moments: list[Moment | None], grain: str) -> Found:
    """The axis of some moments: the grain their spacing shows, their first and last period."""
    import numpy as np

    times = row_times(moments, grain)
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


def time_labels(times: RowTimes, grain: str | None = None) -> list[str]:
    """Each row's period label at `grain` ('' where the row's time was not read)."""
    grain = grain or times.grain
    keys = times.keys(grain)
    cache: dict[int, str] = {}
    labels: list[str] = []
    for key, ok in zip(keys.tolist(), times.valid.tolist(), strict=True):
        if not ok:
            labels.append("")
            continue
        if key not in cache:
            cache[key] = label_of(grain, key)
        labels.append(cache[key])
    return labels


__all__ = ["Found", "RowTimes", "detect", "key_of", "row_times", "time_labels"]
