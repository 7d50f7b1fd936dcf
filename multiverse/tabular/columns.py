"""One column read: its numbers, whether it identifies rows, and a measure's kind and unit."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from multiverse.tabular.descriptions import Definition, states_annual_rate, unit_in
from multiverse.tabular.numbers import MISSING, looks_decimal_comma, parse_number
from multiverse.tabular.vocabulary import (
    AGGREGATION,
    averaged,
    identifier_name,
    kind_of,
    unit_of_name,
)

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

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
    mantissa, _, exponent = text.lower().partition("e")
    places = len(mantissa.partition(".")[2])
    return max(0, places - int(exponent)) if exponent.lstrip("+-").isdigit() else places


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
                 values: pd.Series) -> tuple[str, str, bool]:
    """A measure's kind, its aggregation, and whether words or values decided the aggregation."""
    text = definition.text if definition else ""
    # The definition's head first: a formula in its parentheses may name other measures.
    label = definition.label if definition else ""
    kind = (kind_of(label) if label else None) or (kind_of(text) if text else None) or kind_of(name)
    if kind is None and numbers.percent >= 0.5 * max(numbers.parsed, 1):
        filled = values.dropna()
        kind = "share" if len(filled) and filled.between(0, 100).all() else "rate"
    if kind is None and text and re.search(r"\bend of (?:the )?(?:quarter|period|month|year)\b",
                                           text, re.IGNORECASE):
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
