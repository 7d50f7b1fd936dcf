"""Questions a request asks of its tables, read by rules: one cell (a lookup) or a figure
computed over cells (a change, a growth, a mean, the largest or fastest-growing category).

A question names a measure (a column, in the request's words), and periods or categories that
pick rows. Which computation is meant is read from its words; a question none of whose words
name a column is not read (`None`): it is said as not understood by the caller.
"""

from __future__ import annotations

import re

from multiverse.spec import (
    Computation,
    ComputeKind,
    Frequency,
    HomeScan,
    Lookup,
    Question,
    Reading,
    ScannedFile,
)
from multiverse.tabular import TableProfile
from offline.periods import Period, periods_in, span_in
from offline.resolve import ColumnHit, column_hits, values_named

_QUESTION = re.compile(
    r"\?|？|^\s*(?:what|which|how|when|who|where|is|are|was|were|did|does|do)\b"
    r"|\b(?:tell me|work out|find out|calculate|compute|give me the)\b"
    r"|얼마|몇|어디|어느|언제|무엇|무슨|알려\s?주|계산해|구해",
    re.IGNORECASE,
)
_KINDS: tuple[tuple[ComputeKind, re.Pattern[str]], ...] = (
    (
        "cagr",
        re.compile(
            r"compound annual|\bcagr\b|annual(?:ized)? growth rate"
            r"|연평균\s?(?:성장|증가)",
            re.I,
        ),
    ),
    (
        "fastest_growing",
        re.compile(
            r"fastest|quickest|grew (?:the )?most"
            r"|가장 빠르게|가장 많이 늘",
            re.I,
        ),
    ),
    (
        "growth",
        re.compile(
            r"\bin percent\b|\bpercent(?:age)?\b|%"
            r"|퍼센트|몇\s?%|증가율|성장률",
            re.I,
        ),
    ),
    (
        "change",
        re.compile(
            r"\bchange[ds]?\b|\brise\b|\brose\b|\bfall\b|\bfell\b|\bdrop(?:ped)?\b|"
            r"\bgrow(?:th|n)?\b|\bgrew\b|\bincrease[ds]?\b|\bdecrease[ds]?\b|"
            r"\bgain(?:ed)?\b|\blost\b|how far|how much .* (?:more|less)|"
            r"늘었|늘어|줄었|줄어|증가|감소|변화",
            re.I,
        ),
    ),
    ("mean", re.compile(r"\baverage\b|\bmean\b|평균", re.I)),
    (
        "largest",
        re.compile(
            r"\b(?:most|largest|biggest|highest|greatest|top|leading)\b|"
            r"가장\s?(?:큰|많|높)",
            re.I,
        ),
    ),
    (
        "smallest",
        re.compile(
            r"\b(?:least|smallest|lowest|fewest|bottom)\b|"
            r"가장\s?(?:작|적|낮)",
            re.I,
        ),
    ),
    ("first", re.compile(r"\bfirst (?:value|year|figure|record)", re.I)),
    ("last", re.compile(r"\blatest\b|\bmost recent\b|\blast (?:value|year|figure)", re.I)),
)
# "which state/firm/field/of these stocks": the category compared, in the request's words.
_WHICH = re.compile(
    r"\bwhich\s+(?:of\s+(?:these|the)\s+)?(?P<en>[\w-]+(?:\s[\w-]+)?)|(?P<ko>[가-힣]+)\s?(?:중|가운데)?\s?"
    r"(?:어디|어느|무엇)",
    re.IGNORECASE,
)
_WHEN = re.compile(
    r"\b(?:lowest|highest|worst|best|biggest|largest|smallest|most|least)\s+(?:year|month|quarter|"
    r"day|week)\b|\bwhich (?:year|month|quarter|day|date|week)\b|\bwhen\b|\bwhat year\b"
    r"|언제|몇\s?년",
    re.IGNORECASE,
)


_SPLIT = re.compile(
    r",?\s+and\s+(?=(?:what|which|how|who|when|where|is|was|were|did|does)\b)"
    r"|;\s*|,\s*(?=(?:what|which|how|when)\b)|(?<=[요까죠])[,.]?\s+|(?<=\?)\s*",
    re.IGNORECASE,
)
_JUDGED = re.compile(r"\b(?:worst|best|better|worse)\b|가장\s?(?:좋|나쁜|나빴)", re.IGNORECASE)


def question_parts(sentence: str) -> list[str]:
    """The questions of one sentence ("… in 1950, and what was the rate that year?"): each
    part that names no period of its own takes the last period named before it."""
    parts = [part.strip() for part in _SPLIT.split(sentence) if part and part.strip()]
    carried: list[str] = []
    last = ""
    for part in parts:
        found = periods_in(part)
        if found:
            last = " ".join(p.label for p in found)
        elif last and re.search(
            r"\bthat (?:year|month|quarter|day)\b|그해|그 해|같은 해", part, re.I
        ):
            part = f"{part} ({last})"
        carried.append(part)
    return carried


def is_judgement(sentence: str) -> bool:
    """Whether a question asks for a judgement a table cannot give ("which year was worst")."""
    return _JUDGED.search(sentence) is not None


def is_question(sentence: str) -> bool:
    """Whether a sentence asks for a figure or a name rather than for writing."""
    return _QUESTION.search(sentence) is not None


def question_of(
    sentence: str, scan: HomeScan, excluded: set[str], reading: Reading
) -> Question | None:
    """The lookup or computation a question asks of the best-matching table, if any."""
    best = _best_measure(sentence, scan, excluded)
    if best is None:
        return None
    item, table, hit = best
    timed = table.time is not None or (table.wide is not None and table.wide.axis == "time")
    periods = periods_in(sentence) if timed else []
    span = span_in(sentence) if timed else None
    values = values_named(sentence, table)
    kind = _kind(sentence, periods, values)
    category = (
        _category(sentence, table, values)
        if kind in ("largest", "smallest", "fastest_growing")
        else None
    )
    filters = {column: found for column, found in values.items() if column != category}
    if kind is None:
        if not periods and not filters:
            return None
        selectors = {column: found[0] for column, found in filters.items()}
        if periods and table.time is not None:
            selectors[table.time.columns[0]] = periods[0].label
        return Question(
            reading=reading, lookup=Lookup(file=item.path, selectors=selectors, column=hit.column)
        )
    start, end = _range(span, periods, kind)
    return Question(
        reading=reading,
        compute=Computation(
            kind=kind,
            file=item.path,
            measure=hit.column,
            category=category,
            filters=filters,
            start=start,
            end=end,
            frequency=_frequency(sentence),
        ),
    )


def _best_measure(
    sentence: str, scan: HomeScan, excluded: set[str]
) -> tuple[ScannedFile, TableProfile, ColumnHit] | None:
    found = []
    for item in scan.tables():
        if item.path in excluded or item.profile is None:
            continue
        hits = column_hits(sentence, item.profile, ("measure",))
        if hits:
            found.append(
                (
                    hits[0].score + 0.25 * bool(values_named(sentence, item.profile)),
                    item,
                    item.profile,
                    hits[0],
                )
            )
    if not found:
        return None
    _, item, table, hit = max(found, key=lambda entry: entry[0])
    return item, table, hit


def _kind(sentence: str, periods: list[Period], values: dict[str, list[str]]) -> ComputeKind | None:
    for kind, pattern in _KINDS:
        if pattern.search(sentence):
            if kind == "largest" and _WHEN.search(sentence):
                return "max"  # "which year had the most sunspots": the measure's maximum
            if kind == "smallest" and _WHEN.search(sentence):
                return "min"
            if kind in ("change", "growth") and len(periods) < 2 and span_in(sentence) is None:
                continue  # "the growth rate in 2009" is a cell, not a change
            return kind
    if _WHEN.search(sentence) and not periods:
        return "max"
    return None


def _category(sentence: str, table: TableProfile, values: dict[str, list[str]]) -> str | None:
    """The column whose categories a "which …" question compares."""
    match = _WHICH.search(sentence)
    words = (match.group("en") or match.group("ko") or "") if match else ""
    if words:
        hits = column_hits(words, table, ("category", "identifier"))
        if hits:
            return hits[0].column
    categories = [column.name for column in table.columns if column.role == "category"]
    return categories[0] if len(categories) == 1 else None


def _range(
    span: tuple[str | None, str | None] | None, periods: list[Period], kind: ComputeKind
) -> tuple[str | None, str | None]:
    if span is not None:
        return span
    if len(periods) >= 2:
        return periods[0].label, periods[-1].label
    if len(periods) == 1:
        return (
            (periods[0].label, periods[0].label)
            if kind in ("largest", "smallest", "mean")
            else (None, periods[0].label)
        )
    return None, None


def _frequency(sentence: str) -> Frequency | None:
    lowered = sentence.lower()
    words: tuple[tuple[str, Frequency], ...] = (
        ("year", "year"),
        ("annual", "year"),
        ("quarter", "quarter"),
        ("month", "month"),
        ("week", "week"),
        ("연도", "year"),
        ("연간", "year"),
        ("분기", "quarter"),
        ("월", "month"),
    )
    for word, frequency in words:
        if word in lowered:
            return frequency
    return None
