"""Excel (.xlsx): each sheet under `## Sheet: name` as a pipe table, streamed with openpyxl."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, BinaryIO

from executor.documents.converted import Converted, plural, unreadable
from executor.documents.markdown import heading, pipe_table, trim_grid

if TYPE_CHECKING:
    from openpyxl.worksheet._read_only import ReadOnlyWorksheet

# A sheet's first 2,000 rows show what it holds and stay readable in a prompt; past them the
# note says which rows were left out. Columns and sheets are capped for the same reason.
MAX_ROWS = 2_000
MAX_COLUMNS = 50
MAX_SHEETS = 30


def read_xlsx(handle: BinaryIO) -> Converted:
    """A workbook's sheets as tables: values as last calculated (formulas are not evaluated)."""
    from openpyxl import load_workbook

    # read_only streams the sheets' XML; data_only gives a formula's cached value, not its text.
    book = load_workbook(handle, read_only=True, data_only=True)
    try:
        sheets = book.worksheets
        read = [_sheet(sheet) for sheet in sheets[:MAX_SHEETS]]
    finally:
        book.close()
    blocks = [block for block, _, _ in read]
    notes = [note for _, note, _ in read if note]
    if len(sheets) > MAX_SHEETS:
        notes.append(f"first {MAX_SHEETS} sheets of {len(sheets)}")
    extent = plural(len(sheets), "sheet")
    if not any(filled for _, _, filled in read):
        return unreadable("xlsx", "Excel workbook with no values in any sheet", extent)
    title = str(book.properties.title or "").strip()
    markdown = "\n\n".join(blocks) + "\n"
    return Converted("xlsx", markdown, note="; ".join(notes), title=title, extent=extent)


def _sheet(sheet: ReadOnlyWorksheet) -> tuple[str, str, bool]:
    """The sheet's heading and table, what of it was left out ("" when nothing), and whether it
    holds any value."""
    total = sheet.max_row  # the sheet's recorded size; None when the file does not say
    # Some writers record a wrong size, and the reader would stop there: read to the real end.
    sheet.reset_dimensions()
    # The stubs type iter_rows for a full Worksheet only; ReadOnlyWorksheet shares it.
    grid, more = _rows(sheet.iter_rows(values_only=True))  # type: ignore[misc]
    rows = trim_grid(grid)
    width = max((len(row) for row in rows), default=0)
    cuts = []
    if more:
        known = total is not None and total > MAX_ROWS
        cuts.append(f"first {MAX_ROWS:,} rows" + (f" of {total:,}" if known else ""))
    if width > MAX_COLUMNS:
        cuts.append(f"first {MAX_COLUMNS} columns of {width}")
        rows = [row[:MAX_COLUMNS] for row in rows]
    block = heading(2, f"Sheet: {sheet.title}")
    if rows:
        block += "\n\n" + pipe_table(rows)
    note = f"sheet {sheet.title}: {', '.join(cuts)}" if cuts else ""
    return block, note, bool(rows)


def _rows(values: Iterable[tuple[Any, ...]]) -> tuple[list[list[str]], bool]:
    """The first MAX_ROWS non-empty rows as text, and whether more rows with values follow."""
    grid: list[list[str]] = []
    for row in values:
        cells = [value_text(value) for value in row]
        if not any(cells):
            continue
        if len(grid) == MAX_ROWS:
            return grid, True
        grid.append(cells)
    return grid, False


def value_text(value: object) -> str:
    """A cell's value as a person reads it: `1520` not `1520.0`, dates without midnight."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, datetime.datetime) and value.time() == datetime.time():
        return value.date().isoformat()
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return str(value).strip()
