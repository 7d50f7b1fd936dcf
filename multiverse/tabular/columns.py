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
    import pandas as pd

_NUMERIC_SHARE = 0.9  # a numeric column: at least this share of its filled cells are numbers
_MAX_DECIMALS = 6


@dataclass(frozen=True)
class Numbers:
    """A column's cells read as numbers."""

    values: pd.Series  # float, NaN where a cell holds no number
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


def filled_mask(cells: pd.Series) -> pd.Series:
    """Cells that hold a value (not empty, not a missing marker such as `NA` or `..`)."""
    lowered = cells.astype(str).str.strip().str.lower()
    return ~lowered.isin(MISSING)


def read_numbers(cells: pd.Series) -> Numbers:
    """A column's cells as numbers: plain ones at once, `1,234`, `9.7%`, `$5` one by one."""
    import numpy as np
    import pandas as pd

    texts = cells.astype(str)
    filled = filled_mask(texts)
    commas = texts[texts.str.contains(",", regex=False)].head(200).tolist()
    decimal_comma = bool(commas) and looks_decimal_comma(commas)
    values = pd.to_numeric(texts.where(filled), errors="coerce") if not decimal_comma else (
        pd.Series(float("nan"), index=texts.index))
    values = values.astype(float)
    rest = filled & values.isna()
    percent = 0
    currencies: Counter[str] = Counter()
    decimals = 0
    if rest.any():
        codes, uniques = pd.factorize(texts[rest])
        read = [parse_number(str(u), decimal_comma=decimal_comma) for u in uniques]
        numbers = [cell.value if cell is not None else float("nan") for cell in read]
        values.loc[rest] = np.asarray(numbers, dtype=float)[codes]
        for code in codes:
            cell = read[code]
            if cell is not None:
                percent += cell.percent
                currencies.update([cell.currency] if cell.currency else [])
        decimals = max((c.decimals for c in read if c is not None), default=0)
    plain = texts[filled & ~rest]
    if len(plain):
        places = plain.str.extract(r"\.(\d+)$", expand=False).dropna().str.len()
        decimals = max(decimals, int(places.max()) if len(places) else 0)
    return Numbers(values, int(filled.sum()), int(values.notna().sum()), percent,
                   currencies.most_common(1)[0][0] if currencies else None,
                   min(decimals, _MAX_DECIMALS), decimal_comma)


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
    texts = [str(c) for c in cells.unique() if str(c).strip()]
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


def category_or_text(cells: pd.Series) -> str:
    """`text` for prose (long cells of many words), else `category`."""
    texts = cells.astype(str)
    filled = texts[texts.str.strip() != ""].head(500)
    if filled.empty:
        return "category"
    length = filled.str.len().mean()
    words = filled.map(lambda text: len(str(text).split())).mean()
    return "text" if length > 40 or words > 5 else "category"
