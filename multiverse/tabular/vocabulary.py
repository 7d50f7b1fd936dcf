"""What the words of a column's name or description say: its kind, unit and aggregation.

Kinds decide how values of one period combine: rates, shares, indexes and prices are averaged;
counts and amounts are added; a stock (population, a balance) is its period's last value.
Only words decide: nothing here knows a dataset.
"""

from __future__ import annotations

import re

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
               "inventories", "debt", "reserves", "holdings", "outstanding"}),
    ("count", {"count", "counts", "num", "cases", "visitors", "visits", "users", "deaths",
               "births", "arrivals", "passengers", "customers", "orders", "students"}),
    ("amount", {"total", "amount", "amounts", "sales", "revenue", "revenues", "cost", "costs",
                "spending", "expenditure", "expenditures", "income", "gdp", "gnp", "consumption",
                "investment", "exports", "imports", "production", "generation", "output",
                "profit", "profits", "earnings", "precipitation", "rainfall", "turnover",
                "budget", "payments", "emissions"}),
]
_PHRASES = [("count", "number of"), ("amount", "domestic product"), ("amount", "national product")]
# Korean compounds are not split into words: their endings and stems decide.
_KOREAN: list[tuple[str, str]] = [
    ("index", r"지수"), ("share", r"비중|점유율|구성비"), ("rate", r"율|률"),
    ("price", r"가격|단가|요금|임금"), ("stock", r"인구|잔액|잔고|재고|보유"),
    ("count", r"건수|횟수|인원|명$|수$"), ("amount", r"금액|매출|수출|수입|생산|소비|판매|액$"),
]
# Quantities of one moment that are averaged over a period, decided by their words.
_INTENSIVE = {"temperature", "temp", "humidity", "pressure", "speed", "wind", "density", "age",
              "height", "weight", "score", "rating", "average", "avg", "mean", "median",
              "capita", "per", "기온", "온도", "습도", "평균"}
_ANNUAL_RATE = re.compile(r"\b(?:seasonally adjusted )?(?:at an? )?annual(?:ized)? rates?\b|"
                          r"\bann\.? rate\b|\bsaar\b", re.IGNORECASE)
_IDENTIFIER = {"id", "ids", "uid", "uuid", "guid", "code", "codes", "zip", "zipcode", "postcode",
               "postal", "fips", "isbn", "sku", "serial", "key", "phone", "tel", "번호", "코드"}
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
            return kind
        if any(k == kind and f" {p} " in f" {lowered} " for k, p in _PHRASES):
            return kind
        korean = dict(_KOREAN)[kind]
        if hangul and any(re.search(korean, w) for w in words if re.search(r"[가-힣]", w)):
            return kind
    if words[:1] == ["n"] and len(words) > 1:
        return "count"  # `n_customers`
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


def unit_of_name(name: str) -> str | None:
    """A unit a column's name writes: `price (USD)`, `sales [$]`, `share_pct`, `기온(℃)`."""
    bracket = re.search(r"[(\[]\s*([^()\[\]]{1,24}?)\s*[)\]]\s*$", name)
    if bracket:
        return bracket.group(1)
    for word in reversed(name_tokens(name)):
        if word in _UNIT_WORDS:
            return _UNIT_WORDS[word]
    return None


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
