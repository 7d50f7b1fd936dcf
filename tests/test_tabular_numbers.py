"""One number reader for cells and one formatter for everything printed."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from multiverse.tabular import format_number, numbers_in, parse_number


@pytest.mark.parametrize(("text", "value", "decimals"), [
    ("1,234", 1234.0, 0), ("9.7%", 9.7, 1), ("$1,234.50", 1234.5, 2), ("(12)", -12.0, 0),
    ("₩1,000", 1000.0, 0), ("-3.25", -3.25, 2), ("US$ 5", 5.0, 0), ("1.5e3", 1500.0, 0),
    ("1,000원", 1000.0, 0), ("−4", -4.0, 0), ("12.5 %", 12.5, 1), ("+7", 7.0, 0),
    # A float written whole (its repr): the digits past 15 significant ones are noise.
    ("23348.139730000006", 23348.139730000006, 5), ("0.30000000000000004", 0.30000000000000004, 1),
    ("1030.592226", 1030.592226, 6), ("4.000000000000001", 4.000000000000001, 0),
])
def test_cells_read_as_numbers(text: str, value: float, decimals: int) -> None:
    """Thousands separators, percent signs, currencies and accounting negatives are numbers."""
    cell = parse_number(text)
    assert cell is not None and cell.value == value and cell.decimals == decimals


@pytest.mark.parametrize("text", ["", "NA", "n/a", "-", "..", "abc", "12 apples", "1,23,4", "Q1"])
def test_texts_and_missing_markers_are_not_numbers(text: str) -> None:
    """Missing markers and words are not read as numbers."""
    assert parse_number(text) is None


def test_a_decimal_comma_reads_when_the_column_uses_one() -> None:
    """`3,5` is three and a half in a column that writes decimals with a comma."""
    cell = parse_number("1.234,5", decimal_comma=True)
    assert cell is not None and cell.value == 1234.5 and cell.decimals == 1


@pytest.mark.parametrize(("value", "decimals", "printed"), [
    (9.7012, None, "9.70"), (21933, 0, "21,933"), (1234.5678, None, "1,234.57"),
    (0.012345, None, "0.012"), (-0.0001, 2, "0.00"), (5.0, 1, "5.0"), (1e7, 0, "10,000,000"),
    (None, None, "n/a"),
])
def test_numbers_print_one_way(value: float | None, decimals: int | None, printed: str) -> None:
    """Thousands separators, the source's precision, two decimals for computed values."""
    assert format_number(value, decimals) == printed


def test_signed_numbers_carry_their_sign() -> None:
    """A change prints its plus sign."""
    assert format_number(12.5, 1, signed=True) == "+12.5"
    assert format_number(-12.5, 1, signed=True) == "-12.5"


@given(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False),
       st.one_of(st.none(), st.integers(0, 4)))
def test_every_printed_number_is_found_again(value: float, decimals: int | None) -> None:
    """numbers_in finds a printed number exactly as printed, and it reads back as that value."""
    printed = format_number(value, decimals)
    assert numbers_in(f"It was {printed} % in 1982 (rows 94–97).") == [printed, "1982", "94", "97"]
    cell = parse_number(printed)
    assert cell is not None
    assert cell.value == pytest.approx(float(printed.replace(",", "")))


@given(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False).filter(lambda x: abs(x) > 1e-6))
def test_a_float_written_whole_prints_as_meant_without_its_noise(number: float) -> None:
    """A cell holding a float's repr (what a program writing floats leaves in a CSV) is read at
    the precision it was meant with: its 15-significant-digit value, never the noise past it,
    whether it is read alone or in a column (`profile` reads a column's cells another way); it
    prints as that value, rounded to seven significant digits at most."""
    import pandas as pd

    from multiverse.tabular.cells import read_numbers
    from multiverse.trace import Known

    text = repr(number)
    cell = parse_number(text)
    assert cell is not None
    # At most the decimals of the 15-digit value (a repr's "1.0" keeps its one).
    assert cell.decimals <= max(1, -Decimal(f"{number:.15g}").normalize().as_tuple().exponent)
    column = read_numbers(pd.Series([text], dtype=object))
    assert column.decimals == min(cell.decimals, 6)  # a column's precision is capped at 6
    printed = format_number(cell.value, cell.decimals)
    assert float(printed.replace(",", "")) == float(f"{number:.15g}")
    assert Known.of([text]).holds(printed)


@given(st.floats(min_value=-1e9, max_value=1e9, allow_nan=False), st.integers(0, 12))
def test_a_value_printed_shorter_than_its_cell_traces_to_it(value: float, places: int) -> None:
    """However few decimals it is printed with, a cell's value is found in its own text by the
    trace of every number a deliverable states (a rounding of it, never another number)."""
    from multiverse.trace import Known

    cell = f"{value:.{places}f}"
    parsed = parse_number(cell)
    assert parsed is not None
    assert Known.of([cell]).holds(format_number(parsed.value, parsed.decimals))
