"""What a column is: its name's words, what a description says of it, and its cells' kind."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from multiverse.tabular.cells import Numbers

KINDS = ("rate", "share", "index", "price", "count", "amount", "stock", "other")
AGGREGATION = {"rate": "mean", "share": "mean", "index": "mean", "price": "mean", "count": "sum",
               "amount": "sum", "stock": "last", "other": "mean"}

# Checked in this order: `consumer price index` is an index, `total population` a stock,
# `population growth rate` a rate.
_WORDS: list[tuple[str, set[str]]] = [
    ("index", {"index", "indexes", "indices", "cpi", "ppi", "idx"}),
    ("share", {"share", "shares", "proportion", "fraction"}),
    ("rate", {"rate", "rates", "pct", "percent", "percentage", "ratio", "yield", "inflation",
              "unemployment", "margin", "growth"}),
    ("price", {"price", "prices", "fare", "fares", "tariff", "wage", "wages"}),
    ("stock", {"population", "pop", "stock", "stocks", "level", "levels", "balance", "inventory",
               "inventories", "debt", "reserves", "holdings", "outstanding", "unemployed",
               "employed", "employees", "workers", "members", "subscribers", "enrollment",
               "employment", "jobs", "payroll", "payrolls", "nonfarm", "headcount",
               "workforce"}),
    ("count", {"count", "counts", "num", "cases", "visitors", "visits", "users", "deaths",
               "births", "arrivals", "passengers", "customers", "orders", "students",
               "quantity", "qty", "votes", "ballots", "marriages", "divorces", "accidents",
               "crimes", "arrests", "incidents", "admissions", "trips", "flights", "sessions",
               "bookings", "calls", "downloads", "clicks", "views", "transactions", "tickets",
               "shipments", "requests", "applications", "installs", "registrations"}),
    ("amount", {"total", "amount", "amounts", "sales", "revenue", "revenues", "cost", "costs",
                "spending", "expenditure", "expenditures", "income", "gdp", "gnp", "consumption",
                "investment", "exports", "imports", "production", "generation", "output",
                "profit", "profits", "earnings", "takings", "precipitation", "rainfall", "turnover",
                "tip", "tips", "bill", "fee", "fees",
                "budget", "payments", "emissions"}),
]
_CHANGE_WORDS = {"change", "changes", "diff", "delta", "added", "net", "gain", "gains"}
_PHRASES = [("count", "number of"), ("amount", "domestic product"), ("amount", "national product"),
            ("stock", "market value"), ("stock", "book value")]
# Korean compounds are not split into words: their endings and stems decide.
_KOREAN: list[tuple[str, str]] = [
    ("index", r"지수"), ("share", r"비중|점유율|구성비"), ("rate", r"율|률"),
    ("price", r"가격|단가|요금|임금"), ("stock", r"인구|잔액|잔고|재고|보유"),
    ("count", r"건수|횟수|인원|명$|수$"), ("amount", r"금액|매출|수출|수입|생산|소비|판매|액$"),
]
# Quantities of one moment that are averaged over a period, decided by their words.
_INTENSIVE = {"temperature", "temp", "humidity", "pressure", "speed", "wind", "density", "age",
              "height", "weight", "score", "rating", "average", "avg", "mean", "median",
              "capita", "per", "percap", "percapita", "log", "logarithm", "ln", "기온", "온도",
              "습도", "평균"}  # a logarithm or a per-head value is never summed
_ANNUAL_RATE = re.compile(r"\b(?:seasonally adjusted )?(?:at an? )?annual(?:ized)? rates?\b|"
                          r"\bann\.? rate\b|\bsaar\b", re.IGNORECASE)
_IDENTIFIER = {"id", "ids", "iso", "uid", "uuid", "guid", "code", "codes", "zip", "zipcode",
               "postcode", "postal", "fips", "isbn", "sku", "serial", "key", "phone", "tel",
               "번호", "코드"}
_DATE_WORDS = {"date", "dates", "month", "months", "period", "time", "day", "ym", "yyyymm",
               "yyyymmdd", "yearmonth", "timestamp", "datetime", "일자", "날짜", "월", "기간"}
_UNIT_WORDS = {"pct": "%", "percent": "%", "percentage": "%", "usd": "US$", "krw": "KRW",
               "eur": "EUR", "gbp": "GBP", "jpy": "JPY", "won": "원", "kg": "kg", "km": "km",
               "mwh": "MWh", "kwh": "kWh", "gwh": "GWh", "twh": "TWh", "tonnes": "tonnes",
               "tons": "tons", "mm": "mm", "celsius": "°C", "fahrenheit": "°F"}


def name_tokens(text: str) -> list[str]:
    """Lowercase words of a name: `realGDP_growth` → real, gdp, growth."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", text)
    return [token.lower() for token in re.findall(r"[^\W_]+", spaced)]


def kind_of(text: str) -> str | None:
    """The kind of quantity a name or a description says, or None when its words do not."""
    words = name_tokens(_ANNUAL_RATE.sub(" ", text))
    lowered = " ".join(words)
    hangul = "".join(w for w in words if re.search(r"[가-힣]", w))
    for kind, vocabulary in _WORDS:
        if any(word in vocabulary or _run_together(word) == kind for word in words):
            if kind == "stock" and _CHANGE_WORDS & set(words):
                return "count"  # "nonfarm_change": the change of a level is a flow, summed
            return kind
        if any(k == kind and f" {p} " in f" {lowered} " for k, p in _PHRASES):
            return kind
        korean = dict(_KOREAN)[kind]
        if hangul and any(re.search(korean, w) for w in words if re.search(r"[가-힣]", w)):
            return kind
    if words[:1] == ["n"] and len(words) > 1:
        return "count"  # `n_customers`
    if any(w == "per" and (n.isdigit() or n in ("capita", "head", "person")) for w, n in
           itertools.pairwise(words)):
        return "rate"  # `divorces_per_1000`, "per capita"
    return None


# Endings that mark a run-together name (`realgdp`, `unitprice`): none ends a common word.
_ENDINGS = {"gdp": "amount", "gnp": "amount", "sales": "amount", "cpi": "index", "ppi": "index",
            "index": "index", "price": "price", "prices": "price"}


def _run_together(word: str) -> str | None:
    """The kind a run-together name's ending says (`tbilrate` is a rate, `separate` is not)."""
    for ending, kind in _ENDINGS.items():
        if len(word) > len(ending) and word.endswith(ending):
            return kind
    head = word.removesuffix("rate")
    # `tbil`+`rate` is an abbreviation; `sepa`+`rate`, `corpo`+`rate` are words of their own.
    if head != word and head and sum(head.count(v) for v in "aeiou") <= 1 and len(head) >= 3:
        return "rate"
    return None


def averaged(text: str) -> bool:
    """Whether the words say the values are averaged over time (a temperature, a flow at an
    annual rate, an average, a per-capita value)."""
    if _ANNUAL_RATE.search(text):
        return True
    return any(word in _INTENSIVE for word in name_tokens(text))


def annual_rate(text: str) -> bool:
    """Whether a description states a flow at an annual rate (its periods are averaged)."""
    return bool(_ANNUAL_RATE.search(text))


# A scale a name writes after its unit (`revenue_eur_m`, `sales_usd_bn`) or alone (`units_k`,
# `pop_thousands`). `m` and `b` alone may be metres or bytes: a scale only after a currency.
_SCALE_WORDS = {"k": "thousand", "thousand": "thousand", "thousands": "thousand",
                "m": "million", "mn": "million", "mln": "million", "mio": "million",
                "million": "million", "millions": "million", "b": "billion", "bn": "billion",
                "billion": "billion", "billions": "billion", "tn": "trillion",
                "trillion": "trillion"}
_SCALE_ONLY_AFTER_MONEY = {"m", "b"}
_MONEY = {"US$", "KRW", "EUR", "GBP", "JPY", "원"}


def _name_unit(words: list[str]) -> tuple[str | None, int]:
    """The unit the last words of a name write, and how many words it takes."""
    if not words:
        return None, 0
    last = words[-1]
    if last in _SCALE_WORDS and len(words) > 1 and _UNIT_WORDS.get(words[-2]) in _MONEY:
        return f"{_UNIT_WORDS[words[-2]]} {_SCALE_WORDS[last]}", 2
    if last in _UNIT_WORDS:
        return _UNIT_WORDS[last], 1
    kelvin = last == "k" and bool({"temp", "temperature", "kelvin"} & set(words))
    if last in _SCALE_WORDS and last not in _SCALE_ONLY_AFTER_MONEY and len(words) > 1 and (
        not kelvin
    ):
        return _SCALE_WORDS[last], 1
    return None, 0


def unit_of_name(name: str) -> str | None:
    """A unit a column's name writes: `price (USD)`, `sales [$]`, `share_pct`, `기온(℃)`, and
    its scale: `revenue_eur_m` is in EUR million, `units_k` in thousands."""
    bracket = re.search(r"[(\[]\s*([^()\[\]]{1,24}?)\s*[)\]]\s*$", name)
    if bracket:
        return bracket.group(1)
    words = name_tokens(name)
    for end in range(len(words), 0, -1):
        unit, _ = _name_unit(words[:end])
        if unit:
            return unit
    return None


def unit_words_at_end(words: list[str]) -> int:
    """How many of a header's last words write its unit (`revenue eur m` → 2), 0 for none."""
    return _name_unit([word.lower() for word in words])[1]


def identifier_name(name: str) -> bool:
    """Whether a name says its column identifies things (an id, a code, a zip) rather than
    measures them."""
    words = name_tokens(name)
    stripped = name.strip().lower().rstrip(".")
    return stripped in ("#", "no", "nr", "obs", "row", "rownames", "unnamed: 0") or any(
        word in _IDENTIFIER for word in words) or bool(re.search(r"Id$|ID$", name.strip()))


def says_date(name: str) -> bool:
    """Whether a column's name says it holds dates or months (so `200103` may be one)."""
    return any(word in _DATE_WORDS for word in name_tokens(name))


_BULLET = r"(?P<indent>\s*)(?:[-*•+]\s+|\d+[.)]\s+)?[`*'\"]*"
_AFTER_NAME = (r"[`*'\"]*\s*(?:\((?P<unit>[^)]{1,30})\))?\s*(?:[-–—:=]|\s{2,}|\t)\s*"
               r"(?P<text>\S.*)$")
_NOT_UNITS = re.compile(
    r"^(?:not )?seasonally adjusted|^s\.?a\.?$|^n\.?s\.?a\.?$|annual rate|ann\.? rate|^see |"
    r"^e\.g\.|^i\.e\.|^estimated?$|^saar$|^nominal$|^real$|^end of",
    re.IGNORECASE,
)
_UNIT_HINT = re.compile(
    r"%|\$|€|£|¥|₩|원|달러|\b(?:dollars?|euros?|won|yen|pounds?|thousands?|millions?|billions?|"
    r"trillions?|bil|mil|mn|bn|percent|per cent|kg|km|tonnes?|tons?|barrels?|liters?|litres?|"
    r"[kmgt]wh|megawatthours?|kilowatthours?|mm|cm|°[cf]|degrees?|people|persons?|units?|"
    r"index|points?|usd|krw|eur)\b|=\s*100|천|만|억|백만|명|개|건|℃|\b10\^\d+|\bm\^?[23]\b",
    re.IGNORECASE,
)
_IN_UNIT = re.compile(
    r"\b(?:in|measured in|expressed in|unit:)\s+(10\^\d+,?\s*[a-z]+\^?\d?\b|"  # 10^8 m^3
    r"(?:thousands? of |millions? of |billions? of )?"
    r"(?:(?:US|U\.S\.|constant|current|chained)\s+)*(?:\d{4}\s+)?[\w$€£¥₩%°]+(?:\s+[\w$]+)?)",
    re.IGNORECASE,
)
_QUALIFIERS = re.compile(
    r"^(?:(?:not\s+)?seasonally\s+adjusted|end\s+of\s+(?:the\s+)?(?:quarter|period|month|year)|"
    r"quarterly|monthly|annual|yearly|daily|weekly)\s*,?\s*",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Definition:
    """What the texts say about one column."""

    text: str  # the whole definition, continuation lines joined
    label: str  # a readable name for it
    unit: str | None


def find_definitions(texts: Sequence[str], columns: Sequence[str]) -> dict[str, Definition]:
    """Each of `columns` that a text defines, with its definition (the first text wins)."""
    known = {column.strip().lower(): column for column in columns}
    found: dict[str, tuple[str, str | None]] = {}
    for text in texts:
        rows = _table_rows(text, known) + _definition_lines(text, known)
        for name, body, unit in rows + _definition_blocks(text, known):
            found.setdefault(name, (body, unit))
    return {name: _definition(body, unit) for name, (body, unit) in found.items()}


_COUNTS = re.compile(r"\b(?:counts? of|number of|numbers of|votes|voting results)\b|\b\w+ counts\b",
                     re.IGNORECASE)


def says_counts(texts: Sequence[str]) -> bool:
    """Whether a table's description opens by saying its values are counts (its first lines)."""
    return any(_COUNTS.search(text[:800]) for text in texts)


def prose_units(texts: Sequence[str], columns: Sequence[str]) -> dict[str, str]:
    """Units that prose states for a column it names in words: "the annual net generation of
    electricity ... in thousand megawatthours" gives `net_generation` its unit (only the unit:
    prose around a name says too much else to decide a kind by)."""
    units: dict[str, str] = {}
    for column in columns:
        words = re.sub(r"[_\s]+", " ", column).strip()
        if len(words) < 4:
            continue
        pattern = re.compile(rf"(?<!\w){re.escape(words)}(?!\w)", re.IGNORECASE)
        for text in texts:
            for sentence in re.split(r"(?<=[.!?])\s+", " ".join(text.split())):
                found = pattern.search(sentence)
                if found is None:
                    continue
                said = sentence[found.start():]
                unit = unit_in(said)
                if unit is None and re.match(rf"{re.escape(words)}\s+(?:is|are)\s+(?:a|the)?\s*"
                                             r"(?:percentage|per ?cent|share)\b", said, re.I):
                    unit = "%"  # "Occupancy is a percentage of rooms occupied"
                if unit:
                    units.setdefault(column, unit)
    return units


_CURRENCY = re.compile(r"\$|€|£|¥|₩|원|\b(?:dollars?|euros?|pounds?|yen|won|usd|eur|gbp|jpy|krw|"
                       r"aud|cad|chf|cny|rupees?|francs?)\b", re.IGNORECASE)


def kind_of_unit(unit: str | None) -> str | None:
    """The kind a unit says by itself: money is an amount, a percentage a rate."""
    if not unit:
        return None
    if unit.strip() == "%" or re.search(r"\bper ?cent|percentage", unit, re.IGNORECASE):
        return "rate"
    return "amount" if _CURRENCY.search(unit) else None


def _definition_blocks(text: str, known: dict[str, str]) -> list[tuple[str, str, str | None]]:
    """A name alone on its line, its definition in the paragraph below it (R documentation,
    definition lists): `pce` / (blank) / `personal consumption expenditures, in billions…`."""
    result: list[tuple[str, str, str | None]] = []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        name = line.strip().strip("`*'\":").strip()
        if name.lower() not in known or len(line.strip()) > len(name) + 6:
            continue
        body: list[str] = []
        for following in lines[index + 1 : index + 12]:
            stripped = following.strip()
            if not stripped:
                if body:
                    break
                continue
            if stripped.strip("`*'\":").strip().lower() in known:
                break
            body.append(stripped)
        if body:
            result.append((known[name.lower()], " ".join(body), None))
    return result


def _definition_lines(text: str, known: dict[str, str]) -> list[tuple[str, str, str | None]]:
    """`name - text` lines and the more indented lines that continue them."""
    names = "|".join(re.escape(name) for name in sorted(known, key=len, reverse=True))
    pattern = re.compile(f"^{_BULLET}(?P<name>{names}){_AFTER_NAME}", re.IGNORECASE)
    result: list[tuple[str, str, str | None]] = []
    current: list[str] | None = None
    indent = 0
    for line in text.splitlines():
        match = pattern.match(line) if names else None
        if match:
            current = [match["text"].strip()]
            indent = len(match["indent"].expandtabs())
            result.append((known[match["name"].lower()], current[0], match["unit"]))
        elif current is not None and line.strip() and len(line) - len(line.lstrip()) > indent:
            current.append(line.strip())
            result[-1] = (result[-1][0], " ".join(current), result[-1][2])
        else:
            current = None
    return result


def _table_rows(text: str, known: dict[str, str]) -> list[tuple[str, str, str | None]]:
    """Rows of markdown tables whose first cell names a column; a `unit` column gives its unit."""
    result: list[tuple[str, str, str | None]] = []
    header: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("|"):
            header = []
            continue
        cells = [cell.strip().strip("`*") for cell in stripped.strip("|").split("|")]
        if all(re.fullmatch(r":?-{2,}:?", cell) for cell in cells if cell):
            continue
        name = known.get(cells[0].lower()) if cells else None
        if name is None:
            header = [cell.lower() for cell in cells]
            continue
        unit_at = next((i for i, h in enumerate(header) if h in ("unit", "units", "단위")), None)
        unit = cells[unit_at] if unit_at is not None and unit_at < len(cells) else None
        body = " ".join(c for i, c in enumerate(cells[1:], start=1) if i != unit_at and c)
        result.append((name, body, unit or None))
    return result


def _definition(body: str, unit: str | None) -> Definition:
    """A definition's label and unit from its text."""
    unit = (unit or "").strip() or unit_in(body)
    label = _label(body)
    if unit and label.lower().endswith(f" in {unit.lower()}"):
        label = label[: -len(f" in {unit}")]  # "Gross investment in 1947 dollars": the unit
    head, _, tail = label.rpartition(", ")
    if unit and head and tail and (unit.lower().startswith(tail.lower())
                                   or _short_unit(tail.rstrip(".")) == unit):
        label = head  # "Real gross domestic product, Bil. of chained 2005 US$": the unit
    return Definition(body, label, unit)


def unit_in(text: str) -> str | None:
    """The unit a definition states: a parenthesised unit first, else `in <unit>`."""
    groups: list[str] = re.findall(r"\(([^()]*(?:\([^()]*\)[^()]*)*)\)", text)
    for group in groups:
        if re.search(r"[*/+]|\bt-1\b|\bln\b", group) and "per" not in group:
            continue  # a formula, not a unit
        for part in (p.strip().rstrip(".") for p in group.split(",")):
            if part and not _NOT_UNITS.search(part) and _UNIT_HINT.search(part):
                return part
    for match in _IN_UNIT.finditer(text):
        if _UNIT_HINT.search(match.group(1)):
            return _short_unit(match.group(1).strip())
    # "Real gross domestic product, Bil. of chained 2005 US$ (SAAR)": a clause after a comma
    for clause in re.split(r",\s+", re.sub(r"\s*\([^()]*\)", "", text))[1:]:
        clause = clause.strip().rstrip(".")
        if clause and len(clause) <= 40 and _UNIT_HINT.match(clause) and not _NOT_UNITS.search(
                clause):
            return _short_unit(clause)
    return None


_SHORT_UNITS = {"megawatthours": "MWh", "megawatthour": "MWh", "kilowatthours": "kWh",
                "kilowatthour": "kWh", "gigawatthours": "GWh", "gigawatthour": "GWh",
                "percent": "%", "per cent": "%"}


def _short_unit(unit: str) -> str:
    """A unit as it is usually written: `thousand megawatthours` → `thousand MWh`."""
    for long, short in _SHORT_UNITS.items():
        unit = re.sub(rf"\b{long}\b", short, unit, flags=re.IGNORECASE)
    return unit


def _label(body: str) -> str:
    """A short readable name from a definition: its first clause without qualifiers."""
    head = re.split(r"\s*\(|:\s|;\s|\.\s|\.$|,\s+(?:in|measured in|as)\s|,\s*<?https?://", body,
                    maxsplit=1)[0].strip()
    while (stripped := _QUALIFIERS.sub("", head)) != head:
        head = stripped
    head = re.sub(r"\s+", " ", head.replace("`", "")).strip(" ,.-")
    if len(head) > 60:
        head = head[:60].rsplit(" ", 1)[0]
    return head


def states_annual_rate(definition: Definition | None) -> bool:
    """Whether a column's definition states a flow at an annual rate."""
    return definition is not None and annual_rate(definition.text)


if TYPE_CHECKING:
    import pandas as pd

def identifies_rows(name: str, cells: pd.Series, numbers: Numbers) -> bool:
    """Whether a column names rows (an id, a code, a zip, a row number) rather than measuring."""
    if identifier_name(name):
        return True
    values = numbers.values.dropna()
    if numbers.numeric and len(values) >= 3 and len(values) == len(cells):
        start = values.iloc[0]
        steps = values.diff().dropna()
        generic = re.fullmatch(r"(?:index|idx|row|rownum|seq|sequence|number|n|unnamed.*|"
                               r"column \d+|순번|번호)?", name.strip().lower())
        if start in (0, 1) and (steps == 1).all() and generic:
            return True  # 1, 2, 3 ... n under a name that says nothing else: a row number
    texts = numbers.distinct
    if texts and all(re.fullmatch(r"0\d+", t) for t in texts):
        return True  # zero-padded codes are labels, not numbers
    if numbers.numeric or len(texts) < 20 or len(texts) < len(cells):
        return False
    return all(re.fullmatch(r"[\w-]+", t) and re.search(r"\d", t) for t in texts)


def measure_kind(name: str, definition: Definition | None, numbers: Numbers,
                 values: pd.Series, *, counted: bool = False) -> tuple[str, str, bool]:
    """A measure's kind, its aggregation, and whether words or values decided the aggregation.

    `counted`: the table's description says its values are counts ("monthly casualty counts"),
    which decides a whole-number measure its own words leave open.
    """
    text = definition.text if definition else ""
    # The definition's head first: a formula in its parentheses may name other measures.
    label = definition.label if definition else ""
    kind: str | None = None
    if re.match(r"\s*(?:%|percent(?:age)? of|share of|proportion of)", label or text, re.I) or (
        re.search(r"\bdivided by\b|\bratio of\b", text, re.IGNORECASE)
    ):
        kind = "rate"  # "% of population in urbanized areas", "… divided by the number of …"
    kind = (kind or (kind_of(label) if label else None) or (kind_of(text) if text else None)
            or kind_of(name))
    if kind is None and re.search(r"\bper ?cent", label or text, re.IGNORECASE):
        kind = "rate"
    if kind is None and counted:
        filled = values.dropna()
        if len(filled) and (filled % 1 == 0).all() and (filled >= 0).all():
            kind = "count"
    if kind is None and numbers.percent >= 0.5 * max(numbers.parsed, 1):
        filled = values.dropna()
        kind = "share" if len(filled) and filled.between(0, 100).all() else "rate"
    if kind is None and text and re.search(r"\bend of (?:the )?(?:quarter|period|month|year)\b|"
                                           r"\bas of\b", text, re.IGNORECASE):
        kind = "stock"  # a level read at the end of each period
    if states_annual_rate(definition) or averaged(text) or averaged(name):
        return kind or "other", "mean", True
    return kind or "other", AGGREGATION[kind or "other"], kind is not None


def measure_unit(name: str, definition: Definition | None, numbers: Numbers) -> str | None:
    """A measure's unit: a description's first, then the name's, then the cells' % or $."""
    if definition is not None:
        unit = definition.unit or unit_in(definition.text)
        if unit:
            return unit
    unit = unit_of_name(name)
    if unit:
        return unit
    if numbers.percent >= 0.5 * max(numbers.parsed, 1):
        return "%"
    return numbers.currency


def category_or_text(reading: Numbers) -> str:
    """`text` for prose (long cells of many words), else `category`."""
    sample = reading.distinct[:500]
    if not sample:
        return "category"
    length = sum(len(text) for text in sample) / len(sample)
    words = sum(len(text.split()) for text in sample) / len(sample)
    return "text" if length > 40 or words > 5 else "category"
