"""Every number a deliverable states is looked up in its sources and computed facts."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from multiverse.trace import Known, claims, untraced, with_untraced

SOURCE = """| year | unemp | payroll |
|---|---|---|
| 1982 | 9.6999 | 89566 |
| 2017 | 4.35 | 146,624 |
Revenue grew 12 % in 2024 to EUR 40 million."""


def test_numbers_found_in_the_sources_are_traced_at_their_printed_precision() -> None:
    """A rounded mean, a grouped cell, a percent and a year are found; an invented one is not."""
    text = (
        "# Brief\n\n"
        "- Unemployment averaged 9.70 % in 1982 (assets/macro.csv rows 94–97).\n"
        "- Payrolls were 146,624 thousand in 2017 and 89,566 in 1982.\n"
        "- Revenue grew 12% to EUR 40 million; costs rose 7%.\n"
    )
    missing = untraced(text, Known.of([SOURCE]))
    assert [item.number for item in missing] == ["7"]
    assert "costs rose 7%" in missing[0].context


def test_citations_paths_code_links_and_list_numbers_are_not_claims() -> None:
    """Row numbers, file names, code, links and a list's numbering are not traced."""
    text = (
        "1. See `x = 55` and [the file](assets/2031_report.md) (assets/t.csv row 52).\n"
        "2. Run run-20261127-101500-001 wrote outputs/run-1/chart_3.svg.\n"
        "3. (tables/x.csv rows 2–204)\n"
    )
    assert claims(text) == []


def test_a_small_whole_number_must_be_exact() -> None:
    """`10` is its own claim: it does not pass for a rounded 9.7 (a large one may round)."""
    known = Known.of(["9.7 and 21933.6"])
    assert not known.holds("10")
    assert known.holds("21,934")


@given(st.decimals(min_value=-1e9, max_value=1e9, places=4, allow_nan=False, allow_infinity=False),
       st.integers(min_value=0, max_value=4))  # fmt: skip
def test_a_value_printed_at_any_precision_is_traced(value: Decimal, places: int) -> None:
    """A source value rounded to 0–4 decimals (grouped by thousands) is always found."""
    quantum = Decimal(1).scaleb(-places)
    printed = f"{value.quantize(quantum):,}"
    if places == 0 and abs(value.quantize(quantum)) < 1000:
        printed = f"{value:,}"  # small whole numbers are traced exactly
    assert not untraced(f"The value was {printed} that year.", Known.of([f"| {value} |"]))


def test_the_untraced_numbers_close_the_deliverable_in_a_section_of_their_own() -> None:
    """Each number found nowhere is listed with its line under the heading; none: unchanged."""
    text = "# Memo\n\nPayrolls were 146,624 thousand; costs rose 7%.\n"
    closed, missing = with_untraced(text, Known.of([SOURCE]), "Numbers not found", "Unsourced:")
    assert [item.number for item in missing] == ["7"]
    assert closed.endswith("## Numbers not found\n\nUnsourced:\n\n"
                           "- **7** — Payrolls were 146,624 thousand; costs rose 7%.\n")
    clean = "# Memo\n\nPayrolls were 146,624 thousand.\n"
    assert with_untraced(clean, Known.of([SOURCE]), "x", "y") == (clean, [])


@given(
    whole=st.integers(min_value=10, max_value=999_999),
    tenths=st.integers(min_value=0, max_value=9),
    after=st.sampled_from(["로", "억 원", "명", "%로", "배", "년에", " 달러", "万円"]),
)
def test_a_number_is_read_whole_before_a_word_of_another_script(
    whole: int, tenths: int, after: str
) -> None:
    """Korean writes its particles and units right after a number ("16.2로", "1,200억"): the
    number is read whole, grouped or not, and traced as its source states it."""
    printed = f"{whole:,}.{tenths}"
    text = f"매출은 {printed}{after} 늘었다."
    assert [number for number, _ in claims(text)] == [printed]
    assert untraced(text, Known.of([f"revenue {whole}.{tenths}"])) == []


def test_no_part_of_a_number_or_of_a_code_is_read() -> None:
    """"2.1m", "Q1", "v2" and "2023Q4" give no "2" or "1"; a number with its unit apart does."""
    assert claims("It sold 2.1m bikes in Q1 with v2, by 2023Q4.") == []
    assert [number for number, _ in claims("It sold 2.1 m bikes.")] == ["2.1"]
    # A CSV's commas separate cells: each is a number of its own.
    assert [number for number, _ in claims("Korea,1957,1487.59")] == ["1957", "1487.59"]
