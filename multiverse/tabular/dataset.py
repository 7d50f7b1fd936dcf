"""Long rows combined per group: a sum, a mean, a count, or each period's last value.

The last value of a period is taken per sub-series (each combination of the label columns not
grouped by, such as each country) at its latest moment, and the sub-series are then added: the
population of a continent in a year is the sum of its countries' last values of that year.

"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from multiverse.tabular.cells import RANK, key_of, parse_label
from multiverse.tabular.models import Citation
from multiverse.tabular.profiling import Analysis, analysed
from multiverse.tabular.timeaxis import RowTimes

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Combined:
    """One value per group, with the lines each value was computed from."""

    groups: pd.DataFrame  # keys, value, first/last line, cells (one row per group)
    used: pd.DataFrame  # the long rows the values were computed from

    def citation(self, file: str, sheet: str | None, where: pd.Series | None = None) -> Citation:
        """Where the values come from (those of the used rows `where` keeps, if given)."""
        rows = self.used if where is None else self.used[where]
        used = sorted(set(rows["_line"].tolist()))
        if not used:
            return Citation(file=file, sheet=sheet, first=0, last=0, rows=0)
        return Citation(file=file, sheet=sheet, first=used[0], last=used[-1], rows=len(used))


def combine(frame: pd.DataFrame, keys: list[str], how: str, parts: Sequence[str]) -> Combined:
    """The value of each group of `keys`: `sum`, `mean`, `count` of its cells, or `last`."""
    import pandas as pd

    used = frame[frame["_value"].notna()]
    if how == "last":
        within = [*keys, *(p for p in parts if p not in keys)]
        ordered = used.sort_values(["_order", "_row"], kind="stable")
        used = ordered.groupby(within, sort=False, dropna=False).tail(1)
    if used.empty:
        empty = pd.DataFrame(columns=[*keys, "value", "first", "last", "cells"])
        return Combined(empty, used)
    grouped = used.groupby(keys, sort=False, dropna=False)
    values = grouped["_value"]
    if how in ("sum", "last"):
        value = values.sum(min_count=1)
    elif how == "count":
        value = values.count().astype(float)
    else:
        value = values.mean()
    lines = grouped["_line"].agg(first="min", last="max", cells="count")
    groups = lines.assign(value=value).reset_index()
    return Combined(groups, used)


if TYPE_CHECKING:
    import pandas as pd

TIME = "time"
_TIME_ALIASES = {"time", "date", "period", "when", "year", "quarter", "month", "week", "day",
                 "시간", "기간", "날짜", "연도", "년", "분기", "월", "일자"}


class Unanswerable(Exception):
    """A query the table cannot answer, with the reason in plain words."""

    def __init__(self, reason: str, *, column: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.column = column


def load(file: str, sheet: str | None, root: Path, descriptions: Sequence[str]) -> Analysis:
    """Read and analyse a table of the home."""
    return analysed(Path(file), root=root, sheet=sheet, descriptions=descriptions)


def plain(text: str) -> str:
    """A name compared loosely: case, spaces and underscores ignored."""
    return re.sub(r"[\s_]+", " ", text).strip().lower()


def find_column(analysis: Analysis, name: str) -> str | None:
    """A column by its name, its readable label, or loosely (case, `_` for space)."""
    profile = analysis.profile
    column = profile.column(name)
    if column is not None:
        return column.name
    wanted = plain(name)
    for candidate in profile.columns:
        if wanted in (plain(candidate.name), plain(candidate.label)):
            return candidate.name
    return None


def is_time(analysis: Analysis, name: str) -> bool:
    """Whether a dimension or selector names the time axis ("time", "date" or a time column)."""
    axis = analysis.profile.time
    if axis is None:
        return False
    column = analysis.profile.column(name)
    if column is not None and column.role != "time":
        return False  # a column of its own called `month` is not the time axis
    return plain(name) in _TIME_ALIASES or any(plain(c) == plain(name) for c in axis.columns
                                                 if analysis.wide_time is None
                                                 or c not in analysis.wide_time.columns)


def words(text: str) -> set[str]:
    """A text's words, lowercased, plural `s` dropped: `Renewables` → {renewable}."""
    return {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
            for w in re.findall(r"[^\W_]+", text.lower())}


def matching_values(wanted: str, values: Sequence[str]) -> list[str]:
    """The values a person's word names: equal ignoring case, else holding all its words."""
    exact = [v for v in values if v.strip().lower() == wanted.strip().lower()]
    if exact:
        return exact
    asked = words(wanted)
    return [v for v in values if asked and asked <= words(v)]


def label_columns(analysis: Analysis) -> list[str]:
    """The columns that name rows: categories, identifiers and texts."""
    return [c.name for c in analysis.profile.columns
            if c.role in ("category", "identifier", "text")]


def series_parts(analysis: Analysis, taken: Collection[str | None]) -> list[str]:
    """The label columns that split a measure into series whose values combine by adding
    (the sum of each country's last population): not texts, not the columns `taken`, not a
    column restating the time (`month` beside a date), and not a label unique to each row of
    a table whose rows are its periods (a row number is no series)."""
    profile = analysis.profile
    time = profile.time
    restated = set(time.restated) if time is not None else set()
    row_timed = time is not None and analysis.wide_time is None
    parts = []
    for name in label_columns(analysis):
        column = profile.column(name)
        if name in taken or name in restated or column is None or column.role == "text":
            continue
        if row_timed and column.distinct >= profile.rows > 1:
            continue
        parts.append(name)
    return parts


def long_rows(analysis: Analysis, measures: Sequence[str]) -> pd.DataFrame:
    """One row per cell of `measures`, with its row, line, source column, number and moment."""
    import numpy as np
    import pandas as pd

    table = analysis.table
    count = table.rows
    # Object columns: pandas 3 would otherwise make them its (here slower) string dtype.
    labels = {name: pd.Series(table.cells(name).to_numpy(dtype=object), dtype=object)
              for name in label_columns(analysis)}
    pieces = []
    for measure in measures:
        times = _cell_times(analysis, measure)
        if measure in analysis.numbers:
            values = analysis.numbers[measure].values.to_numpy(dtype=float)
        else:  # a column of labels is only counted: each filled cell counts one
            values = np.where(analysis.readings[measure].mask, 1.0, np.nan)
        piece = pd.DataFrame({
            "_row": np.arange(count), "_line": np.asarray(table._lines, dtype=np.int64),
            "_source": pd.Series(np.full(count, measure, dtype=object), dtype=object),
            "_value": values,
            "_t": times.valid, "_y": times.year, "_m": times.month, "_d": times.day,
            "_s": times.second, **labels,
        })
        pieces.append(piece)
    frame = pd.concat(pieces, ignore_index=True) if pieces else pd.DataFrame()
    grain = _grain(analysis)
    frame.attrs["grain"] = grain
    if grain is not None and len(frame):
        # The finest order of the cells in time: what "the last value of a period" follows.
        frame["_order"] = frame_times(frame, grain).keys()
    else:
        frame["_order"] = frame["_row"] if len(frame) else []
    return frame


def _grain(analysis: Analysis) -> str | None:
    """The grain the table's periods are keyed at."""
    if analysis.wide_time is not None:
        return analysis.wide_time.grain
    return analysis.times.grain if analysis.times is not None else None


def _cell_times(analysis: Analysis, measure: str) -> RowTimes:
    """The moment of each cell of one measure column."""
    import numpy as np

    count = analysis.table.rows
    wide = analysis.wide_time
    if wide is not None and measure in wide.columns:
        if measure in wide.moments:
            moment = wide.moments[measure]
            full = [np.full(count, v, dtype=np.int64)
                    for v in (moment.year, moment.month, moment.day, moment.second)]
            return RowTimes(wide.grain, np.ones(count, dtype=bool), *full)
        years = wide.years
        assert years is not None  # month columns always come with the rows' years
        month = np.full(count, wide.months[measure], dtype=np.int64)
        return RowTimes(wide.grain, years.valid, years.year, month, np.ones(count, dtype=np.int64),
                        np.zeros(count, dtype=np.int64))
    if analysis.times is not None:
        return analysis.times
    zeros = np.zeros(count, dtype=np.int64)
    return RowTimes("year", np.zeros(count, dtype=bool), zeros, zeros + 1, zeros + 1, zeros)


def frame_times(frame: pd.DataFrame, grain: str) -> RowTimes:
    """The moments of long rows."""
    return RowTimes(grain, frame["_t"].to_numpy(dtype=bool), frame["_y"].to_numpy(),
                    frame["_m"].to_numpy(), frame["_d"].to_numpy(), frame["_s"].to_numpy())


def time_range(text: str) -> tuple[str, str] | None:
    """The ends of a period range written `2001–2010`, `2001..2010` or `2001 to 2010`."""
    parts = re.split(r"\s*(?:–|—|\.\.|\bto\b|~|부터|-(?=\s*\d{4}(?:\D|$)))\s*", text.strip(),
                     maxsplit=1)
    if len(parts) == 2 and all(parse_label(p) for p in parts):
        return parts[0], parts[1]
    return None


def select(analysis: Analysis, frame: pd.DataFrame, filters: dict[str, list[str]]) -> pd.DataFrame:
    """The long rows the filters keep (category values matched ignoring case and by word)."""
    wide = analysis.profile.wide
    chosen: dict[str, list[str]] = {}  # each filter with the values it matched, as written
    for key, wanted in filters.items():
        if not wanted:
            continue
        if is_time(analysis, key):
            frame = frame[_in_periods(analysis, frame, key, wanted)]
            chosen[key] = list(wanted)
            continue
        if wide is not None and wide.axis == "category" and plain(key) == plain(wide.name):
            column = "_source"
        else:
            found = find_column(analysis, key)
            if found is None or found not in frame.columns:
                names = ", ".join(label_columns(analysis)) or "none"
                raise Unanswerable(f"{analysis.table.file} has no category column {key!r} to "
                                   f"filter by (its category columns: {names})", column=key)
            column = found
        present = [str(v) for v in frame[column].unique()]
        kept = [v for w in wanted for v in matching_values(w, present)]
        # one value asked and absent is refused, never left out of a sum of the others
        missing = [w for w in wanted if not matching_values(w, present)]
        if missing:
            shown = ", ".join(present[:20]) + (", …" if len(present) > 20 else "")
            raise Unanswerable(f"no row of {analysis.table.file} has {column} = "
                               f"{' or '.join(map(repr, missing))}; its values: {shown}",
                               column=key)
        frame = frame[frame[column].isin(kept)]
        chosen[key] = list(dict.fromkeys(kept))
    frame.attrs["kept"] = chosen
    return frame


def _in_periods(analysis: Analysis, frame: pd.DataFrame, key: str, wanted: list[str]) -> pd.Series:
    """Long rows within the periods a time filter names (labels or ranges)."""
    import pandas as pd

    grain = frame.attrs.get("grain") or "year"
    keep = pd.Series(False, index=frame.index)
    times = frame_times(frame, grain)
    for text in wanted:
        ends = time_range(text) or (text, text)
        first, last = parse_label(ends[0]), parse_label(ends[1])
        if first is None or last is None:
            example = analysis.profile.time.first if analysis.profile.time else "2001"
            raise Unanswerable(f"{text!r} is not a period {key} can hold (e.g. {example})",
                               column=key)
        at = first.grain if first.grain in ("year", "quarter", "month") else "day"
        if RANK[at] > RANK[grain]:
            raise Unanswerable(f"{text!r} names a {at}, but {analysis.table.file} holds one value "
                               f"a {grain} at most", column=key)
        keys = times.keys(at)
        keep |= (keys >= key_of(first, at)) & (keys <= key_of(last, at)) & times.valid
    return keep
