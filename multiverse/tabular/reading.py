"""A data file of the home read into a table of cell texts, each row with its line in the file.

Cells stay text as written: numbers are read from them later (`numbers.parse_number`), so a
citation can quote a cell exactly and say which line of the file holds it.

"""

from __future__ import annotations

import codecs
import csv
import datetime as dt
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from multiverse.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

MAX_BYTES = 64 * 1024 * 1024  # a larger file is refused with its size: the caller reports it
_SNIFF_CHARS = 64 * 1024
_DELIMITERS = (",", ";", "\t", "|")
FORMATS = {
    ".csv": "CSV", ".tsv": "TSV", ".tab": "TSV", ".txt": "text", ".xlsx": "Excel",
    ".xlsm": "Excel", ".json": "JSON",
}
# the suffixes a file is catalogued as a table by (a .txt is read as a table only when asked)
TABLE_SUFFIXES = (".csv", ".tsv", ".tab", ".xlsx", ".xlsm", ".json")


class TabularError(UserError):
    """A data table that cannot be read: the message says which file and why."""


class TableTooLarge(TabularError):
    """A data file larger than MAX_BYTES."""

    def __init__(self, file: str, size: int, limit: int = MAX_BYTES) -> None:
        self.file = file
        self.size = size
        self.limit = limit
        super().__init__(
            f"{file} is {size / 2**20:,.1f} MiB; tables over {limit / 2**20:,.0f} MiB are not read"
        )


@dataclass(frozen=True)
class Grid:
    """Cell texts of a file, before they become a dataframe."""

    names: list[str]
    rows: list[list[str]]
    lines: list[int]  # per row, its line in the file (the sheet's row for a spreadsheet)
    notes: list[str] = field(default_factory=list)
    frame: pd.DataFrame | None = None  # the cells already as columns (then `rows` is empty)


class Table:
    """A data table of the home: column names as written, cells as text, each row's line."""

    def __init__(self, file: str, grid: Grid, *, kind: str, sheet: str | None = None) -> None:
        import pandas as pd

        self.file = file
        self.sheet = sheet
        self.kind = kind
        self.columns: list[str] = list(grid.names)
        self.notes: list[str] = list(grid.notes)
        width = len(self.columns)
        self._lines: list[int] = list(grid.lines)
        # Positional labels: two columns may share a name, and names are looked up by `column`.
        if grid.frame is not None:
            self._frame: pd.DataFrame = grid.frame
            return
        cells = [row if len(row) == width else row[:width] + [""] * (width - len(row))
                 for row in grid.rows]
        by_column = list(zip(*cells, strict=True)) if cells else [() for _ in range(width)]
        self._frame = pd.DataFrame(
            {index: pd.Series(list(values), dtype=object) for index, values in enumerate(by_column)}
        )

    @property
    def rows(self) -> int:
        """Rows of data (the header not counted)."""
        return len(self._lines)

    def cells(self, name: str) -> pd.Series:
        """A column's cell texts by its name."""
        return self._frame[self.columns.index(name)]

    def __repr__(self) -> str:
        return f"Table({self.file!r}, {self.rows} rows, columns={self.columns!r})"


def home_relative(path: Path, root: Path) -> tuple[Path, str]:
    """The absolute path of a home file and its home-relative posix name."""
    absolute = path if path.is_absolute() else root / path
    try:
        relative = absolute.resolve().relative_to(root.resolve())
    except ValueError:
        raise TabularError(f"{path} is not inside the home {root}") from None
    return absolute, relative.as_posix()


def read_table(path: Path, *, root: Path, sheet: str | None = None,
               data: bytes | None = None) -> Table:
    """Read a CSV/TSV/text, Excel or JSON table of the home, keeping cells as written (from
    `data`, the file's bytes, when the caller has read them)."""
    absolute, file = home_relative(path, root)
    suffix = absolute.suffix.lower()
    if suffix not in FORMATS:
        raise TabularError(f"{file} is not a table this reader knows (csv, tsv, txt, xlsx, json)")
    try:
        size = absolute.stat().st_size if data is None else len(data)
    except OSError as error:
        raise TabularError(f"cannot read {file}: {error.strerror or error}") from None
    if size > MAX_BYTES:
        raise TableTooLarge(file, size)
    if suffix in (".xlsx", ".xlsm"):
        grid, sheet = read_xlsx(absolute if data is None else io.BytesIO(data), file, sheet)
    else:
        text = decode(absolute.read_bytes() if data is None else data)
        grid = read_json(text, file) if suffix == ".json" else read_delimited(text, suffix)
    return Table(file, unique_names(grid), kind=FORMATS[suffix], sheet=sheet)


def decode(data: bytes) -> str:
    """A file's text: UTF-8 (with or without BOM), UTF-16 with BOM, else CP949 (Korean)."""
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8) :].decode("utf-8", errors="replace")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp949")
    except UnicodeDecodeError:
        # Neither: every byte still reads as some character, and the cells stay citable.
        return data.decode("latin-1")


def sniff_delimiter(text: str, suffix: str = ".csv") -> str:
    """The delimiter whose split of the first lines gives the header's width on every row."""
    sample = text[:_SNIFF_CHARS]
    if len(text) > _SNIFF_CHARS:
        sample = sample.rpartition("\n")[0]  # a cut last line would count wrong
    preferred = "\t" if suffix in (".tsv", ".tab") else ","
    order = [preferred, *(d for d in _DELIMITERS if d != preferred)]
    best, best_score = preferred, (False, 0.0, 1)
    for delimiter in order:
        widths = [len(r) for r in csv.reader(io.StringIO(sample, newline=""), delimiter=delimiter)
                  if r][:200]
        if not widths or widths[0] < 2:
            continue
        steady = sum(w == widths[0] for w in widths) / len(widths)
        score = (steady >= 0.9, steady, widths[0])
        if score > best_score:
            best, best_score = delimiter, score
    return best


def read_delimited(text: str, suffix: str = ".csv") -> Grid:
    """Rows of a delimited text, each with the line it starts on (a quoted cell may span lines).

    Rows with no value are skipped; their lines still count.
    """
    delimiter = sniff_delimiter(text, suffix)
    plain = _read_unquoted(text, delimiter)
    if plain is not None:
        return plain
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    names: list[str] | None = None
    rows: list[list[str]] = []
    lines: list[int] = []
    start = 1
    for record in reader:
        cells = [cell.strip() for cell in record]
        if any(cells):
            if names is None:
                names = cells
            else:
                rows.append(cells)
                lines.append(start)
        start = reader.line_num + 1
    return Grid(names or [], rows, lines)


def _read_unquoted(text: str, delimiter: str) -> Grid | None:
    """A text without quotes read by pandas' C parser: one line, one row (None: not such a text).

    Ten times faster than the csv module on a large file; a quoted cell may span lines, so a
    text with quotes (or rows wider than the first) is left to the csv module.
    """
    import numpy as np
    import pandas as pd

    if '"' in text or not text.strip():
        return None
    try:
        frame = pd.read_csv(io.StringIO(text), sep=delimiter, header=None, dtype=str,
                            na_filter=False, skip_blank_lines=False, quoting=csv.QUOTE_NONE,
                            engine="c")
    except (pd.errors.ParserError, ValueError):
        return None
    columns = [frame[c].to_numpy(dtype=object) for c in frame.columns]
    edge = re.escape(delimiter)
    if re.search(rf"[ \t](?:{edge}|\r?$)|(?:^|{edge})[ \t]", text, re.MULTILINE):
        columns = [pd.Series(c, dtype=object).str.strip().to_numpy(dtype=object) for c in columns]
    filled = np.zeros(len(frame), dtype=bool)
    for column in columns:
        filled |= column != ""
    rows = np.flatnonzero(filled)
    if not len(rows):
        return Grid([], [], [])
    header, data = int(rows[0]), rows[1:]
    names = [str(c[header]) for c in columns]
    cells = pd.DataFrame({i: c[data] for i, c in enumerate(columns)})
    return Grid(names, [], (data + 1).tolist(), frame=cells)


def unique_names(grid: Grid) -> Grid:
    """The grid with every column named once: an empty or repeated name gets its position."""
    width = max([len(grid.names), *(len(row) for row in grid.rows)], default=0)
    names: list[str] = []
    notes = list(grid.notes)
    for index in range(width):
        name = grid.names[index] if index < len(grid.names) else ""
        if not name or name in names:
            renamed = f"column {index + 1}"
            notes.append(f"column {index + 1} has {'no name' if not name else 'a repeated name'}:"
                         f" called {renamed!r}")
            name = renamed
        names.append(name)
    return Grid(names, grid.rows, grid.lines, notes, grid.frame)


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


def read_xlsx(path: Path | IO[bytes], file: str, sheet: str | None) -> tuple[Grid, str]:
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
