"""Words about a table: chart titles, axis labels, citations and the sentences stating a fact."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from multiverse.tabular.cells import format_number
from multiverse.tabular.dataset import plain
from multiverse.tabular.models import RANKING_KINDS
from multiverse.tabular.profiling import Analysis

if TYPE_CHECKING:
    from multiverse.tabular.charts import Plan

_GRAIN_NOUN = {"decade": "decade",
               "year": "year", "quarter": "quarter", "month": "month", "day": "date",
               "hour": "hour", "second": "time"}


def lower_first(text: str) -> str:
    """`Real GDP` → `real GDP` inside a sentence; one word (`GDP`, `Dp`, a column's own name)
    and a name whose every word is capitalised (`Consumer Price Index`) keep their capitals."""
    words = text.split()
    if len(words) > 1 and all(word[:1].isupper() for word in words):
        return text
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
    if plan.dimension == "_source" and 2 <= len(plan.measures) <= _NAMED_COLUMNS:
        # a wide group's columns as the bars: named, when few ("… of Coderre, Bergeron and Joly")
        text = f"{_head(plan, combined)} of {', '.join(plan.measures[:-1])} and {plan.measures[-1]}"
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


if TYPE_CHECKING:
    from multiverse.tabular.models import Citation, ColumnProfile, TableProfile

_SHOWN_VALUES = 5
_NAMED_COLUMNS = 6  # a chart of a wide group's columns names them in its title up to this
_FREQUENCY_WORDS = {"quarter": "quarterly", "month": "monthly", "week": "weekly", "day": "daily",
                    "hour": "hourly", "irregular": "irregular"}


def profile_summary(profile: TableProfile) -> str:
    """`CSV table, 51 rows: year (2001–2017), source (3: …), net_generation (thousand MWh).`"""
    excel = profile.format == "Excel"
    kind = f"Excel sheet {profile.sheet}" if excel else f"{profile.format} table"
    parts: list[str] = []
    time = profile.time
    wide = set(profile.wide.columns) if profile.wide else set()
    if time is not None:
        span = f"{time.first}–{time.last}" if time.first != time.last else time.first
        often = _FREQUENCY_WORDS.get(time.frequency)
        named = [c for c in time.columns if c not in wide]
        if named and profile.wide is not None and profile.wide.axis == "time":
            group = profile.wide.columns  # a year per row, a month per column
            parts.append(f"{', '.join(named)} × {group[0]} … {group[-1]} (one measure, {span}"
                         f"{', ' + often if often else ''})")
        elif named:
            parts.append(f"{', '.join(named)} ({span}{', ' + often if often else ''})")
        elif profile.wide is not None:
            parts.append(f"columns {profile.wide.columns[0]} … {profile.wide.columns[-1]} "
                         f"({len(wide)} periods of one measure, {span})")
    for column in profile.columns:
        if (time is not None and column.name in time.columns) or column.name in wide:
            continue
        parts.append(_column_words(column, profile.categories.get(column.name, [])))
    if profile.wide is not None and profile.wide.axis == "category":
        group = profile.wide.columns
        unit = f", {profile.wide.unit}" if profile.wide.unit else ""
        parts.append(f"{group[0]} … {group[-1]} ({len(group)} columns of one measure{unit})")
    rows = f"{format_number(profile.rows, 0)} row{'s' if profile.rows != 1 else ''}"
    return f"{kind}, {rows}: {', '.join(parts)}." if parts else f"{kind}, {rows}."


def _column_words(column: ColumnProfile, values: list[str]) -> str:
    """One column in a catalog line: a category's values, a measure's label and unit."""
    if column.distinct == 0:
        return f"{column.name} (empty)"
    if column.role == "category":
        shown = ", ".join(values[:_SHOWN_VALUES])
        more = ", …" if column.distinct > _SHOWN_VALUES else ""
        return f"{column.name} ({column.distinct}: {shown}{more})"
    if column.role in ("identifier", "text"):
        return f"{column.name} ({column.role})"
    # a label that only says the name's own words (`margin` of `margin_pct`) is not repeated
    said = column.label.lower().replace(" ", "_")
    words = [column.label] if said != column.name.lower() and not column.name.lower().startswith(
        f"{said}_") else []
    if column.unit:
        words.append(column.unit)
    return f"{column.name} ({', '.join(words)})" if words else column.name


def citation_text(citation: Citation, lang: str = "en") -> str:
    """`assets/x.csv rows 94–97` / `assets/x.csv 94–97행`."""
    lines = (str(citation.first) if citation.first == citation.last
             else f"{citation.first}–{citation.last}")
    gaps = citation.rows != citation.last - citation.first + 1
    if lang == "ko":
        sheet = f" {citation.sheet} 시트" if citation.sheet else ""
        count = f" 중 {citation.rows}개 행" if gaps else ""
        return f"{citation.file}{sheet} {lines}행{count}"
    sheet = f", sheet {citation.sheet}," if citation.sheet else ""
    noun = "row" if citation.first == citation.last else "rows"
    count = f"{citation.rows} of " if gaps else ""
    return f"{citation.file}{sheet} {count}{noun} {lines}"


if TYPE_CHECKING:
    from multiverse.tabular.models import Fact, LookupAnswer

_GRAIN_KO = {"decade": "10년 단위", "year": "연도", "quarter": "분기", "month": "월", "day": "일"}
_DIGIT_CODA = set("013678")  # 영 일 삼 육 칠 팔 end in a consonant; 이 사 오 구 do not


def has_coda(word: str) -> bool:
    """Whether a word as read in Korean ends in a consonant (it takes 은, 이, 으로, 이었)."""
    text = word.rstrip(" )]}\"'.")
    if not text:
        return False
    last = text[-1]
    if "가" <= last <= "힣":
        return (ord(last) - ord("가")) % 28 != 0
    if last.isdigit():
        return last in _DIGIT_CODA or text.endswith("0")
    if last == "%":
        return False  # 퍼센트
    if last.isascii() and last.isalpha():
        if last.isupper() and len(text) > 1 and text[-2].isupper():
            return last in "LMNR"  # an acronym is read letter by letter: 엘 엠 엔 알
        # Loanwords end most consonants in a vowel (`rate` 레이트, `product` 프로덕트);
        # l, m, n (and ng) stay a final consonant.
        return last.lower() in "lmn"
    return False


def _rieul(word: str) -> bool:
    """Whether a word ends in ㄹ as read (일, 칠, 팔, `l`, 엘, 알, a syllable with ㄹ)."""
    text = word.rstrip(" )]}\"'.")
    last = text[-1:]
    if last and "가" <= last <= "힣":
        return (ord(last) - ord("가")) % 28 == 8
    return last in ("1", "7", "8", "l", "L", "R") and not text.endswith("0")


def josa(word: str, with_coda: str, without: str) -> str:
    """The word with the particle its last sound takes (은/는, 이/가, 으로/로, 이었/였)."""
    if with_coda == "으로" and _rieul(word):
        return word + without  # a final ㄹ takes 로, not 으로
    return word + (with_coda if has_coda(word) else without)


def _amount(value: float | None, decimals: int | None, unit: str | None) -> str:
    """`9.70 %`, `21,933 thousand MWh`."""
    number = format_number(value, decimals)
    return f"{number} {unit}" if unit else number


def _period_ko(label: str | None) -> str:
    """A period as Korean says it: a year takes 년, other labels stay as written."""
    if not label:
        return ""
    if label.isdigit():
        return f"{label}년"
    parts = label.split("–")
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        return f"{parts[0]}–{parts[1]}년"
    return label


_NAME = re.compile(r"[A-Za-z][A-Za-z_ ]*")


def _named(fact: Fact) -> str:
    """A label read from a description, with the column's name a reader asks by ("stock of
    plant and equipment (capital)"); a label that is the name, or a name with digits, alone."""
    label = lower_first(fact.label)
    name = fact.measure
    if not _NAME.fullmatch(name) or plain(name) in plain(label) or name in ("series", "time"):
        # (a wide group's own names, "series" and "time", say nothing a reader asked by)
        return label
    return f"{label} ({name})"


def subject(fact: Fact, lang: str) -> str:
    """What a fact is about, with the aggregation that formed its periods."""
    label = _named(fact)
    grain = fact.frequency or "period"
    if lang == "ko":
        words = {"mean": f"평균 {label}", "sum": f"총 {label}",
                 "last": f"{label}({_GRAIN_KO.get(grain, '기간')}별 마지막 값)",
                 "count": f"{label} 값의 개수"}.get(fact.aggregation or "", label)
        ranked = fact.kind in RANKING_KINDS
        return f"{fact.category}의 {words}" if fact.category and not ranked else words
    words = {"mean": f"mean {label}", "sum": f"total {label}",
             "last": f"{label} (last value of each {grain})",
             "count": f"number of {label} values"}.get(fact.aggregation or "", label)
    if fact.category and fact.kind not in RANKING_KINDS:
        words += f" for {fact.category}"
    return words


def fact_words(fact: Fact, lang: str = "en") -> str:
    """A fact as one sentence with its citation."""
    value = _amount(fact.value, fact.decimals, fact.unit)
    start = _amount(fact.start_value, fact.decimals, fact.unit)
    end = _amount(fact.end_value, fact.decimals, fact.unit)
    percent = format_number(abs(fact.percent)) if fact.percent is not None else ""
    cite = citation_text(fact.citation, lang)
    if lang == "ko":
        return _fact_ko(fact, value, start, end, percent, cite)
    s = subject(fact, "en")
    p = fact.period
    if fact.column == "columns" and fact.kind in ("largest", "smallest"):
        how = {"sum": "total", "mean": "mean", "last": "latest value"}.get(
            fact.aggregation or "", "value")
        return (f"Of {fact.label}, {fact.category} had the {fact.kind} {how}"
                f"{' in ' + p if p else ''}, {value} ({cite}).")
    bounded = fact.start is not None or fact.end is not None  # a range asked: not the data's
    up = fact.percent is not None and fact.percent >= 0
    if fact.among == 1 and fact.kind in RANKING_KINDS:
        return upper_first(_alone_en(fact, s, value, start, end, percent)) + f" ({cite})."
    text = {
        "first": f"{s} was {value} in {p}" + ("" if bounded else ", the first period of the data"),
        "last": f"{s} was {value} in {p}" + ("" if bounded else ", the latest period of the data"),
        "min": f"{s} was lowest in {p}, at {value}",
        "max": f"{s} was highest in {p}, at {value}",
        "mean": f"{s} averaged {value} across {fact.citation.rows} rows" if not p else
                f"{s} was {value} in {p}" if fact.start == fact.end else
                f"{upper_first(s.removeprefix('mean '))} averaged {value} over {p}",
        "change": f"{s} went from {start} in {fact.start} to {end} in {fact.end}, a change of "
                  f"{_signed(fact)}" + (f" ({'+' if up else '-'}{percent} %)"
                                        if _relative(fact) else ""),
        "growth": f"{s} {'grew' if up else 'fell'} by {percent} % from {fact.start} to "
                  f"{fact.end}, from {start} to {end}",
        "cagr": f"{s} {'grew' if up else 'fell'} at a compound annual rate of {percent} % from "
                f"{fact.start} to {fact.end} ({format_number(fact.years, _places(fact.years))} "
                f"years)",
        "distinct": f"{s} has {value} different values",
        "columns": f"the table {fact.citation.file} has {value} columns: {fact.label}",
        "largest": f"{fact.category} had the largest {s}{' in ' + p if p else ''}, {value}",
        "smallest": f"{fact.category} had the smallest {s}{' in ' + p if p else ''}, {value}",
        "fastest_growing": f"{fact.category} grew fastest in {s} from {fact.start} to {fact.end}: "
                           f"by {percent} %, from {start} to {end}",
    }[fact.kind]
    return f"{upper_first(text)} ({cite})."


def _alone_en(fact: Fact, s: str, value: str, start: str, end: str, percent: str) -> str:
    """A ranking of one category, said as the only one with a value."""
    column = fact.column or "category"
    if fact.kind == "fastest_growing":
        return (f"{fact.category} is the only {column} with {s} in both {fact.start} and "
                f"{fact.end}: it {'grew' if (fact.percent or 0) >= 0 else 'fell'} by {percent} %, "
                f"from {start} to {end}")
    during = f" in {fact.period}" if fact.period and fact.period != fact.category else ""
    return f"{fact.category} is the only {column} with {s}{during}: {value}"


def _relative(fact: Fact) -> bool:
    """Whether a change is said with its percent change too: not for a rate or a share (a
    percent change of a rate misleads; its change is said in its own unit or in points)."""
    rate = re.search(r"\b(?:rate|ratio|share|percent(?:age)?|yield)\b", fact.label, re.I)
    return fact.percent is not None and not _points(fact) and rate is None


def _points(fact: Fact) -> bool:
    """Whether a change is in percentage points (a rate or share written in %)."""
    return fact.kind == "change" and (fact.unit or "").strip() in ("%", "percent")


def _signed(fact: Fact, lang: str = "en") -> str:
    """A change with its sign and unit: `+1,234 thousand MWh`; a rate's in percentage points
    (`+0.35 percentage points`, never a percent change of a percent)."""
    number = format_number(fact.value, fact.decimals, signed=True)
    if _points(fact):
        return f"{number}%p" if lang == "ko" else f"{number} percentage points"
    return f"{number} {fact.unit}" if fact.unit else number


def _places(years: float | None) -> int | None:
    """Whole years print without decimals."""
    return 0 if years is not None and float(years).is_integer() else None


def _fact_ko(fact: Fact, value: str, start: str, end: str, percent: str, cite: str) -> str:
    """A fact as one Korean sentence."""
    s = subject(fact, "ko")
    p = _period_ko(fact.period)
    bounded = fact.start is not None or fact.end is not None
    p0, p1 = _period_ko(fact.start), _period_ko(fact.end)
    up = fact.percent is not None and fact.percent >= 0
    change = _signed(fact, "ko")
    years = format_number(fact.years, _places(fact.years))
    was = f"{josa(value, '이었', '였')}습니다"
    if fact.among == 1 and fact.kind in RANKING_KINDS:
        only = f"{josa(fact.column or '항목', '은', '는')} {fact.category} 하나뿐입니다"
        if fact.kind == "fastest_growing":
            return (f"{p0}과 {p1}에 모두 {s} 값이 있는 {only}: {start}에서 "
                    f"{josa(end, '으로', '로')} {percent} % {'증가' if up else '감소'}했습니다 "
                    f"({cite}).")
        return f"{p + '에 ' if p else ''}{s} 값이 있는 {only}: {value} ({cite})."
    text = {
        "first": f"{p}의 {josa(s, '은', '는')} {was}" if bounded else
                 f"데이터의 첫 시점인 {p}의 {josa(s, '은', '는')} {was}",
        "last": f"{p}의 {josa(s, '은', '는')} {was}" if bounded else
                f"가장 최근 시점인 {p}의 {josa(s, '은', '는')} {was}",
        "min": f"{josa(s, '은', '는')} {p}에 {josa(value, '으로', '로')} 가장 낮았습니다",
        "max": f"{josa(s, '은', '는')} {p}에 {josa(value, '으로', '로')} 가장 높았습니다",
        "mean": f"{fact.citation.rows}개 행의 {s} 평균은 {was}" if not p else
                f"{p} {josa(s, '은', '는')} {was}" if fact.start == fact.end else
                f"{p0}부터 {p1}까지 {s.removeprefix('평균 ')}의 평균은 {was}",
        "change": f"{josa(s, '은', '는')} {p0} {start}에서 {p1} {josa(end, '으로', '로')} "
                  f"{change}" + (f"({'+' if up else '-'}{percent} %)"
                                       if _relative(fact) else "") + " 변했습니다",
        "growth": f"{josa(s, '은', '는')} {p0}부터 {p1}까지 {start}에서 {josa(end, '으로', '로')} "
                  f"{percent} % {'증가' if up else '감소'}했습니다",
        "cagr": f"{josa(s, '은', '는')} {p0}부터 {p1}까지 {years}년 동안 연평균 {percent} % "
                f"{'성장' if up else '감소'}했습니다",
        "distinct": f"{s}에는 서로 다른 값이 {value}개 있습니다",
        "columns": f"{fact.citation.file}의 열은 {value}개입니다: {fact.label}",
        "largest": f"{p + ' ' if p else ''}{josa(s, '은', '는')} {fact.category}에서 "
                   f"{josa(value, '으로', '로')} 가장 컸습니다",
        "smallest": f"{p + ' ' if p else ''}{josa(s, '은', '는')} {fact.category}에서 "
                    f"{josa(value, '으로', '로')} 가장 작았습니다",
        "fastest_growing": f"{p0}부터 {p1}까지 {josa(s, '이', '가')} 가장 빠르게 늘어난 항목은 "
                           f"{josa(str(fact.category), '으로', '로')}, {start}에서 "
                           f"{josa(end, '으로', '로')} {percent} % 증가했습니다",
    }[fact.kind]
    return f"{text} ({cite})."


def lookup_words(answer: LookupAnswer, lang: str = "en") -> str:
    """A looked-up cell as a sentence, or what is nearest when no cell matched."""
    label = lower_first(answer.label or answer.query.column)
    where = list(answer.where.values())
    if answer.found and answer.citation is not None:
        value = (_amount(answer.number, answer.decimals, answer.unit) if answer.number is not None
                 else f"“{answer.text}”")
        cite = citation_text(answer.citation, lang)
        if lang == "ko":
            owner = f"{', '.join(where)}의 " if where else ""
            period = f"{_period_ko(answer.period)} " if answer.period else ""
            was = f"{josa(value, '이었', '였')}습니다"
            return f"{period}{owner}{josa(label, '은', '는')} {was} ({cite})."
        owner = f" for {', '.join(where)}" if where else ""
        period = f" in {answer.period}" if answer.period else ""
        return f"{upper_first(label)}{owner}{period} was {value} ({cite})."
    asked = ", ".join(f"{k} = {v}" for k, v in answer.query.selectors.items())
    near = "; ".join(
        f"{', '.join(c.selectors.values())}: {c.text} ({'행 ' if lang == 'ko' else 'row '}{c.line})"
        for c in answer.nearest)
    if lang == "ko":
        text = f"{answer.query.file}에는 {asked}인 {label} 값이 없습니다"
        return text + (f". 가까운 값: {near}." if near else ".")
    text = f"{answer.query.file} has no {label} for {asked}"
    return text + (f"; the nearest: {near}." if near else ".")
