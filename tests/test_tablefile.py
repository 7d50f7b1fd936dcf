"""Tests of locating, parsing and rendering one pipe table in a markdown file (SPEC §3.1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tabulate import tabulate

from multiverse.errors import TableError
from multiverse.store.schemas import encode_cell
from multiverse.store.tablefile import (
    new_file_lines,
    parse_table_text,
    render_row,
    render_table,
    widths_from_delimiter,
)

PATH = Path("db/example.md")
COLUMNS = ["key", "value", "note"]
CELL = st.text(max_size=12) | st.sampled_from(
    ["한국어", "👨\u200d👩\u200d👧", "|", "\\", "<br>", "a\nb"]
)
ROWS = st.lists(st.lists(CELL, min_size=3, max_size=3), max_size=6)


def _table(*rows: str) -> str:
    return "| key | value | note |\n|---|---|---|\n" + "".join(row + "\n" for row in rows)


@settings(max_examples=300)
@given(ROWS)
def test_render_then_parse_gives_the_rows(rows: list[list[str]]) -> None:
    """A rendered table parses back to exactly its rows, wherever it sits in prose."""
    table = render_table(COLUMNS, rows)
    text = "# Title\n\nProse | with a pipe.\n\n" + "".join(table) + "\nAfter.\n\n| x |\n|---|\n"
    parsed = parse_table_text(text, PATH, COLUMNS)
    assert parsed.rows == rows
    assert parsed.lines[parsed.start : parsed.end] == table
    assert "".join(parsed.lines) == text


def _tabulate_whole(columns: list[str], rows: list[list[str]]) -> list[str]:
    """The reference: tabulate rendering every row itself."""
    encoded = [[encode_cell(value) for value in row] for row in rows]
    text = tabulate(encoded, headers=columns, tablefmt="pipe", disable_numparse=True)
    return [line + "\n" for line in text.split("\n")]


@settings(max_examples=500)
@given(ROWS)
def test_render_table_is_what_tabulate_writes(rows: list[list[str]]) -> None:
    """Rendering from the widest cells gives, byte for byte, tabulate's rendering of all rows."""
    assert render_table(COLUMNS, rows) == _tabulate_whole(COLUMNS, rows)


def test_render_table_is_what_tabulate_writes_for_wide_and_lookalike_cells() -> None:
    """Wide characters, ties in width, and cells tabulate might type (numbers, booleans)."""
    rows = [
        ["한국어", "True", "1.10"],
        ["abcdef", "False", ""],
        ["👨\u200d👩\u200d👧", "-0", "1e3"],
        ["", "", "<br>"],
    ]
    for count in range(len(rows) + 1):
        assert render_table(COLUMNS, rows[:count]) == _tabulate_whole(COLUMNS, rows[:count])


@settings(max_examples=300)
@given(ROWS)
def test_render_row_matches_tabulate(rows: list[list[str]]) -> None:
    """One row rendered alone at the table's widths is the line tabulate wrote for it."""
    table = render_table(COLUMNS, rows)
    widths = widths_from_delimiter(table[1])
    assert [render_row(row, widths) for row in rows] == table[2:]
    assert render_row(COLUMNS, widths) == table[0]


def test_render_keeps_numbers_as_typed() -> None:
    """Values that look like numbers are written exactly as given."""
    rows = [["001", "1.10", "1e3"], ["T00", "0x10", "-0"]]
    assert parse_table_text("".join(render_table(COLUMNS, rows)), PATH, COLUMNS).rows == rows


def test_empty_table_renders_header_and_delimiter() -> None:
    """A table without rows is a header and a delimiter row that parse to no rows."""
    table = render_table(COLUMNS, [])
    assert len(table) == 2
    assert parse_table_text("".join(table), PATH, COLUMNS).rows == []


def test_render_row_refuses_a_cell_that_does_not_fit() -> None:
    """A too-wide cell gives None, or an overflowing but valid row when ragged."""
    widths = [3, 3, 3]
    assert render_row(["abc", "", "x"], widths) == "| abc |     | x   |\n"
    assert render_row(["abcd", "", ""], widths) is None
    assert render_row(["한국", "", ""], widths) is None  # two wide characters take 4 columns
    assert render_row(["abcd", "", ""], widths, ragged=True) == "| abcd |     |     |\n"
    assert render_row(["a", "b"], widths) is None


@pytest.mark.parametrize(
    ("delimiter", "widths"),
    [
        ("|:-----|:--|\n", [4, 1]),
        ("|---|---:|\r\n", [1, 2]),
        ("--- | :-: | ---", [1, 1, 1]),
    ],
)
def test_widths_from_delimiter(delimiter: str, widths: list[int]) -> None:
    """Column widths are read from the delimiter row's segments."""
    assert widths_from_delimiter(delimiter) == widths


def test_table_in_code_fence_or_quote_is_not_ours() -> None:
    """Only a top-level table counts: one in a code fence or a block quote is skipped."""
    text = (
        "```\n| key | value | note |\n|---|---|---|\n| fenced | x | y |\n```\n\n"
        "> | key | value | note |\n> |---|---|---|\n> | quoted | x | y |\n\n"
        + _table("| a | b | c |")
    )
    assert parse_table_text(text, PATH, COLUMNS).rows == [["a", "b", "c"]]


def test_bom_crlf_and_empty_cells() -> None:
    """A BOM on the header, CRLF endings and `||` empty cells are read as a person means them."""
    text = "\ufeff| key | value | note |\r\n|---|---|---|\r\n|a||c|\r\n"
    parsed = parse_table_text(text, PATH, COLUMNS)
    assert parsed.rows == [["a", "", "c"]]
    assert "".join(parsed.lines) == text


def test_no_table_names_the_file() -> None:
    """A file without a pipe table is a TableError naming the file and the expected columns."""
    with pytest.raises(TableError) as caught:
        parse_table_text("# Title\n\nOnly prose.\n", PATH, COLUMNS)
    assert caught.value.line is None
    assert str(caught.value) == f"{PATH}: no pipe table found (expected columns: key, value, note)"


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        ("| key | value |", "missing column(s): note"),
        ("| key | value | note | extra |", "unexpected column(s): extra"),
        ("| key | worth | note |", "missing column(s): value; unexpected column(s): worth"),
        ("| value | key | note |", "columns out of order"),
    ],
)
def test_wrong_header_names_its_line(header: str, problem: str) -> None:
    """A header that is not the schema's columns is reported at the header's line."""
    width = header.count("|") - 1
    text = "# Title\n\n" + header + "\n|" + "---|" * width + "\n"
    with pytest.raises(TableError) as caught:
        parse_table_text(text, PATH, COLUMNS)
    assert caught.value.line == 3
    assert caught.value.problem.startswith(problem)
    assert str(caught.value).startswith(f"{PATH}:3: {problem}")


@pytest.mark.parametrize(("row", "count"), [("| a | b |", 2), ("| a | b | c | d |", 4)])
def test_wrong_cell_count_names_its_line(row: str, count: int) -> None:
    """A row with too few or too many cells is reported at its own line."""
    text = "# Title\n\n" + _table("| ok | ok | ok |", row)
    with pytest.raises(TableError) as caught:
        parse_table_text(text, PATH, COLUMNS)
    assert caught.value.line == 6
    assert f"row has {count} cells, expected 3" in str(caught.value)


def test_new_file_lines() -> None:
    """A new file opens with the title and, when there is one, the description."""
    assert new_file_lines("Runs", "Every run.") == ["# Runs\n", "\n", "Every run.\n", "\n"]
    assert new_file_lines("Runs", "") == ["# Runs\n", "\n"]
