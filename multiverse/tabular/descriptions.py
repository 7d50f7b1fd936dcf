"""Column definitions found in the texts that describe a table (a README, a codebook, a note).

Recognised: `name - text`, `name: text`, `* name: text`, indented continuation lines, and
markdown tables of variables (`| name | description | unit |`). Only names of the table's own
columns are taken, so prose around them is never mistaken for a definition.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from multiverse.tabular.vocabulary import annual_rate

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
    r"index|points?|usd|krw|eur)\b|=\s*100|천|만|억|백만|명|개|건|℃",
    re.IGNORECASE,
)
_IN_UNIT = re.compile(
    r"\b(?:in|measured in|expressed in|unit:)\s+((?:thousands? of |millions? of |billions? of )?"
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
        for name, body, unit in _table_rows(text, known) + _definition_lines(text, known):
            found.setdefault(name, (body, unit))
    return {name: _definition(body, unit) for name, (body, unit) in found.items()}


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
            for sentence in re.split(r"(?<=[.!?])\s+", text):
                if pattern.search(sentence):
                    unit = unit_in(sentence[pattern.search(sentence).start():])  # type: ignore[union-attr]
                    if unit:
                        units.setdefault(column, unit)
    return units


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
    return Definition(body, _label(body), (unit or "").strip() or unit_in(body))


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
    head = re.split(r"\s*\(|:\s|;\s|\.\s|\.$", body, maxsplit=1)[0].strip()
    while (stripped := _QUALIFIERS.sub("", head)) != head:
        head = stripped
    head = re.sub(r"\s+", " ", head).strip(" ,.-")
    if len(head) > 60:
        head = head[:60].rsplit(" ", 1)[0]
    return head


def states_annual_rate(definition: Definition | None) -> bool:
    """Whether a column's definition states a flow at an annual rate."""
    return definition is not None and annual_rate(definition.text)
