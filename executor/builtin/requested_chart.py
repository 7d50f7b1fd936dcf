"""The chart a request asks for by name ("revenue by country"), found in the material's tables.

Pure functions. A phrase `<measure> by|per|across <dimension>` (Korean `<dimension>별 <measure>`)
is matched to a table holding a numeric column named like the measure and a label column named
like the dimension (or a synonym: country ~ region ~ market); rows sharing a label are summed,
and the title says so, so the chart states exactly what it shows.
"""

from __future__ import annotations

from executor.builtin.series import MAX_POINTS, ChartSpec, SeriesLine
from executor.builtin.tabular import RawTable, numeric_columns, parse_number
from multiverse.asks import SYNONYMS, ChartAsk, chart_asks, column_matches

__all__ = ["SYNONYMS", "ChartAsk", "asked_chart", "chart_asks", "requested_charts"]


def _column(table: RawTable, word: str, candidates: list[int]) -> int | None:
    return next((i for i in candidates if column_matches(word, table.header[i])), None)


def asked_chart(ask: ChartAsk, table: RawTable, source: str) -> ChartSpec | None:
    """The bar chart of `ask` from `table`: the measure summed per dimension label, or None."""
    if not table.header or not table.rows:
        return None
    numeric = numeric_columns(table)
    labels = [i for i in range(len(table.header)) if i not in numeric]
    value = _column(table, ask.measure, list(numeric))
    group = _column(table, ask.dimension, labels)
    if value is None or group is None:
        return None
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    for row in table.rows:
        number = parse_number(row[value]) if row[value] else None
        if number is None or not row[group]:
            continue
        totals[row[group]] = totals.get(row[group], 0.0) + number
        counts[row[group]] = counts.get(row[group], 0) + 1
    if len(totals) < 2 or len(totals) > MAX_POINTS:
        return None
    names = list(totals)
    summed = any(count > 1 for count in counts.values())
    how = f"sum of {max(counts.values())} rows each" if summed else "one row each"
    title = f"{table.header[value]} by {table.header[group]} ({how})"
    line = SeriesLine(name=table.header[value], values=[round(totals[n], 6) for n in names])
    return ChartSpec(title=title, kind="bar", labels=names, lines=[line], source=source)


def requested_charts(
    asked_in: str, tables: list[tuple[RawTable, str]], per_ask: int = 2
) -> list[ChartSpec]:
    """The charts the text asks for that the tables (with their sources) can draw exactly.

    Each ask is drawn from up to `per_ask` tables, in the order given (the sources first), and a
    table saying the same as one already drawn (same labels and values) is skipped.
    """
    charts: list[ChartSpec] = []
    seen: set[tuple[tuple[str, ...], tuple[float | None, ...]]] = set()
    for ask in chart_asks(asked_in):
        drawn = 0
        for table, source in tables:
            chart = asked_chart(ask, table, source)
            if chart is None or drawn >= per_ask:
                continue
            key = (tuple(chart.labels), tuple(chart.lines[0].values))
            if key not in seen:
                seen.add(key)
                charts.append(chart)
                drawn += 1
    return charts
