"""Charts a request asks for, read by rules into the data each draws: a table's measure(s)
along time or a category, with the filters, series, top-N and aggregation the words say.

A chart names its measure in the request's words; the table whose column matches them best is
charted (a file left out is never). Time is the dimension when the words speak of years,
months, quarters, a trend or a change, or when nothing else is said and the table has a time
axis; a category when the words say "by <category>". "How X changed by <category>" draws one
series per category over time. A chart whose measure no column matches is kept, undrawn, with
why: the proposal says it and offers what can be drawn instead.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

from multiverse.spec import (
    Aggregation,
    Chart,
    ChartAsk,
    ChartKind,
    Frequency,
    HomeScan,
    Reading,
)
from multiverse.tabular import TableProfile
from offline.lexicon import covers_all, expand, periods_in, phrase_terms, span_in
from offline.resolve import (
    column_hits,
    like_measures,
    table_and_measures,
    top_category,
    values_named,
)

CHART_WORDS = re.compile(
    r"\b(?:chart|charts|charted|graph|graphs|plot|plots|plotted|visuali[sz]\w*|diagram)\b"
    r"|\bdraw\b|차트|그래프|그려|시각화|도표"
    r"|\bshow\s+(?:me\s+|us\s+)?(?:the\s+)?(?:average|total|mean|sum|number)?\s*[\w -]+?\s+by\s+\w",
    re.IGNORECASE,
)
# "two charts: total bill by day, and average tip by party size"
_SEVERAL = re.compile(
    r"\b(?:two|three|four|2|3|4)\s+(?:charts|graphs|plots)\b|차트\s?(?:두|세)\s?개", re.I
)
_TIME_WORDS: tuple[tuple[Frequency, re.Pattern[str]], ...] = (
    (
        "year",
        re.compile(
            r"\b(?:year|years|yearly|annual|annually|each year|per year)\b|"
            r"연도|연간|매년|해마다|년별",
            re.I,
        ),
    ),
    ("decade", re.compile(r"\b(?:by|per|each|every) decade\b|\bdecades?\b|10년 단위|연대별", re.I)),
    ("quarter", re.compile(r"\bquarter(?:ly|s)?\b|분기", re.I)),
    ("month", re.compile(r"\bmonth(?:ly|s)?\b|month by month|월별|매월|월간", re.I)),
    ("week", re.compile(r"\bweek(?:ly|s)?\b|week by week|주간|매주", re.I)),
    ("day", re.compile(r"\bdaily\b|\bday by day\b|\bper day\b|일별|일간", re.I)),
)
_TREND = re.compile(
    r"\bover time\b|\btrend|\bchang\w*|\bmoved?\b|\bevolv\w*|\bhow\b.*\b(?:grew|fell|rose|went)\b"
    r"|\bsince\b|\bfrom \d{4}|\bhistory\b|추이|변화|변했|흐름|늘었|줄었",
    re.IGNORECASE,
)
_BY = re.compile(
    # "across all districts" sums over them: no dimension
    r"\b(?:by|per|for each|for every|across(?!\s+(?:all|every|the whole|the entire)\b)|of each|"
    r"each)\s+(?P<en>[\w-]+(?:\s[\w-]+)?)"
    r"|(?P<ko>[가-힣A-Za-z]+)\s?별",
    re.IGNORECASE,
)
_SERIES = re.compile(
    r"\b(?:one|a separate|separate|a)\s+(?:line|series)\s+(?:for|per)\s+(?:each|every)?\s*"
    r"(?P<en>[\w-]+)|(?:line|series)\s+(?:for|per)\s+(?:each|every)\s+(?P<en2>[\w-]+)"
    r"|\bfor each (?P<en3>[\w-]+)\b.*\bover time\b|(?P<ko>[가-힣]+)\s?마다\s?(?:선|라인)",
    re.IGNORECASE,
)
_TOP = re.compile(
    r"\btop\s+(?P<a>\d+|[a-z]+)\b|\b(?P<b>\d+|three|four|five|six|seven|eight|nine|ten|twenty)\s+"
    r"(?:[\w-]+\s+){0,2}?(?:with the |that )?(?:largest|biggest|highest|most|leading|best)\b"
    r"|\b(?:the\s+)?(?P<c>three|four|five|six|seven|eight|nine|ten|\d+)\s+[\w-]+(?:\s[\w-]+)?\s"
    r"(?:with|that had|which had|brought in|earned|made)\s+the\s+(?:most|highest|largest)"
    r"|상위\s?(?P<d>\d+)",
    re.IGNORECASE,
)
_NUMBERS = {
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "twenty": 20,
}
_AGGREGATION: tuple[tuple[Aggregation, re.Pattern[str]], ...] = (
    ("mean", re.compile(r"\baverage[ds]?\b|\bmean\b|평균", re.I)),
    ("sum", re.compile(r"\btotal\b|\bsum\b|\bin all\b|합계|총합|총", re.I)),
    ("last", re.compile(r"\bend of (?:each|the) (?:year|quarter|month)\b|end-of-year|연말", re.I)),
)
_EACH_OWN = re.compile(r"\beach\b.*\bown\b|\bseparate charts?\b|각각", re.IGNORECASE)


def is_chart_sentence(sentence: str) -> bool:
    """Whether a sentence asks for a chart."""
    return CHART_WORDS.search(sentence) is not None


def chart_sentence(
    sentence: str, scan: HomeScan, excluded: set[str], reading: Reading, context: str = ""
) -> list[Chart]:
    """The charts a sentence asks for: one per chart it names ("a chart of X and a chart of
    Y", "X by month and Y by year", "each its own chart"). A sentence that names no measure
    ("Chart it.") takes its measure from the sentence before it (`context`)."""
    several = _EACH_OWN.search(sentence) or _SEVERAL.search(sentence)
    parts = _parts(sentence.split(":", 1)[-1]) if several else _chart_parts(sentence)
    charts = [chart for part in parts if (chart := _chart(part, sentence, scan, excluded, reading))]
    if not charts and context:
        if several:  # "…: spending, population and the saving rate. Give each its own chart."
            parts = _parts(context.split(":", 1)[-1])
            charts = [c for part in parts if (c := _chart(part, part, scan, excluded, reading))]
        else:
            whole = f"{context} {sentence}"
            found = _chart(whole, whole, scan, excluded, reading)
            charts = [found] if found is not None else []
    if not charts:
        return [
            Chart(
                reading=reading,
                reason="no column of a table among the sources is named like what it charts",
            )
        ]
    return charts


_CHART_NOUN = re.compile(
    r"\b(?:an?\s+|the\s+)?(?:\w+\s+)?(?:chart|graph|plot)s?\s+(?:of|for)\b", re.I
)


def _chart_parts(sentence: str) -> list[str]:
    """One part per chart the sentence names: at each "a chart of", else at each "<measure>
    by <dimension>" joined by "and" (else the whole sentence)."""
    starts = [match.start() for match in _CHART_NOUN.finditer(sentence)]
    if len(starts) > 1:
        bounds = [*starts[1:], len(sentence)]
        head = sentence[: starts[0]]
        return [head + sentence[start:end] for start, end in zip(starts, bounds, strict=True)]
    clauses = _clauses_of_charts(sentence)
    if len(clauses) > 1:
        return clauses
    pieces = re.split(r",?\s+and\s+(?=(?:the\s+|a\s+)?[\w-]+(?:\s[\w-]+){0,3}\s+by\s)", sentence)
    if len(pieces) > 1 and all(re.search(r"\bby\s", piece) for piece in pieces):
        verb = re.match(r"\s*(?:please\s+)?(chart|plot|graph|draw|show)\b", sentence, re.I)
        return [pieces[0], *((f"{verb.group(1)} " if verb else "") + p for p in pieces[1:])]
    return _by_parts(sentence)


_CHART_NAME = re.compile(r"차트|그래프|도표|\b(?:chart|graph|plot)s?\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r",\s*|\s+그리고\s+|\s+and\s+", re.IGNORECASE)


def _clauses_of_charts(sentence: str) -> list[str]:
    """ "요일별 평균 팁을 차트로 그리고, 경력별 팁 차이도 차트로 보여 주세요": one clause per
    chart named, cut at the last clause boundary between two charts; [sentence] when it
    names one chart (or no boundary parts them)."""
    names = list(_CHART_NAME.finditer(sentence))
    cuts: list[tuple[int, int]] = []
    for before, after in itertools.pairwise(names):
        between = [m for m in _CLAUSE_END.finditer(sentence, before.end(), after.start())]
        if between:
            cuts.append((between[-1].start(), between[-1].end()))
    if not cuts:
        return [sentence]
    pieces, start = [], 0
    for cut_start, cut_end in cuts:
        pieces.append(sentence[start:cut_start])
        start = cut_end
    pieces.append(sentence[start:])
    return [piece for piece in pieces if piece.strip()]


def _parts(sentence: str) -> list[str]:
    return [part for part in re.split(r",|;|\band\b|그리고", sentence) if part.strip()]


def _by_parts(sentence: str) -> list[str]:
    """ "the average tip by waiter, and by day of the week": one chart per "by"; else whole."""
    pieces = re.split(r",?\s+and\s+(?=by\b)", sentence)
    if len(pieces) < 2:
        return [sentence]
    head = re.sub(r"\bby\b.*$", "", pieces[0])
    return [pieces[0], *(f"{head} {piece}" for piece in pieces[1:])]


# What a chart draws, in its own words: "a chart of <it> by …", "chart <it> over …", "<it> 차트".
_OBJECT = re.compile(
    r"\b(?:charts?|graphs?|plots?|diagrams?)\s+(?:of|showing|for|with|that shows)\s+(?P<a>.+)"
    r"|\b(?:chart|plot|graph|draw|visuali[sz]e|show)\s+(?:me\s+|us\s+)?(?P<b>.+)"
    r"|(?P<c>[^.?!]+?)\s*(?:을|를|의)?\s*(?:차트|그래프|시각화|도표)",
    re.IGNORECASE,
)
_OBJECT_END = re.compile(
    r"\s(?:by|over|across|from|since|between|during|through|for each|for every|each|year by year|"
    r"month by month|quarter by quarter|week by week|as a|as an|and (?:write|tell|say|point|"
    r"compare|send|give|explain|note|work|include|put)|with a separate|with one|one line)\b"
    r"|,|;|\s(?:per|in)\s(?!\d|one|a\s|thousand|hundred|million)",
    re.IGNORECASE,
)


def chart_object(sentence: str) -> str:
    """The words naming what a chart draws (the whole sentence when none stand out)."""
    sentence = re.sub(r"(?<=\d),(?=\d{3}\b)", "", sentence)  # "1,000": one number, not a list
    match = _OBJECT.search(sentence)
    if match is None:
        return sentence
    found = next(group for group in match.groups() if group)
    # "deaths by cause (disease, wounds, other)": a list in parentheses names what is drawn.
    listed = re.search(r"\(([^()]*,[^()]*)\)", found)
    if listed is not None:
        found = found[: listed.start()] + ", " + listed.group(1) + found[listed.end() :]
    pieces = re.split(r"(,)", found)
    kept = _OBJECT_END.split(pieces[0], maxsplit=1)[0]
    # "computer science, engineering and physical sciences": a list goes on after commas
    for piece in pieces[2::2]:
        item = _OBJECT_END.split(piece, maxsplit=1)[0]
        if len(item.split()) > 8 or _LIST_BREAK.match(item) or item.strip() in ("", "and", "or"):
            break
        kept += "," + item
        if item != piece:
            break
    return kept.strip() or sentence


_LIST_BREAK = re.compile(
    r"\s*(?:please|would|could|and (?:write|tell|say|send)|it|that|which|so)\b", re.I
)


def _chart(
    part: str, sentence: str, scan: HomeScan, excluded: set[str], reading: Reading
) -> Chart | None:
    best = table_and_measures(chart_object(part), scan, excluded) or table_and_measures(
        part, scan, excluded
    )
    if best is None:
        return None
    item, table, measures = best
    dimension, frequency, series_by = _dimension(
        part if part != sentence else sentence, table, measures
    )
    wide = table.wide
    if dimension not in {c.name for c in table.columns} | {"time"}:
        group = like_measures(table, measures)
        if wide is not None and wide.axis == "category":
            # "votes by candidate" where the candidates are the columns of one measure
            measures, dimension = list(wide.columns), wide.name
        elif group:
            # "deaths by cause" where the causes are the columns: each its own series over time
            measures, dimension = group, "time"
    filters = {
        column: found
        for column, found in values_named(sentence, table).items()
        if column != dimension
    }
    period = _period(part, table)
    if period is not None:
        filters[period[0]] = [period[1]]
    data = ChartAsk(
        file=item.path,
        measures=measures,
        dimension=dimension,
        frequency=frequency,
        aggregation=_aggregation(part),
        filters=filters,
        series_by=series_by,
        top_n=_top(sentence),
        kind=_kind(sentence),
    )
    return Chart(data=data, reading=reading)














def _dimension(
    sentence: str, table: TableProfile, measures: list[str]
) -> tuple[str, Frequency | None, str | None]:
    """(dimension, frequency, series_by) the words ask of this table. A "by <words>" that
    names no column of it is kept as said (the check says the chart cannot be drawn and what
    can), unless several measures were named: then they are what it is "by" ("deaths by
    cause (disease, wounds, other)")."""
    frequency = _frequency(sentence)
    series_by = _series(sentence, table)
    by = _by_column(sentence, table) or top_category(sentence, table)
    unmatched = _by_unmatched(sentence, table) if by is None and len(measures) == 1 else None
    if unmatched is not None:
        return unmatched, None, series_by
    if by is not None and table.time is not None and _TREND.search(sentence):
        return "time", frequency, by  # how it changed by category: one series per category
    if by is not None:
        return by, None, series_by
    if table.time is not None:
        return "time", frequency, series_by
    categories = [c.name for c in table.columns if c.role == "category"]
    return (categories[0] if len(categories) == 1 else "time"), None, series_by


def _period(words: str, table: TableProfile) -> tuple[str, str] | None:
    """The time column and the period or range a chart's words keep ("from 1935 to 1954",
    "in 1978", "since 1970"), written as the table filters take it."""
    time = table.time
    if time is None:
        return None
    span = span_in(words)
    if span is not None:
        start, end = span
        if covers_all(start, end, time):
            return None  # "from 1948 on" over data that starts in 1948 keeps every row
        return time.columns[0], f"{start or time.first}–{end or time.last}"
    found = periods_in(words)
    if len(found) == 1:
        return time.columns[0], found[0].label
    if len(found) >= 2:
        return time.columns[0], f"{found[0].label}–{found[-1].label}"
    return None


def _frequency(sentence: str) -> Frequency | None:
    """The time grain the words say first ("every month … over those eight years": month)."""
    found = [
        (match.start(), grain)
        for grain, pattern in _TIME_WORDS
        if (match := pattern.search(sentence)) is not None
    ]
    return min(found)[1] if found else None


# "by the end of 2010", "by far", "by 2015": no column is meant.
_NOT_A_COLUMN = re.compile(
    r"^(?:the|a|an|end|far|then|now|how|itself|themselves|comparison|contrast|\d+|지역)\b", re.I
)


def _by_unmatched(sentence: str, table: TableProfile) -> str | None:
    """The words of a "by <words>" that name no column of the table ("by waiter")."""
    for match in _BY.finditer(sentence):
        said = match.group(0)
        words = (match.group("en") or match.group("ko") or "").strip()
        if not words or _NOT_A_COLUMN.match(words) or said.lower().startswith("per "):
            continue  # "miles per person" is a unit
        if any(pattern.search(said) for _, pattern in _TIME_WORDS) or _TREND.search(words):
            continue
        roles = ("category", "identifier", "time", "measure")
        if column_hits(said, table, roles) or column_hits(words, table, roles):
            continue
        return words.split()[0] if match.group("en") else words
    return None


def _by_column(sentence: str, table: TableProfile) -> str | None:
    for match in _BY.finditer(sentence):
        words = match.group("en") or match.group("ko") or ""
        if any(pattern.search(words) for _, pattern in _TIME_WORDS):
            continue
        hits = column_hits(words, table, ("category", "identifier"))
        if hits:
            return hits[0].column
    return None


def _series(sentence: str, table: TableProfile) -> str | None:
    match = _SERIES.search(sentence)
    if match is None:
        return None
    words = next(group for group in match.groups() if group)
    hits = column_hits(words, table, ("category", "identifier"))
    if hits:
        return hits[0].column
    categories = [c.name for c in table.columns if c.role == "category"]
    return categories[0] if len(categories) == 1 else None


def _aggregation(sentence: str) -> Aggregation | None:
    return next((name for name, pattern in _AGGREGATION if pattern.search(sentence)), None)


def _top(sentence: str) -> int | None:
    match = _TOP.search(sentence)
    if match is None:
        return None
    word = next(group for group in match.groups() if group).lower()
    return int(word) if word.isdigit() else _NUMBERS.get(word)


def _kind(sentence: str) -> ChartKind | None:
    if re.search(r"\bbar\b|막대|stacked", sentence, re.IGNORECASE):
        return "bar"
    if re.search(r"\bline\b|선\s?그래프|꺾은선", sentence, re.IGNORECASE):
        return "line"
    return None


def drop_charts(charts: Iterable[Chart], text: str) -> list[Chart]:
    """The charts a text keeps when it says to drop some: those its words name, every word of
    them ("drop the chart by party size"); all of them when it names none ("no charts"); none
    dropped when it names something no chart draws (the caller says it was not applied)."""
    charts = list(charts)
    clause = re.split(r"\bkeep\b|유지", text, maxsplit=1, flags=re.IGNORECASE)[0]
    said = set(phrase_terms(clause)) - _GENERIC
    if not said:
        return []
    # a chart is named when every word said of it is one of its words ("the revenue chart");
    # "the chart of sessions by quarter" names no chart of revenue by country
    named = [chart for chart in charts if said <= expand(_chart_terms(chart))]
    return [chart for chart in charts if chart not in named]


_GENERIC = frozenset(
    {
        "drop",
        "remove",
        "delete",
        "leave",
        "out",
        "no",
        "longer",
        "without",
        "skip",
        "lose",
        "want",
        "need",
        "don't",
        "any",
        "add",
        "remov",
        "delet",
        "the",
        "chart",
        "graph",
        "plot",
        "차트",
        "그래프",
    }
)


def _chart_terms(chart: Chart) -> set[str]:
    """The words a chart is known by: its measures, its dimension, its series and filters."""
    if chart.data is None:
        return set(phrase_terms(chart.reading.phrase))
    data = chart.data
    words = [*data.measures, data.dimension, data.series_by or ""]
    words += [value for values in data.filters.values() for value in values]
    return set(phrase_terms(" ".join(words)))


def with_scope(chart: Chart, text: str, scan: HomeScan) -> Chart:
    """A chart kept to the categories the whole request is about ("hotel occupancy in
    Queensland only"), for the columns its own sentence did not filter, draw or split by."""
    data = chart.data
    item = scan.get(data.file) if data is not None else None
    if data is None or item is None or item.profile is None:
        return chart
    taken = {data.dimension, data.series_by, *data.filters}
    scope = {
        column: values
        for column, values in values_named(text, item.profile).items()
        if column not in taken
    }
    period = _period(text, item.profile)
    if data.dimension != "time" and period is not None and period[0] not in taken:
        scope[period[0]] = [period[1]]  # "… in 2015 … a bar chart by state": 2015's bars
    if not scope:
        return chart
    return chart.model_copy(
        update={"data": data.model_copy(update={"filters": {**data.filters, **scope}})}
    )
