"""The chart a request asks for by name ("revenue by country"), found in the material's tables.

Pure functions. A phrase `<measure> by|per|across <dimension>` (Korean `<dimension>별 <measure>`)
is matched to a table holding a numeric column named like the measure and a label column named
like the dimension (or a synonym: country ~ region ~ market); rows sharing a label are summed,
and the title says so, so the chart states exactly what it shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from executor.builtin.series import MAX_POINTS, ChartSpec, SeriesLine
from executor.builtin.tabular import RawTable, numeric_columns, parse_number

_ASKED = re.compile(
    r"(?P<measure>[A-Za-z][A-Za-z ]{1,40}?)\s+(?:by|per|across|for each)\s+"
    r"(?P<dimension>[A-Za-z]{3,30})",
    re.IGNORECASE,
)
_ASKED_KO = re.compile(r"(?P<dimension>[가-힣A-Za-z]{1,10})별\s*(?P<measure>[가-힣A-Za-z]{1,10})")
_LEAD_WORDS = frozenset(
    {"a", "an", "the", "of", "chart", "charts", "graph", "plot", "bar", "line", "show"}
    | {"showing", "make", "draw", "total", "with", "and"}
)
SYNONYMS: dict[str, frozenset[str]] = {
    "country": frozenset({"country", "countries", "region", "nation", "market", "국가", "나라"}),
    "region": frozenset({"region", "regions", "country", "area", "market", "지역", "국가"}),
    "revenue": frozenset({"revenue", "revenues", "sales", "turnover", "매출", "매출액"}),
    "sales": frozenset({"sales", "revenue", "매출", "판매"}),
    "year": frozenset({"year", "years", "연도", "년"}),
    "quarter": frozenset({"quarter", "quarters", "분기"}),
    "product": frozenset({"product", "products", "segment", "제품"}),
    "units": frozenset({"units", "unit", "volume", "판매량"}),
    "margin": frozenset({"margin", "margins", "마진"}),
}
for _key, _words in list(SYNONYMS.items()):
    for _word in _words:
        SYNONYMS.setdefault(_word, _words)


@dataclass(frozen=True)
class ChartAsk:
    """A chart asked for in words: what is measured, grouped by what."""

    measure: str
    dimension: str


def _singular(word: str) -> str:
    word = word.casefold()
    if word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def chart_asks(text: str) -> list[ChartAsk]:
    """Every `<measure> by <dimension>` the text asks for, in order, once each."""
    asks: list[ChartAsk] = []
    for match in _ASKED.finditer(text):
        words = [w for w in match["measure"].split() if w.casefold() not in _LEAD_WORDS]
        if words:
            asks.append(ChartAsk(_singular(words[-1]), _singular(match["dimension"])))
    for match in _ASKED_KO.finditer(text):
        asks.append(ChartAsk(match["measure"], match["dimension"]))
    return list(dict.fromkeys(asks))


def _matches(word: str, header: str) -> bool:
    names = SYNONYMS.get(word, frozenset({word}))
    parts = {_singular(part) for part in re.split(r"[^0-9A-Za-z가-힣]+", header) if part}
    return bool(parts & {_singular(name) for name in names}) or any(
        name in header for name in names if not name.isascii()
    )


def _column(table: RawTable, word: str, candidates: list[int]) -> int | None:
    return next((i for i in candidates if _matches(word, table.header[i])), None)


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
