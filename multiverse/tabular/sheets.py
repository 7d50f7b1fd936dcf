"""Excel sheets and JSON tables as a grid of cell texts, each row with its place in the file."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from multiverse.tabular.reading import Grid, TabularError


def cell_text(value: Any) -> str:
    """A spreadsheet or JSON value written as the cell text a person would read."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        whole = value.is_integer() and abs(value) < 1e15
        return str(int(value)) if whole else format(value, ".15g")
    if isinstance(value, dt.datetime):
        if value.time() == dt.time():
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value).strip()


def read_xlsx(path: Path, file: str, sheet: str | None) -> tuple[Grid, str]:
    """The first (or the named) sheet of a workbook; a row's number is the sheet's row number."""
    import openpyxl

    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as error:  # openpyxl raises many kinds for a damaged or foreign file
        raise TabularError(f"cannot read {file} as an Excel workbook: {error}") from None
    try:
        if sheet is None:
            worksheet = book.worksheets[0]
        elif sheet in book.sheetnames:
            worksheet = book[sheet]
        else:
            names = ", ".join(book.sheetnames)
            raise TabularError(f"{file} has no sheet {sheet!r}; its sheets: {names}")
        header: list[str] | None = None
        rows: list[list[str]] = []
        lines: list[int] = []
        for number, values in enumerate(worksheet.iter_rows(min_row=1, values_only=True), start=1):
            cells = [cell_text(value) for value in values]
            if not any(cells):
                continue
            if header is None:
                header = cells
            else:
                rows.append(cells)
                lines.append(number)
        return _trimmed(Grid(header or [], rows, lines)), worksheet.title
    finally:
        book.close()


def _trimmed(grid: Grid) -> Grid:
    """A sheet without the empty columns to the right that spreadsheets often carry."""
    width = len(grid.names)
    while width and not grid.names[width - 1] and not any(
        len(row) >= width and row[width - 1] for row in grid.rows
    ):
        width -= 1
    return Grid(grid.names[:width], [row[:width] for row in grid.rows], grid.lines, grid.notes)


def read_json(text: str, file: str) -> Grid:
    """An array of flat objects, or {column: [values]}; a row's number is the line it starts on."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise TabularError(f"{file} is not valid JSON: {error}") from None
    if isinstance(data, list) and all(isinstance(item, dict) for item in data):
        names = list(dict.fromkeys(key for item in data for key in item))
        rows = [[cell_text(item.get(name)) for name in names] for item in data]
        return Grid(names, rows, _element_lines(text, text.index("["), len(rows)))
    if isinstance(data, dict) and data and all(isinstance(v, list) for v in data.values()):
        names = list(data)
        length = max(len(values) for values in data.values())
        columns = [[cell_text(v) for v in values] + [""] * (length - len(values))
                   for values in data.values()]
        rows = [list(row) for row in zip(*columns, strict=True)]
        lines = _element_lines(text, _first_array(text), len(data[names[0]]))
        # A shorter first column leaves later rows without a line of their own: the last one.
        lines += [lines[-1] if lines else 1] * (length - len(lines))
        return Grid(names, rows, lines)
    raise TabularError(f"{file} holds no table: an array of flat objects or {{column: [values]}}")


def _element_lines(text: str, start: int, count: int) -> list[int]:
    """The line each element of the JSON array opening at `start` begins on."""
    decoder = json.JSONDecoder()
    lines: list[int] = []
    position = counted = start + 1
    line = text.count("\n", 0, position) + 1
    while len(lines) < count:
        while text[position] in " \t\r\n,":
            position += 1
        line += text.count("\n", counted, position)
        counted = position
        lines.append(line)
        _, position = decoder.raw_decode(text, position)
    return lines


def _first_array(text: str) -> int:
    """Where the array of the first key of a top-level JSON object opens."""
    decoder = json.JSONDecoder()
    position = text.index("{") + 1
    while text[position].isspace():
        position += 1
    _, position = decoder.raw_decode(text, position)
    while text[position].isspace() or text[position] == ":":
        position += 1
    return position
