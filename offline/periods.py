"""Periods a request names, in English and Korean: years, quarters, months, days, decades,
centuries and ranges, each as a label in one normal form (pure).

Labels: `1950`, `2010Q3`, `2008-09`, `2020-01-05`. A range is a pair of labels; "since 1970"
is a range open at its end (None), "in the 1990s" is 1990–1999.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

MONTHS = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sep": 9,
    "sept": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}
ORDINALS = {
    "first": 1,
    "1st": 1,
    "second": 2,
    "2nd": 2,
    "third": 3,
    "3rd": 3,
    "fourth": 4,
    "4th": 4,
    "last": 4,
}
_YEAR = r"(1[0-9]{3}|2[01][0-9]{2})"
_MONTH_NAME = "|".join(sorted(MONTHS, key=len, reverse=True))
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("day", re.compile(rf"(?<![\d-]){_YEAR}-(\d{{1,2}})-(\d{{1,2}})(?![\d-])")),
    ("day_ko", re.compile(rf"{_YEAR}년\s*(\d{{1,2}})월\s*(\d{{1,2}})일")),
    ("month_ko", re.compile(rf"{_YEAR}년\s*(\d{{1,2}})월")),
    ("quarter_ko", re.compile(rf"{_YEAR}년\s*([1-4])\s*분기")),
    ("quarter_label", re.compile(rf"(?<!\w){_YEAR}\s?-?\s?[Qq]([1-4])(?!\w)")),
    ("quarter_q_first", re.compile(rf"(?<!\w)[Qq]([1-4])\s+(?:of\s+)?{_YEAR}(?!\d)")),
    (
        "quarter_words",
        re.compile(rf"\b({'|'.join(ORDINALS)})\s+quarter\s+(?:of\s+)?{_YEAR}\b", re.IGNORECASE),
    ),
    (
        "month_name_day",
        re.compile(rf"\b({_MONTH_NAME})\.?\s+(\d{{1,2}}),?\s+{_YEAR}\b", re.IGNORECASE),
    ),
    ("month_name", re.compile(rf"\b({_MONTH_NAME})\.?,?\s+(?:of\s+)?{_YEAR}\b", re.IGNORECASE)),
    ("year_month_name", re.compile(rf"\b{_YEAR}\s+({_MONTH_NAME})\b", re.IGNORECASE)),
    ("month_iso", re.compile(rf"(?<![\d-]){_YEAR}-(0[1-9]|1[0-2])(?![\d-])")),
    ("year", re.compile(rf"(?<![\d,.$€£₩]){_YEAR}(?:년)?(?!\d|[,.]\d|%|\s?(?:s\b|년대|'s))")),
]
_DECADE = re.compile(
    r"(?P<since>since\s+(?:the\s+)?)?(?<!\d)(1[0-9]{2}|2[01][0-9])0'?s\b"
    r"|(1[0-9]{2}|2[01][0-9])0\s?년대(?P<ko_since>\s?(?:이후|부터))?",
    re.IGNORECASE,
)
_CENTURY = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)\s+century\b|(\d{1,2})\s?세기", re.IGNORECASE)
# What stands between two periods that makes them a range: "1935 and 1954" after "between",
# "1983 to 2016", "2009–2016", "1950년부터 2000년까지".
_BETWEEN = re.compile(
    r"^\s*(?:and|to|through|thru|until|till|-|–|—|~|부터|에서)\s*$", re.IGNORECASE
)
_SINCE = re.compile(r"(?:since|after|from)\s+(?:the\s+)?(?:end\s+of\s+)?$", re.IGNORECASE)
_SINCE_KO = re.compile(r"^\s*(?:년\s*)?(?:이후|부터|이래)")


@dataclass(frozen=True)
class Period:
    """One period named: its normal label, its grain, and where it stands in the text."""

    label: str
    grain: str  # "year", "quarter", "month", "day"
    start: int
    end: int


def periods_in(text: str) -> list[Period]:
    """Every single period the text names, in order (a longer form wins over a year inside it)."""
    found: list[Period] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            span = match.span()
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue
            period = _period(kind, match)
            if period is not None:
                found.append(period)
                taken.append(span)
    return sorted(found, key=lambda period: period.start)


def _period(kind: str, match: re.Match[str]) -> Period | None:
    g = match.groups()
    start, end = match.span()
    if kind in ("day", "day_ko"):
        year, month, day = int(g[0]), int(g[1]), int(g[2])
        if not _valid(month, day):
            return None
        return Period(f"{year}-{month:02d}-{day:02d}", "day", start, end)
    if kind in ("month_ko", "month_iso"):
        year, month = int(g[0]), int(g[1])
        return Period(f"{year}-{month:02d}", "month", start, end) if 1 <= month <= 12 else None
    if kind in ("quarter_ko", "quarter_label"):
        return Period(f"{g[0]}Q{g[1]}", "quarter", start, end)
    if kind == "quarter_q_first":
        return Period(f"{g[1]}Q{g[0]}", "quarter", start, end)
    if kind == "quarter_words":
        return Period(f"{g[1]}Q{ORDINALS[g[0].lower()]}", "quarter", start, end)
    if kind == "month_name_day":
        month, day = MONTHS[g[0].lower()], int(g[1])
        if not _valid(month, day):
            return None
        return Period(f"{g[2]}-{month:02d}-{day:02d}", "day", start, end)
    if kind == "month_name":
        return Period(f"{g[1]}-{MONTHS[g[0].lower()]:02d}", "month", start, end)
    if kind == "year_month_name":
        return Period(f"{g[0]}-{MONTHS[g[1].lower()]:02d}", "month", start, end)
    return Period(g[0], "year", start, end)


def _valid(month: int, day: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= 31


def span_in(text: str) -> tuple[str | None, str | None] | None:
    """The range of periods the text names: (start, end), an end None for "since …"."""
    decade = _DECADE.search(text)
    if decade is not None:
        year = int((decade.group(2) or decade.group(3)) + "0")
        if decade.group("since") or decade.group("ko_since"):
            return str(year), None
        return str(year), str(year + 9)
    century = _CENTURY.search(text)
    found = periods_in(text)
    if century is not None:
        explicit = [p for p in found if p.grain == "year"]
        if len(explicit) >= 2:
            return explicit[0].label, explicit[-1].label
        number = int(century.group(1) or century.group(2))
        return str((number - 1) * 100 + 1), str(number * 100)
    for first, second in itertools.pairwise(found):
        if _BETWEEN.match(text[first.end : second.start]):
            return first.label, second.label
    for period in found:
        if _SINCE.search(text[: period.start]) or _SINCE_KO.match(text[period.end :]):
            return period.label, None
    return None
