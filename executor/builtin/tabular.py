"""Tabular data: CSV and markdown tables parsed into rows, column statistics, markdown rendering.

Pure functions over text.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
from dataclasses import dataclass
from typing import Any

import yaml
from tabulate import tabulate

from executor.builtin.extract import Frozen

_NUMBER_CELL = re.compile(
    r"^\(?(?P<sign>[+-])?\s*(?:US\$|\$|€|£|¥|₩)?\s*(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d*\.?\d+)"
    r"\)?\s*(?:%p|%|[A-Za-z가-힣 ]{0,8})$"
)
_SEPARATOR_CELL = re.compile(r"^:?-{2,}:?$")
_PIPE_SPLIT = re.compile(r"(?<!\\)\|")
PREVIEW_ROWS = 8


@dataclass(frozen=True)
class RawTable:
    """A table as text cells: a header and rows padded to the header's width."""

    header: list[str]
    rows: list[list[str]]


class ColumnStats(Frozen):
    """Minimum, maximum and sum of a numeric column."""

    name: str
    count: int
    minimum: float
    maximum: float
    total: float


class TableFacts(Frozen):
    """What a person wants to know of a table at a glance."""

    columns: list[str]
    row_count: int
    numeric: list[ColumnStats]
    preview: str


def parse_number(cell: str) -> float | None:
    """The number a cell holds (`1,200`, `$4.2`, `35%`, `(12)` for -12), if it is one."""
    match = _NUMBER_CELL.match(cell.strip())
    if not match:
        return None
    value = float(match.group("num").replace(",", ""))
    negative = match.group("sign") == "-" or (cell.strip().startswith("(") and ")" in cell)
    return -value if negative else value


def _pad(rows: list[list[str]], width: int) -> list[list[str]]:
    return [(row + [""] * width)[:width] for row in rows]


def parse_csv(text: str, limit: int = 100_000) -> RawTable:
    """A CSV text as a table; the delimiter (`,` `;` tab) is guessed from the first line."""
    first = text.split("\n", 1)[0]
    delimiter = max((",", ";", "\t"), key=first.count)
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    rows = [[cell.strip() for cell in row] for row in itertools.islice(reader, limit + 1)]
    rows = [row for row in rows if any(row)]
    if not rows:
        return RawTable(header=[], rows=[])
    header = [cell or f"column {i + 1}" for i, cell in enumerate(rows[0])]
    return RawTable(header=header, rows=_pad(rows[1:], len(header)))


def parse_markdown_table(lines: list[str]) -> RawTable | None:
    """A pipe table's lines as a table, or None when they are not one (no separator row)."""
    cells = [_split_row(line) for line in lines]
    if len(cells) < 2 or not all(_SEPARATOR_CELL.match(c) for c in cells[1] if c):
        return None
    header = cells[0]
    return RawTable(header=header, rows=_pad(cells[2:], len(header)))


def _split_row(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip().replace("\\|", "|") for cell in _PIPE_SPLIT.split(inner)]


_TIME_NAME = re.compile(r"year|date|month|quarter|period|연도|날짜|월|분기|기간", re.I)
_TIME_CELL = re.compile(
    r"^(?:FY ?)?(?:19|20)\d{2}(?:[-/.]\d{1,2})*(?:[-/ ]?[QH][1-4])?(?:년.*)?$"
    r"|^[QH][1-4]\b|^\d{1,2}월$"
)


def is_time_cell(cell: str) -> bool:
    """Whether a cell reads as a year, a date, a month or a quarter."""
    return bool(_TIME_CELL.match(cell))


def is_time_name(name: str) -> bool:
    """Whether a column's name says it holds times (year, date, month, quarter…)."""
    return bool(_TIME_NAME.search(name))


def is_time_column(table: RawTable, index: int) -> bool:
    """Whether a column holds years, dates, months or quarters (labels, not quantities)."""
    cells = [row[index] for row in table.rows if row[index]]
    if not cells:
        return False
    timelike = sum(1 for cell in cells if is_time_cell(cell))
    return timelike == len(cells) or (
        is_time_name(table.header[index]) and timelike >= 0.5 * len(cells)
    )


def numeric_columns(table: RawTable) -> dict[int, list[float | None]]:
    """Quantity columns (filled cells nearly all numbers, not years), with parsed values."""
    found: dict[int, list[float | None]] = {}
    for index in range(len(table.header)):
        if is_time_column(table, index):
            continue
        values = [parse_number(row[index]) if row[index] else None for row in table.rows]
        filled = [row[index] for row in table.rows if row[index]]
        numbers = [v for v in values if v is not None]
        if numbers and len(numbers) >= 0.8 * len(filled):
            found[index] = values
    return found


def table_facts(table: RawTable) -> TableFacts:
    """Columns, row count, numeric column statistics and a markdown preview."""
    stats = []
    for index, values in numeric_columns(table).items():
        numbers = [v for v in values if v is not None]
        stats.append(
            ColumnStats(
                name=table.header[index],
                count=len(numbers),
                minimum=min(numbers),
                maximum=max(numbers),
                total=round(sum(numbers), 6),
            )
        )
    preview = markdown_table(table.header, table.rows[:PREVIEW_ROWS]) if table.header else ""
    return TableFacts(
        columns=table.header, row_count=len(table.rows), numeric=stats, preview=preview
    )


def escape_cell(value: str) -> str:
    """A value safe inside a pipe-table cell: one line, pipes escaped."""
    return " ".join(value.split()).replace("|", "\\|")


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A pipe table; values are written exactly as given (no number reformatting)."""
    return tabulate(
        [[escape_cell(cell) for cell in row] for row in rows],
        headers=[escape_cell(cell) for cell in header],
        tablefmt="pipe",
        disable_numparse=True,
    )


def format_number(value: float) -> str:
    """A number as a person reads it: thousands separators, at most two decimals."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def describe_data(text: str, is_yaml: bool) -> str:
    """A JSON or YAML document's shape: its top-level keys or its length."""
    data: Any = yaml.safe_load(text) if is_yaml else json.loads(text)
    if isinstance(data, dict):
        names = ", ".join(str(key) for key in list(data)[:20])
        return f"object with {len(data)} keys: {names}"
    if isinstance(data, list):
        first = data[0] if data else None
        keys = ", ".join(map(str, first)) if isinstance(first, dict) else ""
        inner = f"; items have keys: {keys}" if keys else ""
        return f"list of {len(data)} items{inner}"
    return f"a single {type(data).__name__} value"
