"""Questions a request asks of its tables, read by rules: one cell (a lookup) or a figure
computed over cells (a change, a growth, a mean, the largest or fastest-growing category).

A question names a measure in the request's words; the table is found by the same matcher the
charts use (`offline.resolve.table_and_measures`), so a question and a chart of one sentence
read one table. A question that names no measure of its own ("and by how many percent?")
continues the one before it: same table, measure, rows and periods. Which computation is meant
is read from its words; a question whose words name no table is not read (it is said as not
understood by the caller).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from multiverse.spec import (
    ChartAsk,
    Computation,
    ComputeKind,
    HomeScan,
    Lookup,
    Question,
    Reading,
    ScannedFile,
)
from multiverse.tabular import RANKING_KINDS, TableProfile
from offline.lexicon import Period, periods_in, span_in
from offline.makeup import of_one_table, of_table
from offline.resolve import (
    GRAIN_RANK,
    WHICH,
    WHOLE_PERIODS,
    aggregation_said,
    column_hits,
    frequency_asked,
    grain_of,
    names_not_held,
    table_and_measures,
    values_named,
    whole_grain,
)

_QUESTION = re.compile(
    r"\?|？|^\s*(?:what|which|how|when|who|where|is|are|was|were|did|does|do)\b"
    r"|\b(?:tell me|work out|find out|calculate|compute|give me the|include the)\b"
    r"|\bcompare the first and (?:the )?last\b|처음과 마지막을? 비교"
    r"|얼마|몇|어디|어느|언제|무엇|무슨|알려\s?주|계산해|구해|구하",
    re.IGNORECASE,
)
_KINDS: tuple[tuple[ComputeKind, re.Pattern[str]], ...] = (
    (
        "cagr",
        re.compile(
            r"compound annual|\bcagr\b|annual(?:ized)? growth rate|연평균\s?(?:성장|증가)",
            re.I,
        ),
    ),
    (
        "fastest_growing",
        re.compile(r"fastest|quickest|grew (?:the )?most|가장 빠르게|가장 많이 늘", re.I),
    ),
    (
        "growth",
        re.compile(r"\bin percent\b|\bpercent(?:age)?\b|%|퍼센트|몇\s?%|증가율|성장률", re.I),
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
            r"\b(?:most|largest|biggest|highest|greatest|top|leading|peak)\b|가장\s?(?:큰|많|높)",
            re.I,
        ),
    ),
    (
        "smallest",
        re.compile(r"\b(?:least|smallest|lowest|fewest|bottom)\b|가장\s?(?:작|적|낮)", re.I),
    ),
    ("first", re.compile(r"\bfirst (?:value|year|figure|record)", re.I)),
    ("last", re.compile(r"\blatest\b|\bmost recent\b|\blast (?:value|year|figure)", re.I)),
)
# "which state", "which of these stocks", "어느 주", "어떤 분야".
_TIME_WORD = re.compile(
    r"^(?:years?|months?|quarters?|days?|dates?|weeks?|periods?|time|해|연도|년도|달|월|분기|날|"
    r"날짜|주|시기)$",
    re.IGNORECASE,
)
_WHEN = re.compile(
    r"\b(?:year|month|quarter|day|week|date)\b.*\b(?:most|largest|biggest|highest|lowest|least|"
    r"smallest|peak)\b|\b(?:lowest|highest|biggest|largest|smallest|most|least|peak)\s+(?:year|"
    r"month|quarter|day|week)\b|\bwhen\b|\bwhat year\b|언제|몇\s?년|(?:던|인|한)\s?(?:달|해|연도|"
    r"년도|분기|날|시기)",
    re.IGNORECASE,
)
_SPLIT = re.compile(
    r",?\s+and\s+(?=(?:what|which|how|who|when|where|is|was|were|did|does|work out|tell|"
    r"calculate|compute|compare)\b)|;\s*|,\s*(?=(?:what|which|how|when)\b)|(?<=[요까죠])[,.]?\s+|"
    r"(?<=\?)\s*|,?\s*그리고\s+|(?<=[고며])[,]\s+",
    re.IGNORECASE,
)
_JUDGED = re.compile(r"\b(?:worst|best|better|worse)\b|가장\s?(?:좋|나쁜|나빴)", re.IGNORECASE)
_WHOLE = re.compile(r"\bas a whole\b|\bfor the (?:whole|full|entire) (?:year|quarter)\b|"
                    r"\bin total\b|\boverall\b|전체|연간", re.IGNORECASE)



def question_parts(sentence: str) -> list[str]:
    """The questions of one sentence ("… in 1950, and what was the rate that year?")."""
    return [part.strip() for part in _SPLIT.split(sentence) if part and part.strip()]


def is_judgement(sentence: str) -> bool:
    """Whether a question asks for a judgement a table cannot give ("which year was worst")."""
    return _JUDGED.search(sentence) is not None


def extremes_asked(sentence: str) -> tuple[str, str]:
    """A judgement question asked of both ends ("which year was the worst" → "… the highest",
    "… the lowest"): the table gives both; which end is worse is the reader's call."""
    def end(high: bool) -> Callable[[re.Match[str]], str]:
        return lambda m: ("가장 높" if high else "가장 낮") if m.group(0).startswith("가장") else (
            "highest" if high else "lowest")

    return _JUDGED.sub(end(True), sentence), _JUDGED.sub(end(False), sentence)


def is_question(sentence: str) -> bool:
    """Whether a sentence asks for a figure or a name rather than for writing."""
    return _QUESTION.search(sentence) is not None


@dataclass(frozen=True)
class _Target:
    """What a question is about: a table, its measure(s), and rows and periods said before."""

    item: ScannedFile
    table: TableProfile
    measures: list[str]
    filters: dict[str, list[str]]
    periods: list[Period]
    span: tuple[str | None, str | None] | None


def questions_of(
    part: str,
    scan: HomeScan,
    excluded: set[str],
    reading: Reading,
    previous: Question | ChartAsk | None = None,
) -> list[Question]:
    """The lookups or computations one question asks (several for "the average for 1983 and
    for 2016"); none when its words name no table and nothing before it does."""
    target = _target(part, scan, excluded, previous)
    if target is None:
        return of_one_table(part, scan, excluded, reading)
    made_of = of_table(part, target.item, target.table, reading)
    if made_of is not None:
        return made_of
    target = _with_names(part, target)
    if target is None:
        return [Question(reading=reading)]  # it names what no column holds: said, not guessed
    kind = _kind(part, target)
    category, filters = _compared(part, target, kind)
    if kind in RANKING_KINDS and category is None:
        if kind == "fastest_growing":
            return []
        kind = "max" if kind == "largest" else "min"  # nothing compared: the peak over time
    measure = _measure(target, category)
    if kind is None:
        return _lookups(part, target, measure, filters, reading)
    if kind in ("mean", "first", "last") and len(target.periods) > 1 and target.span is None:
        return [
            _computation(part, target, kind, measure, category, filters, (p.label,) * 2, reading)
            for p in target.periods
        ]
    return [
        _computation(
            part, target, kind, measure, category, filters, _range(part, target, kind), reading
        )
    ]


def _with_names(part: str, target: _Target) -> _Target | None:
    """The target with the names it asks that its table does not hold kept as a filter on
    the table's category column of names, so the answer says they are not in the sources
    (with the nearest cells) instead of answering for every row; None when no column could
    hold them."""
    absent = names_not_held(part, target.item, target.table)
    if not absent:
        return target
    columns = [c for c in target.table.columns if c.role == "category"]
    named = [
        c for c in columns
        if any(v[:1].isupper() for v in target.table.categories.get(c.name, []))
    ]  # fmt: skip
    column = max(named or columns, key=lambda c: c.distinct, default=None)
    if column is None:
        return None
    filters = {**target.filters, column.name: [*target.filters.get(column.name, []), *absent]}
    return _Target(target.item, target.table, target.measures, filters, target.periods,
                   target.span)  # fmt: skip


def _target(
    part: str, scan: HomeScan, excluded: set[str], previous: Question | ChartAsk | None
) -> _Target | None:
    found = table_and_measures(part, scan, excluded)
    before = _before(previous, scan, excluded)
    if found is None and before is None:
        return None
    if found is not None and (before is None or found[0].path != before.item.path):
        item, table, measures = found
        timed = _timed(table)
        return _Target(
            item,
            table,
            measures,
            values_named(part, table),
            periods_in(part) if timed else [],
            span_in(part) if timed else None,
        )
    assert before is not None
    # The question goes on about the table of the one before: what it does not say, it keeps.
    table = before.table
    timed = _timed(table)
    periods = periods_in(part) if timed else []
    span = span_in(part) if timed else None
    own = values_named(part, table)
    return _Target(
        before.item,
        table,
        found[2] if found is not None else before.measures,
        {**before.filters, **own},
        periods if periods or span else before.periods,
        span if periods or span else before.span,
    )


def _before(
    previous: Question | ChartAsk | None, scan: HomeScan, excluded: set[str]
) -> _Target | None:
    """The target of the question (or chart) before, as the next question continues it."""
    if previous is None:
        return None
    if isinstance(previous, ChartAsk):
        chart = scan.get(previous.file)
        if chart is None or chart.profile is None or chart.path in excluded:
            return None
        return _Target(chart, chart.profile, list(previous.measures), dict(previous.filters),
                       [], None)  # fmt: skip
    asked = previous.compute or previous.lookup
    item = scan.get(asked.file) if asked is not None else None
    if item is None or item.profile is None or item.path in excluded:
        return None
    if previous.compute is not None:
        ask = previous.compute
        periods = [Period(label, grain_of(label), 0, 0) for label in (ask.start, ask.end) if label]
        span = (ask.start, ask.end) if ask.start != ask.end else None
        measures = _measures_named(item.profile, ask.measure)
        return _Target(item, item.profile, measures, dict(ask.filters), periods, span)
    assert previous.lookup is not None
    look = previous.lookup
    time = item.profile.time
    times = [v for k, v in look.selectors.items() if time is not None and k in time.columns]
    filters = {k: [v] for k, v in look.selectors.items() if k not in (time.columns if time else [])}
    periods = [Period(label, grain_of(label), 0, 0) for label in times]
    return _Target(item, item.profile, _measures_named(item.profile, look.column), filters,
                   periods, None)  # fmt: skip


def _measures_named(table: TableProfile, name: str) -> list[str]:
    """The columns a spec's measure stands for: a wide table's group by its label, or one."""
    wide = table.wide
    if wide is not None and name in (wide.label, wide.name):
        return list(wide.columns)
    return [name]


def _timed(table: TableProfile) -> bool:
    return table.time is not None or (table.wide is not None and table.wide.axis == "time")


_FIRST_LAST = re.compile(r"\bfirst and (?:the )?last\b|처음과 마지막", re.IGNORECASE)


def _kind(part: str, target: _Target) -> ComputeKind | None:
    if _FIRST_LAST.search(part) and _timed(target.table):
        return "change"  # "compare the first and last full years": the change over the data
    ranged = len(target.periods) >= 2 or target.span is not None
    for kind, pattern in _KINDS:
        if not pattern.search(part):
            continue
        if kind in ("change", "growth", "cagr") and not ranged:
            continue  # "the growth rate in 2009" is a cell, not a change
        if kind in ("largest", "smallest") and _asks_when(part, target.table):
            return "max" if kind == "largest" else "min"  # "which year had the most sunspots"
        return kind
    if _asks_when(part, target.table) and not target.periods and _timed(target.table):
        return "max"
    return None


def _asks_when(part: str, table: TableProfile) -> bool:
    """Whether a question asks for a period ("which month was the biggest", "언제"), not for
    a category ("which day of the week": a column of days)."""
    if _which_column(part, table) is not None:
        return False
    match = WHICH.search(part)
    words = (match.group("en") or match.group("ko") or match.group("ko2") or "") if match else ""
    if words and _TIME_WORD.match(words.split()[0]):
        return True
    return _WHEN.search(part) is not None


def _compared(
    part: str, target: _Target, kind: ComputeKind | None
) -> tuple[str | None, dict[str, list[str]]]:
    """The column whose categories a ranking compares, and the rows kept: values named in the
    compared column are the ones compared ("which of Japan, China and Korea")."""
    table = target.table
    filters = dict(target.filters)
    if kind not in RANKING_KINDS:
        return None, filters
    wide = table.wide
    if wide is not None and wide.axis == "category" and len(target.measures) > 1 and set(
        target.measures
    ) <= set(wide.columns):
        return wide.name, filters  # "which field": the columns of one measure compared
    column = _which_column(part, table)
    if column is None:
        named = [c for c, values in filters.items() if len(values) > 1]
        categories = [c.name for c in table.columns if c.role == "category"]
        if named:
            column = named[0]
        elif kind == "fastest_growing" or (not _timed(table) and len(categories) == 1):
            column = categories[0] if len(categories) == 1 else None
    if column is not None and len(filters.get(column, [])) < 2:
        filters.pop(column, None)  # the one value said is the answer's, not a row to keep
    return column, filters


def _which_column(part: str, table: TableProfile) -> str | None:
    """The category column a "which …" names ("which day of the week" → wday)."""
    for match in WHICH.finditer(part):
        words = match.group("en") or match.group("ko") or match.group("ko2") or ""
        hits = column_hits(words, table, ("category", "identifier")) if words else []
        if hits:
            return hits[0].column
    return None


def _measure(target: _Target, category: str | None) -> str:
    """The one measure a question computes: a wide table's values by their group's label."""
    wide = target.table.wide
    if wide is not None and set(target.measures) <= set(wide.columns) and (
        wide.axis == "time" or category == wide.name
    ):
        return wide.label
    return target.measures[0]


def _lookups(
    part: str,
    target: _Target,
    measure: str,
    filters: dict[str, list[str]],
    reading: Reading,
) -> list[Question]:
    """One cell per period named; a period coarser than the table's ("2009 as a whole" of a
    monthly table) is that period's value, combined as the measure combines."""
    table = target.table
    if not target.periods and not filters:
        return []
    time = table.time
    native = time.frequency if time is not None else None
    found: list[Question] = []
    for period in target.periods or [None]:  # type: ignore[list-item]
        coarser = (
            period is not None
            and native in GRAIN_RANK
            and period.grain in GRAIN_RANK
            and GRAIN_RANK[period.grain] < GRAIN_RANK[str(native)]
        )
        if coarser or (period is not None and _WHOLE.search(part) and native != period.grain):
            found.append(
                Question(
                    reading=reading,
                    compute=Computation(
                        kind="first",
                        file=target.item.path,
                        measure=measure,
                        filters=filters,
                        start=period.label,
                        end=period.label,
                        frequency=period.grain,  # type: ignore[arg-type]
                        aggregation=aggregation_said(part),
                    ),
                )
            )
            continue
        selectors = {column: values[0] for column, values in filters.items()}
        if period is not None and time is not None:
            selectors[time.columns[0]] = period.label
        found.append(
            Question(
                reading=reading,
                lookup=Lookup(file=target.item.path, selectors=selectors, column=measure),
            )
        )
    return found


def _computation(
    part: str,
    target: _Target,
    kind: ComputeKind,
    measure: str,
    category: str | None,
    filters: dict[str, list[str]],
    bounds: tuple[str | None, str | None],
    reading: Reading,
) -> Question:
    return Question(
        reading=reading,
        compute=Computation(
            kind=kind,
            file=target.item.path,
            measure=measure,
            category=category,
            filters=filters,
            start=bounds[0],
            end=bounds[1],
            frequency=whole_grain(part) or frequency_asked(part, target.table, target.periods,
                                                         target.span),
            aggregation=aggregation_said(part),
            whole_periods=WHOLE_PERIODS.search(part) is not None,
        ),
    )


def _range(part: str, target: _Target, kind: ComputeKind) -> tuple[str | None, str | None]:
    if target.span is not None:
        return target.span
    periods = target.periods
    time = target.table.time
    if not periods and kind in RANKING_KINDS and time is not None and (
        _WHOLE.search(part) or aggregation_said(part) == "sum"
    ):
        return time.first, time.last  # "which day had the most births in total": all of it
    if len(periods) >= 2:
        return periods[0].label, periods[-1].label
    if len(periods) == 1:
        if kind in ("change", "growth", "cagr"):
            return None, periods[0].label
        return periods[0].label, periods[0].label
    return None, None
