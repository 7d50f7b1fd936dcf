"""Chart data computed from a table: the same function draws the proposal's preview and the chart.

A query names measures, a dimension (`time` or a label column), a time grain, an aggregation,
filters, a column to split series by, a top-n and an order; what cannot be drawn is refused in
plain words with the nearest queries that can be.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

from multiverse.tabular.aggregate import Combined, combine
from multiverse.tabular.chartplan import Plan, plan_chart
from multiverse.tabular.chartwords import axis_labels, title
from multiverse.tabular.dataset import Unanswerable, load, long_rows, select
from multiverse.tabular.models import ChartAggregation, ChartData, ChartQuery, ChartRefusal, Series
from multiverse.tabular.numbers import format_number
from multiverse.tabular.profiling import Analysis
from multiverse.tabular.suggestions import chart_alternatives
from multiverse.tabular.timelabels import label_of

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
