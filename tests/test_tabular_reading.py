"""Reading tables: encodings, delimiters, spreadsheets, JSON, line numbers, the size cap."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import openpyxl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from multiverse.tabular import MAX_BYTES, TableTooLarge, TabularError, read_table
from multiverse.tabular.reading import decode, read_delimited, sniff_delimiter

KOREAN = "지역,매출액\n서울,\"1,234\"\n부산,567\n"


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "cp949"])
def test_every_encoding_reads_the_same_cells(tmp_path: Path, encoding: str) -> None:
    """UTF-8 with or without BOM, UTF-16 with BOM and CP949 give the same names and cells."""
    (tmp_path / "t.csv").write_bytes(KOREAN.encode(encoding))
    table = read_table(Path("t.csv"), root=tmp_path)
    assert table.columns == ["지역", "매출액"]
    assert table.cells("매출액").tolist() == ["1,234", "567"]
    assert table.file == "t.csv" and table.rows == 2


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_the_delimiter_is_sniffed(tmp_path: Path, delimiter: str) -> None:
    """Comma, semicolon, tab and pipe files split into the same columns."""
    rows = [["year", "region", "sales"], ["2001", "North", "1.5"], ["2002", "South", "2"]]
    text = "\n".join(delimiter.join(row) for row in rows)
    (tmp_path / "t.txt").write_text(text + "\n", encoding="utf-8")
    table = read_table(Path("t.txt"), root=tmp_path)
    assert table.columns == ["year", "region", "sales"]
    assert table.cells("region").tolist() == ["North", "South"]


def test_decimal_commas_do_not_fool_the_sniffer() -> None:
    """`a;b` over `1,5;2,5` is semicolon-delimited: the header has no comma."""
    assert sniff_delimiter("a;b\n1,5;2,5\n3,5;4\n") == ";"


def test_rows_remember_their_lines_across_blank_lines_and_quoted_newlines(tmp_path: Path) -> None:
    """Header is line 1; a blank line and a cell spanning two lines shift the lines after."""
    text = 'year,note,sales\n2001,plain,1\n\n2002,"two\nlines",2\n2003,x,3\n'
    (tmp_path / "t.csv").write_text(text, encoding="utf-8")
    table = read_table(tmp_path / "t.csv", root=tmp_path)
    assert table._lines == [2, 4, 6]
    assert table.cells("note").tolist() == ["plain", "two\nlines", "x"]


@given(rows=st.lists(st.lists(st.text(alphabet="ab1 .-", max_size=4), min_size=3, max_size=3),
                    max_size=8),
       blanks=st.sets(st.integers(0, 8)))
def test_quoted_and_unquoted_files_read_alike(rows: list[list[str]], blanks: set[int]) -> None:
    """The fast reader of unquoted text and the csv module give the same cells and lines."""
    texts = []
    for quoting in (csv.QUOTE_MINIMAL, csv.QUOTE_ALL):
        out = io.StringIO()
        writer = csv.writer(out, quoting=quoting, lineterminator="\n")
        writer.writerow(["x", "y", "z"])
        for index, row in enumerate(rows):
            if index in blanks:
                out.write("\n")
            writer.writerow(row)
        texts.append(out.getvalue())
    plain, quoted = (read_delimited(text) for text in texts)
    assert plain.frame is not None and '"' in texts[1]
    assert plain.names == quoted.names == ["x", "y", "z"]
    assert plain.lines == quoted.lines
    assert [list(r) for r in plain.frame.itertuples(index=False)] == quoted.rows


def test_repeated_and_empty_names_are_told_apart(tmp_path: Path) -> None:
    """Two columns called `x` and one without a name each get a name of their own."""
    (tmp_path / "t.csv").write_text("x,x,\n1,2,3\n", encoding="utf-8")
    table = read_table(Path("t.csv"), root=tmp_path)
    assert table.columns == ["x", "column 2", "column 3"]
    assert len(table.notes) == 2


def test_an_excel_sheet_keeps_its_row_numbers(tmp_path: Path) -> None:
    """Rows of a named sheet cite the sheet's row numbers, blank rows skipped."""
    book = openpyxl.Workbook()
    book.active.title = "Cover"
    book.active.append(["nothing here"])
    sheet = book.create_sheet("Data")
    sheet.append([])
    sheet.append(["year", "sales"])
    sheet.append([2001, 1.5])
    sheet.append([])
    sheet.append([2002, 3])
    book.save(tmp_path / "t.xlsx")
    table = read_table(Path("t.xlsx"), root=tmp_path, sheet="Data")
    assert table.columns == ["year", "sales"] and table.sheet == "Data"
    assert table._lines == [3, 5]
    assert table.cells("sales").tolist() == ["1.5", "3"]
    with pytest.raises(TabularError, match="Cover, Data"):
        read_table(Path("t.xlsx"), root=tmp_path, sheet="Missing")


def test_json_arrays_of_objects_and_columns_read_with_lines(tmp_path: Path) -> None:
    """An array of objects cites each object's first line; {column: [values]} each value's."""
    rows = [{"year": 2001, "sales": 1.5}, {"year": 2002, "sales": None}]
    (tmp_path / "a.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    table = read_table(Path("a.json"), root=tmp_path)
    assert table.columns == ["year", "sales"]
    assert table.cells("sales").tolist() == ["1.5", ""]
    assert table._lines == [2, 6]
    columns = '{\n  "year": [\n    2001,\n    2002\n  ],\n  "sales": [1, 2]\n}'
    (tmp_path / "c.json").write_text(columns, encoding="utf-8")
    table = read_table(Path("c.json"), root=tmp_path)
    assert table.cells("year").tolist() == ["2001", "2002"] and table._lines == [3, 4]


def test_a_file_over_the_cap_is_refused_with_its_size(tmp_path: Path) -> None:
    """A file larger than MAX_BYTES raises TableTooLarge with the size."""
    with (tmp_path / "big.csv").open("wb") as handle:
        handle.truncate(MAX_BYTES + 1)  # sparse: no real 64 MiB is written
    with pytest.raises(TableTooLarge) as raised:
        read_table(Path("big.csv"), root=tmp_path)
    assert raised.value.size == MAX_BYTES + 1 and "MiB" in str(raised.value)


def test_files_outside_the_home_and_unknown_kinds_are_refused(tmp_path: Path) -> None:
    """A path outside the home, or a .pdf, is a TabularError."""
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "out.csv").write_text("a\n1\n", encoding="utf-8")
    (home / "x.pdf").write_text("a\n1\n", encoding="utf-8")
    with pytest.raises(TabularError, match="not inside the home"):
        read_table(tmp_path / "out.csv", root=home)
    with pytest.raises(TabularError, match="not a table"):
        read_table(Path("x.pdf"), root=home)


def test_undecodable_bytes_still_read() -> None:
    """Bytes neither UTF-8 nor CP949 are read one character a byte."""
    assert decode(b"caf\xe9\xff\n") == "café\xff\n"
