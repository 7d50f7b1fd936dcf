"""Numbers as cells write them and as deliverables print them: one reader, one formatter.

Every number the package prints goes through `format_number`, so a later check can find each
printed number again (`numbers_in`) and ask whether a fact or a source holds it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

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
    decimals = (_exponent_decimals(digits, exponent) if exponent
                else len(digits.partition(".")[2]))
    suffix = match["suffix"] or ""
    currency = (match["cur1"] or "").strip() or (suffix if suffix not in ("%", "‰") else "") or None
    if suffix == "‰":
        value /= 10
    return CellNumber(-value if negative else value, decimals, suffix == "%", currency)


def _exponent_decimals(digits: str, exponent: str) -> int:
    """Decimals of a number written with an exponent (`1.5e-3` has 4)."""
    return max(0, len(digits.partition(".")[2]) - int(exponent[1:]))


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
