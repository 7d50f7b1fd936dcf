"""Tabular data: CSV and markdown tables parsed into rows, column statistics, markdown rendering.

Pure functions over text.

Also here: a table's column statistics gathered row by row, so a CSV of any size is summarised
whole.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tabulate import tabulate

from executor.builtin.extract import Frozen
from multiverse.config import parse_yaml

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
    data: Any = parse_yaml(text) if is_yaml else json.loads(text)
    if isinstance(data, dict):
        names = ", ".join(str(key) for key in list(data)[:20])
        return f"object with {len(data)} keys: {names}"
    if isinstance(data, list):
        first = data[0] if data else None
        keys = ", ".join(map(str, first)) if isinstance(first, dict) else ""
        inner = f"; items have keys: {keys}" if keys else ""
        return f"list of {len(data)} items{inner}"
    return f"a single {type(data).__name__} value"


# Rows whose cells are read into the statistics. A row of five columns costs ~7 µs: 5,000,000
# rows (some 150 MB) take under a minute; past them the rest is only counted (~2 µs a row) and
# the digest says which part the statistics cover.
MAX_SCAN_ROWS = 5_000_000
MAX_LABELS = 1_000  # distinct labels kept per text column; past it the column says "more than"


class TableScan(Frozen):
    """What a scan of a whole table found."""

    facts: TableFacts
    labels: list[int]  # the columns that name rows (text and time columns), by index
    top_rows: list[list[str] | None]  # per column, the first row holding its maximum
    distinct: dict[str, int]  # per label column, its distinct values (MAX_LABELS + 1: more)
    examples: dict[str, list[str]]  # per label column, its first distinct values
    scanned: int  # rows read into the statistics
    total: int  # rows in the table (more than `scanned` when the scan stopped at its cap)


_PLAIN_NUMBER = re.compile(r"[-+]?\d*\.?\d+")  # what most cells of a data file are


def _read_cell(cell: str) -> tuple[float | None, bool]:
    """A cell's number (as `parse_number` reads it) and whether it is a time label."""
    if _PLAIN_NUMBER.fullmatch(cell):
        # A plain number is a year only if it starts like one: no time regex for the rest.
        return float(cell), cell[:2] in ("19", "20") and is_time_cell(cell)
    return parse_number(cell), is_time_cell(cell)


@dataclass(slots=True)
class _Column:
    """The running statistics of one column."""

    time_name: bool
    filled: int = 0
    timelike: int = 0
    count: int = 0
    minimum: float = math.inf
    maximum: float = -math.inf
    total: float = 0.0
    carry: float = 0.0  # Neumaier compensation: the sum does not drift over millions of rows
    top: list[str] | None = None
    # The first distinct cells, read once: a label column repeats a few values many times.
    seen: dict[str, tuple[float | None, bool]] = field(default_factory=dict)

    def add(self, cell: str, row: list[str]) -> None:
        """Count one filled cell of `row`."""
        self.filled += 1
        read = self.seen.get(cell)
        if read is None:
            read = _read_cell(cell)
            if len(self.seen) <= MAX_LABELS:
                self.seen[cell] = read
        value, timelike = read
        self.timelike += timelike
        if value is None:
            return
        self.count += 1
        if value < self.minimum:
            self.minimum = value
        if value > self.maximum:
            self.maximum, self.top = value, row
        total = self.total + value
        if abs(self.total) >= abs(value):
            self.carry += (self.total - total) + value
        else:
            self.carry += (value - total) + self.total
        self.total = total

    def is_time(self) -> bool:
        """`tabular.is_time_column`, from counts."""
        if not self.filled:
            return False
        return self.timelike == self.filled or (
            self.time_name and self.timelike >= 0.5 * self.filled
        )

    def is_quantity(self) -> bool:
        """`tabular.numeric_columns`: filled cells nearly all numbers, and not time labels."""
        return not self.is_time() and self.count > 0 and self.count >= 0.8 * self.filled


def scan_rows(header: list[str], rows: Iterable[list[str]]) -> TableScan:
    """The statistics of a table given as a header and rows of stripped cells."""
    width = len(header)
    columns = [_Column(time_name=is_time_name(name)) for name in header]
    preview: list[list[str]] = []
    source = iter(rows)
    scanned = 0
    for raw in itertools.islice(source, MAX_SCAN_ROWS):
        row = (raw + [""] * width)[:width] if len(raw) != width else raw
        scanned += 1
        if len(preview) < PREVIEW_ROWS:
            preview.append(row)
        for column, cell in zip(columns, row, strict=True):
            if cell:
                column.add(cell, row)
    rest = sum(1 for _ in source)
    return _result(header, columns, preview, scanned, scanned + rest)


def _result(
    header: list[str], columns: list[_Column], preview: list[list[str]], scanned: int, total: int
) -> TableScan:
    numeric = [
        ColumnStats(
            name=name,
            count=c.count,
            minimum=c.minimum,
            maximum=c.maximum,
            total=round(c.total + c.carry, 6),
        )
        for name, c in zip(header, columns, strict=True)
        if c.is_quantity()
    ]
    labels = [i for i, c in enumerate(columns) if not c.is_quantity()]
    facts = TableFacts(
        columns=header,
        row_count=total,
        numeric=numeric,
        preview=markdown_table(header, preview) if header else "",
    )
    return TableScan(
        facts=facts,
        labels=labels,
        top_rows=[c.top for c in columns],
        distinct={header[i]: len(columns[i].seen) for i in labels if columns[i].filled},
        examples={header[i]: list(columns[i].seen)[:5] for i in labels if columns[i].filled},
        scanned=scanned,
        total=total,
    )


def csv_rows(lines: Iterable[str]) -> tuple[list[str], Iterator[list[str]]]:
    """A CSV's header and its non-empty rows of stripped cells, read lazily from its lines.

    The delimiter (`,` `;` tab) is guessed from the first line, as `tabular.parse_csv` does.
    """
    source = iter(lines)
    first = next(source, "")
    delimiter = max((",", ";", "\t"), key=first.count)
    reader = csv.reader(itertools.chain([first], source), delimiter=delimiter)
    rows = ([cell.strip() for cell in row] for row in reader)
    filled = (row for row in rows if any(row))
    top = next(filled, None)
    if top is None:
        return [], iter(())
    return [cell or f"column {i + 1}" for i, cell in enumerate(top)], filled


def scan_csv(lines: Iterable[str]) -> TableScan:
    """The statistics of a whole CSV read lazily from its lines (a file or a text's lines)."""
    header, rows = csv_rows(lines)
    return scan_rows(header, rows)
