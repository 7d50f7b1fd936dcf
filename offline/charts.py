"""Charts asked for in words: "<measure> by <dimension>" (Korean "<dimension>별 <measure>"),
and whether a table's column names the measure or the dimension (synonyms included).

Pure functions over strings; part of what `offline.asks` reads in a request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MEASURE_BY = re.compile(
    r"(?P<measure>[A-Za-z][A-Za-z -]{1,40}?)\s+(?:by|per|across|for each)\s+"
    r"(?P<dimension>[A-Za-z]{3,30})",
    re.IGNORECASE,
)
_MEASURE_BY_KO = re.compile(
    r"(?P<dimension>[가-힣A-Za-z]{1,10})별\s*(?P<measure>[가-힣A-Za-z]{1,10})"
)
_LEAD_WORDS = frozenset(
    {"a", "an", "the", "of", "chart", "charts", "graph", "plot", "bar", "line", "show"}
    | {"showing", "make", "draw", "total", "with", "and", "table", "compare", "list"}
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
    "국가": frozenset({"국가", "나라", "country", "region"}),
    "매출": frozenset({"매출", "매출액", "revenue", "sales"}),
}
for _key, _words in list(SYNONYMS.items()):
    for _word in _words:
        SYNONYMS.setdefault(_word, _words)


@dataclass(frozen=True)
class ChartAsk:
    """A chart asked for in words: what is measured, grouped by what."""

    measure: str
    dimension: str


def singular(word: str) -> str:
    """An English word's singular by its ending ("countries" → "country"); others unchanged."""
    word = word.casefold()
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def chart_asks(text: str) -> list[ChartAsk]:
    """Every `<measure> by <dimension>` (Korean `<dimension>별 <measure>`) in order, once each."""
    asks: list[ChartAsk] = []
    for match in _MEASURE_BY.finditer(text):
        words = [w for w in match["measure"].split() if w.casefold() not in _LEAD_WORDS]
        if words:
            asks.append(ChartAsk(singular(words[-1]), singular(match["dimension"])))
    for match in _MEASURE_BY_KO.finditer(text):
        # "국가별 매출을 차트로": the particle is not part of the measure's name.
        measure = re.sub(r"(?:을|를|이|가|은|는|의|과|와|로|으로)$", "", match["measure"])
        asks.append(ChartAsk(measure or match["measure"], match["dimension"]))
    return list(dict.fromkeys(asks))


def column_matches(word: str, header: str) -> bool:
    """Whether a column header names `word` or a synonym ("revenue_eur" names revenue)."""
    names = SYNONYMS.get(word, frozenset({word}))
    parts = {singular(part) for part in re.split(r"[^0-9A-Za-z가-힣]+", header) if part}
    return bool(parts & {singular(name) for name in names}) or any(
        name in header for name in names if not name.isascii()
    )
