"""Long rows combined per group: a sum, a mean, a count, or each period's last value.

The last value of a period is taken per sub-series (each combination of the label columns not
grouped by, such as each country) at its latest moment, and the sub-series are then added: the
population of a continent in a year is the sum of its countries' last values of that year.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from multiverse.tabular.models import Citation

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
