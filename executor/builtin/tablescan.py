"""A table's column statistics gathered row by row, so a CSV of any size is summarised whole.

The scan keeps per column only counts, min, max, a compensated sum, the row holding the
maximum and up to MAX_LABELS distinct labels: memory does not grow with the rows. Its
decisions (which columns are quantities, which are time labels) are those of
`tabular.numeric_columns` and `tabular.is_time_column`, made once the last row is seen.
"""

from __future__ import annotations

import csv
import itertools
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from executor.builtin.extract import Frozen
from executor.builtin.tabular import (
    PREVIEW_ROWS,
    ColumnStats,
    TableFacts,
    is_time_cell,
    is_time_name,
    markdown_table,
    parse_number,
)

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
