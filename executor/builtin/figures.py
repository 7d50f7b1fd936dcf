"""Figures in text: numbers with a currency, a unit, a percent sign or a year.

Pure functions. `1,200억 원`, `$4.2 billion`, `35%`, `2.3 million users` and `2024` are figures;
a bare `3` is not.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

FigureKind = Literal["money", "percent", "count", "year"]

NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_SCALES = {
    "thousand": 1e3, "k": 1e3, "million": 1e6, "mn": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9,
    "b": 1e9, "trillion": 1e12, "tn": 1e12, "천": 1e3, "만": 1e4, "억": 1e8, "조": 1e12,
}  # fmt: skip
_MONEY_WORDS = frozenset(
    (
        "원", "달러", "엔", "위안", "유로", "dollars", "euros", "won", "yen",
        "usd", "eur", "krw", "gbp", "jpy", "cny",
    )
)  # fmt: skip
_PERCENT_WORDS = frozenset(
    (
        "%", "%p", "퍼센트", "percent", "per-cent", "pp", "bps",
        "percentage-point", "percentage-points", "basis-points",
    )
)  # fmt: skip
_COUNT_NOUNS = (
    "users|customers|units|employees|stores|subscribers|downloads|orders|countries|cities|"
    "markets|shops|outlets|people|visitors|tonnes|tons|vehicles|products|partners|clients|"
    "members|hours|days|weeks|months|years|kg|km|MW|GW|GWh|TWh|MWh|kWh"
)
_CURRENCY = r"US\$|A\$|C\$|\$|€|£|¥|₩|(?:USD|EUR|GBP|KRW|JPY|CNY) ?"
_EN_SCALE = r"trillion|billion|million|thousand|tn|bn|mn|m|k|b"
_PATTERNS = (
    re.compile(rf"(?P<cur>{_CURRENCY})(?P<num>{NUM})(?:\s?(?P<scale>{_EN_SCALE})\b)?"),
    re.compile(
        rf"(?<![\d.,])(?P<num>{NUM})\s?(?P<scale>조|천억|백억|십억|억|천만|백만|십만|만|천)"
        rf"(?:\s?(?P<num2>{NUM})\s?(?P<scale2>천억|백억|십억|억|천만|백만|십만|만|천))?"
        r"(?:\s?(?P<unit>원|달러|엔|위안|유로|명|개|건|대|톤|가구|곳))?"
    ),
    re.compile(
        rf"(?<![\d.,])(?P<num>{NUM})\s?(?P<scale>trillion|billion|million|thousand|bn|mn)\b"
        r"(?:\s(?P<unit>dollars|euros|won|yen|USD|EUR|KRW|" + _COUNT_NOUNS + r")\b)?"
    ),
    re.compile(
        rf"(?<![\d.,])(?P<num>{NUM})\s?(?P<unit>%p|%|퍼센트|원|달러|명|개사|개|건|배|곳|대|톤|개월|분기)"
    ),
    re.compile(
        rf"(?<![\d.,])(?P<num>{NUM})\s?(?P<unit>percentage points?|per cent|percent|pp|bps|"
        rf"basis points|x|times|{_COUNT_NOUNS})\b"
    ),
    # Tonnes written "60,000 t" (also before Korean: "60,000 t이었고"), never "5 tables".
    re.compile(rf"(?<![\d.,])(?P<num>{NUM})\s?(?P<unit>kt|Mt|t)(?![A-Za-z])"),
    re.compile(r"(?<![\w.,$€£¥₩])(?:FY ?)?(?P<num>(?:19|20)\d{2})(?P<unit>년)?(?![\d%]|[.,]\d)"),
)
_KIND_RANK: dict[str, int] = {"money": 0, "percent": 1, "count": 2, "year": 3}


class FoundFigure(BaseModel):
    """A figure found in a text: its words, value, magnitude in base units and kind."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    value: str
    number: float
    magnitude: float
    unit: str
    kind: FigureKind
    start: int
    end: int


def _to_float(raw: str | None) -> float:
    return float(raw.replace(",", "")) if raw else 0.0


def _kind(currency: str, scale: str, unit: str, number: float, is_year_pattern: bool) -> FigureKind:
    lowered = unit.lower().replace(" ", "-")
    if is_year_pattern or (unit == "년" and number.is_integer() and 1900 <= number <= 2100):
        return "year"
    if currency or lowered in _MONEY_WORDS or (scale.endswith(("억", "조")) and not unit):
        return "money"
    if lowered in _PERCENT_WORDS or lowered.rstrip("s") in _PERCENT_WORDS:
        return "percent"
    return "count"


_KO_DIGITS = {"십": 10.0, "백": 100.0, "천": 1e3}


def _scale(word: str) -> float:
    """A scale word's factor; Korean compounds multiply ("천억" = 10³ × 10⁸, "2천억" keeps it)."""
    folded = word.lower()
    if (folded in _SCALES and len(folded) == 1) or folded.isascii():
        return _SCALES.get(folded, 1.0)
    factor = 1.0
    for char in folded:
        factor *= _KO_DIGITS.get(char) or _SCALES.get(char, 1.0)
    return factor


def _build(match: re.Match[str], is_year_pattern: bool) -> FoundFigure:
    groups = match.groupdict()
    currency = (groups.get("cur") or "").strip()
    scale = groups.get("scale") or ""
    unit = groups.get("unit") or ""
    number = _to_float(groups["num"])
    magnitude = number * _scale(scale)
    if groups.get("num2"):
        magnitude += _to_float(groups["num2"]) * _scale(groups.get("scale2") or "")
    words = " ".join(part for part in (currency, scale, unit) if part)
    return FoundFigure(
        value=match.group(0).strip(),
        number=number,
        magnitude=magnitude,
        unit=words,
        kind=_kind(currency, scale, unit, number, is_year_pattern),
        start=match.start(),
        end=match.end(),
    )


def find_figures(text: str) -> list[FoundFigure]:
    """Every figure in the text, left to right; where patterns overlap the longest wins."""
    candidates: list[FoundFigure] = []
    last = len(_PATTERNS) - 1
    for index, pattern in enumerate(_PATTERNS):
        candidates.extend(_build(m, index == last) for m in pattern.finditer(text))
    candidates.sort(key=lambda f: (f.start, -(f.end - f.start)))
    chosen: list[FoundFigure] = []
    for figure in candidates:
        if not chosen or figure.start >= chosen[-1].end:
            chosen.append(figure)
    return chosen


def parse_figure(value: str) -> FoundFigure | None:
    """The figure a value cell holds (as written in a figures table), if any."""
    found = find_figures(value)
    return found[0] if found else None


_FAMILY = re.compile(r"US\$|\$|€|£|¥|₩|USD|EUR|GBP|KRW|JPY|CNY|원|달러|엔|억|조|%")
_FAMILIES = {
    "US$": "USD",
    "$": "USD",
    "달러": "USD",
    "€": "EUR",
    "£": "GBP",
    "¥": "JPY",
    "엔": "JPY",
}
_FAMILIES |= {"₩": "KRW", "원": "KRW", "억": "KRW", "조": "KRW"}


def unit_family(value: str, kind: str) -> str:
    """What a figure's value is counted in (`USD`, `KRW`, `%`…), so like is compared with like."""
    found = _FAMILY.search(value)
    if not found:
        # Counts are only alike in the same unit: 60,000 t, 14 months and 11,232,000 are not.
        unit = re.sub(r"[\d.,\s]+", " ", value).strip().casefold()
        return f"{kind}:{unit}" if kind == "count" else kind
    return _FAMILIES.get(found.group(0), found.group(0))


def rank_key(kind: str, magnitude: float) -> tuple[int, float]:
    """Sort key putting money first, then percents, then counts, larger values first."""
    return (_KIND_RANK.get(kind, 9), -magnitude)
