"""A chart's words: its title states the aggregation, its axes the dimension and the unit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from multiverse.tabular.profiling import Analysis

if TYPE_CHECKING:
    from multiverse.tabular.chartplan import Plan

_GRAIN_NOUN = {"year": "year", "quarter": "quarter", "month": "month", "day": "date",
               "hour": "hour", "second": "time"}


def lower_first(text: str) -> str:
    """`Real GDP` → `real GDP` inside a sentence; one word (`GDP`, `Dp`, a column's own name)
    keeps its capitals."""
    if " " in text and text[0].isupper() and not text[1].isupper():
        return text[0].lower() + text[1:]
    return text


def upper_first(text: str) -> str:
    """The first letter capitalised, the rest as written."""
    return text[:1].upper() + text[1:]


def with_unit(label: str, unit: str | None) -> str:
    """`unemployment rate (%)`."""
    return f"{label} ({unit})" if unit else label


def _head(plan: Plan, combined: bool) -> str:
    """The measure with its aggregation in words: `Mean unemployment rate (%)`."""
    label = with_unit(lower_first(plan.label), plan.unit)
    if plan.aggregation == "count":
        return f"Number of {label} values"
    if not combined:
        return upper_first(label)  # one value a period: nothing was combined
    if plan.aggregation == "sum":
        return f"Total {label}"
    if plan.aggregation == "last":
        period = _GRAIN_NOUN.get(plan.grain, "period") if plan.time else "period"
        return f"{upper_first(label)} (last value of each {period})"
    return f"Mean {label}"


def dimension_label(analysis: Analysis, plan: Plan) -> str:
    """What the chart's categories are called."""
    if plan.time:
        return _GRAIN_NOUN.get(plan.grain, "time")
    if plan.dimension == "_source":
        return analysis.profile.wide.name if analysis.profile.wide else "column"
    column = analysis.profile.column(plan.dimension or "")
    return column.label if column else (plan.dimension or "")


def title(analysis: Analysis, plan: Plan, labels: list[str], combined: bool) -> str:
    """`Mean unemployment rate (%) by year, 1959–2009`, `Total sales by region`."""
    text = f"{_head(plan, combined)} by {dimension_label(analysis, plan)}"
    series = plan.query.series_by
    if series:
        column = analysis.profile.column(series)
        text += f" and {column.label if column else series}"
    if plan.time and labels:
        text += f", {labels[0]}–{labels[-1]}" if labels[0] != labels[-1] else f", {labels[0]}"
    kept = [f"{key}: {', '.join(values)}" for key, values in plan.query.filters.items() if values]
    if kept:
        text += f" ({'; '.join(kept)})"
    return text


def axis_labels(analysis: Analysis, plan: Plan) -> tuple[str, str]:
    """The x axis names the dimension; the y axis the measure with its unit."""
    x_label = upper_first(dimension_label(analysis, plan))
    if plan.aggregation == "count":
        return x_label, "Number of values"
    return x_label, upper_first(with_unit(plan.label, plan.unit))
