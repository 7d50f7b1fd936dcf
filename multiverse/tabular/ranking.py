"""Facts that compare categories: the largest or smallest in a period, the fastest growing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from multiverse.tabular.dataset import Unanswerable, frame_times
from multiverse.tabular.models import Fact
from multiverse.tabular.periods import Point

if TYPE_CHECKING:
    import pandas as pd

    from multiverse.tabular.compute import Setup


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
                      category=pick.label, decimals=pick.decimals, column=_column_name(setup))


def _column_name(setup: Setup) -> str | None:
    """The compared column as a reader knows it."""
    if setup.column == "_source":
        wide = setup.analysis.profile.wide
        return wide.name if wide else "column"
    return setup.column


def _in_period(setup: Setup) -> tuple[pd.DataFrame, str | None]:
    """The rows of the period compared (the query's end or start, else the latest)."""
    if setup.grain is None:
        return setup.frame, None
    values = setup.periods()
    wanted = setup.query.end or setup.query.start
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
    best: tuple[float, str, Point, Point] | None = None
    best_values = None
    for category in [str(v) for v in setup.frame[setup.column].unique()]:
        values = setup.periods(setup.frame[setup.frame[setup.column] == category])
        ends = {p.key: p for p in values.points if p.key in (first.key, last.key)}
        if len(ends) < 2 or ends[first.key].value <= 0:
            continue
        start, end = ends[first.key], ends[last.key]
        growth = (end.value - start.value) / start.value * 100
        if best is None or growth > best[0]:
            best, best_values = (growth, category, start, end), values
    if best is None or best_values is None:
        raise Unanswerable(f"no category of {setup.column} has positive values in both "
                           f"{first.label} and {last.label}")
    growth, category, start, end = best
    return setup.fact(best_values, [start.key, end.key], value=growth, percent=growth,
                      period=f"{start.label}–{end.label}", category=category,
                      start=start.label, end=end.label, start_value=start.value,
                      end_value=end.value, column=_column_name(setup),
                      decimals=None if start.decimals is None or end.decimals is None
                      else max(start.decimals, end.decimals))
