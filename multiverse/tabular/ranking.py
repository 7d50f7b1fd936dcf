"""Facts that compare categories: the largest or smallest in a period, the fastest growing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from multiverse.tabular.aggregate import combine
from multiverse.tabular.dataset import Unanswerable, frame_times
from multiverse.tabular.models import Fact

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
                      else max(start.decimals, end.decimals))


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
