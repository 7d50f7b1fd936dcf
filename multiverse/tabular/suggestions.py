"""The nearest drawable charts to one that cannot be drawn: each is drawn before it is offered."""

from __future__ import annotations

import difflib
from collections.abc import Callable

from multiverse.tabular.dataset import Unanswerable, find_column, label_columns
from multiverse.tabular.models import ChartData, ChartQuery, ChartRefusal
from multiverse.tabular.profiling import Analysis

MAX_ALTERNATIVES = 4
Draw = Callable[..., ChartData | ChartRefusal]


def _close(word: str, options: list[str], count: int = 3) -> list[str]:
    """The options nearest a word in spelling, the nearest first."""
    lowered = {option.lower(): option for option in options}
    near = difflib.get_close_matches(word.lower(), list(lowered), n=count, cutoff=0.4)
    return [lowered[n] for n in near]


def _candidates(analysis: Analysis, query: ChartQuery, problem: Unanswerable) -> list[ChartQuery]:
    """Changed queries that may be drawable, the closest change first."""
    profile = analysis.profile
    measures = [c.name for c in profile.role("measure")]
    labels = label_columns(analysis)
    time = "time" if profile.time is not None else None
    dimensions = [d for d in [time, *labels[:3]] if d]
    bad = problem.column
    out: list[ChartQuery] = []
    if bad is not None and bad in query.filters:
        values = profile.categories.get(find_column(analysis, bad) or "", [])
        near = [v for wanted in query.filters[bad] for v in _close(wanted, values, 2)]
        if near:
            out.append(query.model_copy(update={"filters": {**query.filters, bad: near[:1]}}))
        out.append(query.model_copy(update={"filters": {
            k: v for k, v in query.filters.items() if k != bad}}))
    elif bad is not None and (bad in query.measures or (bad in labels and bad in query.measures)):
        others = [m for m in query.measures if m != bad]
        for closest in _close(bad, measures) or measures[:3]:
            out.append(query.model_copy(update={"measures": [*others, closest]}))
        if bad in labels:
            out.append(query.model_copy(update={"aggregation": "count", "dimension": bad}))
    elif bad is not None and bad == query.series_by:
        out.append(query.model_copy(update={"series_by": None}))
        out.extend(query.model_copy(update={"series_by": c}) for c in _close(bad, labels))
    if (bad is not None and bad == query.dimension) or query.frequency is not None:
        out.append(query.model_copy(update={"frequency": None}))
        out.extend(query.model_copy(update={"dimension": d, "frequency": None}) for d in dimensions)
    out.extend(ChartQuery(file=query.file, sheet=query.sheet, measures=[m], dimension=d)
               for m in measures[:3] for d in dimensions[:1])
    return out


def chart_alternatives(analysis: Analysis, query: ChartQuery, problem: Unanswerable,
                       draw: Draw) -> list[ChartQuery]:
    """Up to MAX_ALTERNATIVES queries near `query` that draw (each was drawn to be sure)."""
    found: list[ChartQuery] = []
    for candidate in _candidates(analysis, query, problem):
        if candidate == query or candidate in found:
            continue
        if isinstance(draw(analysis, candidate, suggest=False), ChartData):
            found.append(candidate)
        if len(found) >= MAX_ALTERNATIVES:
            break
    return found
