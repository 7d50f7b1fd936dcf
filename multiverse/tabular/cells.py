"""Cell texts read as numbers and time labels, numbers written back as a reader expects, and a
column's cells read once as numbers."""

from __future__ import annotations

import calendar
import datetime as dt
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

# Cell texts that mean "no value" in the data files people have.
MISSING = frozenset(
    {"", "na", "n/a", "n.a.", "nan", "null", "none", "nil", "-", "--", "—", "–", "..", ".", "...",
     "#n/a", "#value!", "#div/0!", "?"}
)

_NUMBER = re.compile(
    r"""
    (?P<open>\()?
    (?P<sign1>[-+−])?
    (?:(?P<cur1>US\$|A\$|C\$|R\$|[$€£¥₩]|USD|EUR|GBP|JPY|KRW|CNY)\s?)?
    (?P<sign2>[-+−])?
    (?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+)
    (?P<exp>[eE][-+]?\d+)?
    \s?(?P<suffix>%|‰|원|달러|(?:USD|EUR|KRW))?
    (?P<close>\))?
    """,
    re.VERBOSE,
)
_DECIMAL_COMMA = re.compile(r"[-+−]?\d{1,3}(?:\.\d{3})*,\d+|[-+−]?\d+,\d+")


@dataclass(frozen=True, slots=True)
class CellNumber:
    """What a cell's text says as a number."""

    value: float
    decimals: int  # digits after the decimal point as written: the cell's precision
    percent: bool  # written with a % sign
    currency: str | None  # a currency sign or code written with it


def parse_number(text: str, *, decimal_comma: bool = False) -> CellNumber | None:
    """The number a cell's text holds (`1,234`, `9.7%`, `$12`, `(5)`), or None."""
    cell = text.strip().replace("\u00a0", "").replace("\u202f", "")
    if cell.lower() in MISSING:
        return None
    if decimal_comma:
        if not _DECIMAL_COMMA.fullmatch(cell.lstrip("$€£¥₩")) and "," in cell:
            return None
        cell = cell.replace(".", "").replace(",", ".")
    match = _NUMBER.fullmatch(cell)
    if match is None or bool(match["open"]) != bool(match["close"]):
        return None
    if match["sign1"] and match["sign2"]:
        return None
    digits = match["digits"].replace(",", "")
    exponent = match["exp"] or ""
    value = float(digits + exponent)
    negative = (match["sign1"] or match["sign2"] or "") in ("-", "−") or bool(match["open"])
    decimals = _written_decimals(digits, exponent)
    suffix = match["suffix"] or ""
    currency = (match["cur1"] or "").strip() or (suffix if suffix not in ("%", "‰") else "") or None
    if suffix == "‰":
        value /= 10
    return CellNumber(-value if negative else value, decimals, suffix == "%", currency)


# A binary float printed whole carries 16-17 significant digits (`23348.139730000006`, as a
# program writing its floats' repr leaves them): beyond 15 they are the float's noise, not a
# precision the source meant, and a deliverable printing them would print noise.
_FLOAT_DIGITS = 15


def _written_decimals(digits: str, exponent: str = "") -> int:
    """Digits after the point as written (`1.50` has 2, `1.5e-3` has 4), float noise past 15
    significant digits left out (`23348.139730000006` has 5, as `23348.13973`)."""
    whole, _, fraction = digits.partition(".")
    shift = int(exponent[1:]) if exponent else 0
    if len((whole + fraction).lstrip("0")) > _FLOAT_DIGITS:
        shortest = f"{float(digits + exponent):.{_FLOAT_DIGITS}g}"
        mantissa, _, power = shortest.partition("e")
        fraction, shift = mantissa.partition(".")[2], int(power) if power else 0
    return max(0, len(fraction) - shift)


def looks_decimal_comma(cells: list[str]) -> bool:
    """Whether a column writes its decimals with a comma (`3,5`), as much of Europe does."""
    comma = [c for c in cells if "," in c]
    if not comma or any("." in c and c.rfind(".") > c.rfind(",") for c in comma):
        return False
    # `1,234` alone is a thousands separator; a decimal comma shows itself by another width.
    return any(len(c.strip().rpartition(",")[2]) != 3 for c in comma) and all(
        _DECIMAL_COMMA.fullmatch(c.strip()) for c in comma
    )


def format_number(value: float | None, decimals: int | None = None, *, signed: bool = False) -> str:
    """A number as every deliverable prints it: thousands separators, a fixed precision.

    `decimals` is the source's precision for a cell (or a sum of cells); None means a computed
    value (a mean, a percent): two decimals, more only to show two significant digits below 1.
    """
    if value is None or math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    places = computed_decimals(value) if decimals is None else max(0, decimals)
    text = f"{value:,.{places}f}"
    if text.lstrip("-").strip("0.,") == "":
        text = text.lstrip("-")  # -0.00 prints as 0.00
    if signed and not text.startswith("-") and text.strip("0.,") != "":
        text = "+" + text
    return text


def computed_decimals(value: float) -> int:
    """Decimals for a computed value: 2, or enough for two significant digits below 1."""
    size = abs(value)
    if size == 0 or size >= 1:
        return 2
    return min(10, max(2, 1 - math.floor(math.log10(size))))


_PRINTED = re.compile(r"(?<![\w.])[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.,])[-+]?\d+(?:\.\d+)?")


def numbers_in(text: str) -> list[str]:
    """Every number in a text as printed (`9.70`, `21,933`, `+12.5`), in order."""
    return [match.group(0) for match in _PRINTED.finditer(text)]


# Coarse to fine. A week is reported as a frequency but keyed and labelled by its day.
GRAINS = ("decade", "year", "quarter", "month", "week", "day", "hour", "second")
RANK = {grain: index for index, grain in enumerate(GRAINS)}
PER_YEAR = {"decade": 0.1, "year": 1.0, "quarter": 4.0, "month": 12.0, "week": 365.25,
            "day": 365.25, "hour": 8766.0, "second": 31_557_600.0}
EPOCH = dt.date(1970, 1, 1)
YEARS = (1000, 2200)  # the years a time label may name

MONTHS = {
    name: number
    for number, names in enumerate(
        [("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",),
         ("jun", "june"), ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"),
         ("oct", "october"), ("nov", "november"), ("dec", "december")],
        start=1,
    )
    for name in names
}
_MON = r"(?P<mon>[a-z]{3,9})\.?"
_CLOCK = (r"(?:[t ]+(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?:\.\d+)?)?)?"
          r"\s*(?:z|utc|[+-]\d{2}:?\d{2})?")
_FORMS: list[tuple[str, re.Pattern[str]]] = [
    (form, re.compile(pattern, re.IGNORECASE))
    for form, pattern in [
        ("year", r"(?:fy\s?)?(?P<y>\d{4})\s*년?"),
        ("quarter", r"(?P<y>\d{4})\s*[-/ ]?\s*q(?P<q>[1-4])"),
        ("quarter", r"q(?P<q>[1-4])\s*[-/ ]?\s*(?P<y>\d{4})"),
        ("quarter", r"(?P<q>[1-4])q\s*[-/ ]?\s*(?P<y>\d{4})"),
        ("quarter", r"(?P<y>\d{4})\s*년?\s*(?P<q>[1-4])\s*분기"),
        ("date", r"(?P<y>\d{4})([-/.])(?P<m>\d{1,2})\2(?P<d>\d{1,2})" + _CLOCK),
        ("date", r"(?P<y>\d{4})\s*년\s*(?P<m>\d{1,2})\s*월\s*(?P<d>\d{1,2})\s*일"),
        ("year-month", r"(?P<y>\d{4})[-/.](?P<m>\d{1,2})"),
        ("year-month", r"(?P<y>\d{4})m(?P<m>\d{1,2})"),
        ("year-month", r"(?P<y>\d{4})\s*년\s*(?P<m>\d{1,2})\s*월"),
        ("month name", _MON + r"[\s,'-]+(?P<y>\d{4})"),
        ("month name", r"(?P<y>\d{4})[\s,'-]+" + _MON),  # `1987 Jan` (R's yearmon)
        ("month name", _MON + r"[\s-]+(?P<d>\d{1,2})(?:st|nd|rd|th)?,?[\s-]+(?P<y>\d{4})" + _CLOCK),
        ("month name", r"(?P<d>\d{1,2})[\s-]+" + _MON + r",?[\s-]+(?P<y>\d{4})"),
        ("numeric date", r"(?P<a>\d{1,2})([/.-])(?P<b>\d{1,2})\2(?P<y>\d{4})" + _CLOCK),
        ("compact", r"(?P<y>\d{4})(?P<m>\d{2})"),
        ("compact", r"(?P<y>\d{4})(?P<m>\d{2})(?P<d>\d{2})"),
    ]
]


@dataclass(frozen=True, slots=True)
class Moment:
    """A point in time read from a label, with the grain the label states."""

    grain: str  # year | quarter | month | day | second
    form: str
    year: int
    month: int = 1
    day: int = 1
    second: int = 0


def parse_label(text: str, *, dayfirst: bool | None = None, compact: bool = False,
                year: bool = True) -> Moment | None:
    """The moment a time label names (`1959Q1`, `2001-03`, `Jan 1 2000`, ...), or None.

    `dayfirst` orders `3/4/2001` (None: month first, as in the US, unless the day shows it);
    `compact` admits `YYYYMM`/`YYYYMMDD`, read only when a column's name says it is a date.
    """
    cell = text.strip()
    for form, pattern in _FORMS:
        if (form == "compact" and not compact) or (form == "year" and not year):
            continue
        match = pattern.fullmatch(cell)
        if match is not None:
            moment = _moment(form, match.groupdict(), dayfirst)
            if moment is not None:
                return moment
    return None


def _moment(form: str, parts: dict[str, str | None], dayfirst: bool | None) -> Moment | None:
    """A moment from a label's parts, or None when they name no real day."""
    year = int(parts["y"] or 0)
    if not YEARS[0] <= year <= YEARS[1]:
        return None
    if parts.get("q"):
        return Moment("quarter", form, year, 3 * int(parts["q"] or 1) - 2)
    if parts.get("a"):
        first, second = int(parts["a"] or 0), int(parts["b"] or 0)
        swap = dayfirst if dayfirst is not None else first > 12
        month, day = (second, first) if swap else (first, second)
    else:
        month = MONTHS.get((parts.get("mon") or "").lower(), 0) if parts.get("mon") else int(
            parts.get("m") or 0)
        day = int(parts.get("d") or 0)
    if form == "year":
        return Moment("year", form, year)
    if not 1 <= month <= 12:
        return None
    if not day:
        return Moment("month", form, year, month)
    if day > calendar.monthrange(year, month)[1]:
        return None
    hours, minutes = int(parts.get("H") or 0), int(parts.get("M") or 0)
    clock = hours * 3600 + minutes * 60 + int(parts.get("S") or 0)
    if clock >= 86_400:
        return None
    return Moment("second" if parts.get("H") else "day", form, year, month, day, clock)


def month_number(text: str) -> int | None:
    """A month written as a number, an English name or `3월`, or None."""
    cell = text.strip().lower().rstrip(".").removesuffix("월").strip()
    if cell.isdigit():
        number = int(cell)
        return number if 1 <= number <= 12 else None
    return MONTHS.get(cell)


def quarter_number(text: str) -> int | None:
    """A quarter written as `3`, `Q3`, `3Q` or `3분기`, or None."""
    cell = text.strip().lower().removesuffix("분기").strip("q ")
    return int(cell) if cell in ("1", "2", "3", "4") else None


def day_number(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01."""
    return (dt.date(year, month, day) - EPOCH).days


def key_of(moment: Moment, grain: str) -> int:
    """The key of the period at `grain` holding the moment."""
    if grain == "decade":
        return moment.year // 10
    if grain == "year":
        return moment.year
    if grain == "quarter":
        return moment.year * 4 + (moment.month - 1) // 3
    if grain == "month":
        return moment.year * 12 + moment.month - 1
    days = day_number(moment.year, moment.month, moment.day)
    if grain == "hour":
        return days * 24 + moment.second // 3600
    if grain == "second":
        return days * 86_400 + moment.second
    return days


def label_of(grain: str, key: int) -> str:
    """A period's label: `1950s`, `1959`, `1959Q1`, `2001-03`, `2020-01-05`, `2020-01-05 13:00`."""
    if grain == "decade":
        return f"{key * 10}s"
    if grain == "year":
        return str(key)
    if grain == "quarter":
        return f"{key // 4}Q{key % 4 + 1}"
    if grain == "month":
        return f"{key // 12}-{key % 12 + 1:02d}"
    if grain == "hour":
        return f"{(EPOCH + dt.timedelta(days=key // 24)).isoformat()} {key % 24:02d}:00"
    if grain == "second":
        day, clock = divmod(key, 86_400)
        hours, rest = divmod(clock, 3600)
        when = (EPOCH + dt.timedelta(days=day)).isoformat()
        return f"{when} {hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
    return (EPOCH + dt.timedelta(days=key)).isoformat()


def coarsen(key: int, grain: str, to: str) -> int:
    """A period's key at a coarser grain: the year of `2017Q3` is 2017."""
    if grain == to:
        return key
    if grain == "decade":
        return key_of(Moment("year", "", key * 10, 1), to)
    if grain in ("year", "quarter", "month"):
        year, month = ((key, 1) if grain == "year" else (key // 4, 3 * (key % 4) + 1)
                       if grain == "quarter" else (key // 12, key % 12 + 1))
        return key_of(Moment(grain, "", year, month), to)
    days = key // 24 if grain == "hour" else key // 86_400 if grain == "second" else key
    when = EPOCH + dt.timedelta(days=days)
    moment = Moment("day", "", when.year, when.month, when.day, 0)
    return key_of(moment, to) if to != "hour" else days * 24 + (key % 24 if grain == "hour" else
                                                                   key % 86_400 // 3600)


def years_between(grain: str, start: int, end: int) -> float:
    """Years from one period to another, counted from their keys (`2001`→`2017` is 16)."""
    return (end - start) / PER_YEAR[grain]


_NUMERIC_SHARE = 0.9  # a numeric column: at least this share of its filled cells are numbers
_MAX_DECIMALS = 6


@dataclass(frozen=True)
class Numbers:
    """A column's cells read once: each distinct text, and as numbers.

    Columns repeat their texts (labels, years, codes), so each distinct text is read once and
    the rows index into them: `codes[i]` is row i's text in `texts`.
    """

    codes: np.ndarray  # per row, its text's index in `texts`
    texts: list[str]  # distinct cell texts in order of appearance
    blank: np.ndarray  # per distinct text, whether it is empty or a missing marker
    values: pd.Series  # per row, its number; NaN where a cell holds none
    filled: int  # cells that are not empty or a missing marker
    parsed: int  # cells read as a number
    percent: int  # cells written with %
    currency: str | None  # the currency sign most cells write
    decimals: int
    decimal_comma: bool

    @property
    def numeric(self) -> bool:
        """Whether the column holds numbers (a few stray texts are read as missing)."""
        return self.parsed > 0 and self.parsed >= _NUMERIC_SHARE * self.filled

    @property
    def mask(self) -> np.ndarray:
        """Per row, whether its cell holds a value."""
        import numpy as np

        return np.asarray(~self.blank[self.codes], dtype=bool)

    @property
    def distinct(self) -> list[str]:
        """The distinct filled texts in order of appearance."""
        return [text for text, blank in zip(self.texts, self.blank.tolist(), strict=True)
                if not blank]


def read_numbers(cells: pd.Series) -> Numbers:
    """A column's cells as numbers: plain ones at once, `1,234`, `9.7%`, `$5` one by one."""
    import numpy as np
    import pandas as pd

    codes, uniques = pd.factorize(cells.to_numpy(dtype=object))
    texts = [str(u) for u in uniques]
    counts = np.bincount(codes, minlength=len(texts))
    blank = np.array([t.strip().lower() in MISSING for t in texts], dtype=bool)
    commas = [t for t in texts if "," in t][:200]
    decimal_comma = bool(commas) and looks_decimal_comma(commas)
    numbers = np.full(len(texts), np.nan)
    if not decimal_comma and len(texts):
        candidates = pd.Series([None if b else t for t, b in zip(texts, blank, strict=True)],
                               dtype=object)
        numbers = pd.to_numeric(candidates, errors="coerce").to_numpy(dtype=float, copy=True)
    places = np.zeros(len(texts), dtype=np.int64)
    percent = np.zeros(len(texts), dtype=bool)
    currencies: Counter[str] = Counter()
    for index in np.flatnonzero(~blank).tolist():
        if not np.isnan(numbers[index]):
            places[index] = _plain_decimals(texts[index])
            continue
        cell = parse_number(texts[index], decimal_comma=decimal_comma)
        if cell is not None:
            numbers[index], places[index], percent[index] = cell.value, cell.decimals, cell.percent
            if cell.currency:
                currencies[cell.currency] += int(counts[index])
    read = ~np.isnan(numbers)
    return Numbers(
        codes, texts, blank, pd.Series(numbers[codes], index=cells.index, dtype=float),
        int(counts[~blank].sum()), int(counts[read].sum()), int(counts[percent].sum()),
        currencies.most_common(1)[0][0] if currencies else None,
        min(int(places[read].max()) if read.any() else 0, _MAX_DECIMALS), decimal_comma,
    )


def _plain_decimals(text: str) -> int:
    """Digits after the point of a plain number (`1.50` has 2; `1e-3` is read as 3)."""
    mantissa, _, exponent = text.strip().lower().partition("e")
    digits = mantissa.lstrip("+-")
    if exponent and not exponent.lstrip("+-").isdigit():
        return len(digits.partition(".")[2])
    return _written_decimals(digits, "e" + exponent if exponent else "")
