"""A profile's line for the knowledge catalog, and a citation in words."""

from __future__ import annotations

from typing import TYPE_CHECKING

from multiverse.tabular.numbers import format_number

if TYPE_CHECKING:
    from multiverse.tabular.models import Citation, ColumnProfile, TableProfile

_SHOWN_VALUES = 5
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
    words = [column.label] if column.label.replace(" ", "_") != column.name else []
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
