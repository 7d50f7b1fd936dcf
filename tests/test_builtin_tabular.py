"""Tests of CSV and markdown-table reading and column statistics."""

from __future__ import annotations

from executor.builtin.tables import (
    describe_data,
    markdown_table,
    parse_csv,
    parse_markdown_table,
    parse_number,
    table_facts,
)


def test_csv_facts_skip_year_columns_and_sum_quantities() -> None:
    """Numeric columns get min/max/sum; a quarter column is a label, not a quantity."""
    table = parse_csv('quarter,region,revenue\n2023-Q1,DE,"1,520"\n2023-Q2,DE,1985\n')
    facts = table_facts(table)
    assert facts.columns == ["quarter", "region", "revenue"]
    assert facts.row_count == 2
    assert [(s.name, s.minimum, s.maximum, s.total) for s in facts.numeric] == [
        ("revenue", 1520.0, 1985.0, 3505.0)
    ]
    assert "| 2023-Q1" in facts.preview


def test_semicolon_csv_is_detected() -> None:
    """A semicolon-separated file is read with the right delimiter."""
    assert parse_csv("a;b\n1;2\n").rows == [["1", "2"]]


def test_markdown_table_round_trip_keeps_pipes_and_numbers() -> None:
    """A written table reads back with its `|` cells and number text unchanged."""
    text = markdown_table(["name", "value"], [["a|b", "1.10"], ["c", "001"]])
    table = parse_markdown_table(text.splitlines())
    assert table is not None
    assert table.rows == [["a|b", "1.10"], ["c", "001"]]


def test_parse_number_cells() -> None:
    """Cells with separators, currency, percent or accounting negatives are numbers."""
    assert parse_number("1,200") == 1200.0
    assert parse_number("$4.2") == 4.2
    assert parse_number("35%") == 35.0
    assert parse_number("(12)") == -12.0
    assert parse_number("Germany") is None


def test_describe_json_and_yaml() -> None:
    """JSON and YAML documents are described by their keys."""
    assert describe_data('{"a": 1, "b": 2}', is_yaml=False) == "object with 2 keys: a, b"
    assert describe_data("- x: 1\n- x: 2\n", is_yaml=True) == "list of 2 items; items have keys: x"
