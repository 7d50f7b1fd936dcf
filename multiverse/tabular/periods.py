"""A measure's values per period (and per category), combined by its aggregation, with the lines
each value comes from: what computed facts are made of."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from multiverse.tabular.aggregate import Combined, combine
from multiverse.tabular.dataset import Unanswerable, frame_times
from multiverse.tabular.models import Citation
from multiverse.tabular.profiling import Analysis
from multiverse.tabular.timelabels import RANK, coarsen, key_of, label_of, parse_label

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
               parts: list[str], decimals: int) -> Values:
    """The values of each period at `grain`, in time order."""
    frame = frame[frame["_t"].astype(bool)].copy()
    frame["_key"] = frame_times(frame, frame.attrs.get("grain") or grain).keys(grain)
    combined = combine(frame, ["_key"], how, parts)
    groups = combined.groups.sort_values("_key")
    points = [_point(analysis, combined, row, label_of(grain, int(row["_key"])), how, decimals)
              for row in groups.to_dict("records") if row["value"] == row["value"]]
    return Values(points, combined, how, grain, _several(frame))


def per_category(analysis: Analysis, frame: pd.DataFrame, column: str, how: str,
                 parts: list[str], decimals: int) -> Values:
    """The values of each category (of `column`) over the rows given."""
    frame = frame.copy()
    frame["_key"] = frame[column].astype(str)
    combined = combine(frame, ["_key"], how, parts)
    points = [_point(analysis, combined, row, str(row["_key"]), how, decimals)
              for row in combined.groups.to_dict("records") if row["value"] == row["value"]]
    return Values(points, combined, how, None, _several(frame))


def _several(frame: pd.DataFrame) -> bool:
    """Whether some key has more than one cell with a value (so its value combines them)."""
    filled = frame[frame["_value"].notna()]
    return bool(len(filled)) and int(filled.groupby("_key").size().max()) > 1


def _point(analysis: Analysis, combined: Combined, row: dict[Any, Any], label: str, how: str,
           decimals: int) -> Point:
    """One group's point, with the precision its number is printed at."""
    cells = int(row["cells"])
    value = float(row["value"])
    if cells == 1:
        used = combined.used[combined.used["_key"] == row["_key"]].iloc[0]
        _, cell = analysis.cell(str(used["_source"]), int(used["_row"]))
        places: int | None = cell.decimals if cell is not None else decimals
    elif how in ("sum", "last"):
        places = decimals
    elif how == "count":
        places = 0
    else:
        places = None
    return Point(row["_key"], label, value, cells, places)
