"""Tests of figure finding in English and Korean text."""

from __future__ import annotations

from executor.builtin.text import find_figures, unit_family


def values(text: str) -> list[tuple[str, str]]:
    return [(f.value, f.kind) for f in find_figures(text)]


def test_korean_amounts_and_percents() -> None:
    """Korean amounts like `1,200억 원` are money with their magnitude, `35%` a percent."""
    found = find_figures("2023년 시장 규모는 1,200억 원으로 전년 대비 35% 성장했다.")
    assert [(f.value, f.kind) for f in found] == [
        ("2023년", "year"),
        ("1,200억 원", "money"),
        ("35%", "percent"),
    ]
    assert found[1].magnitude == 1.2e11


def test_compound_korean_amount_is_one_figure() -> None:
    """`3조 5,000억 원` is read as one amount of 3.5 trillion won."""
    (figure,) = find_figures("총 3조 5,000억 원 규모")
    assert figure.value == "3조 5,000억 원"
    assert figure.magnitude == 3.5e12


def test_english_currency_scale_and_count_units() -> None:
    """Currency with a scale word, counts with a unit noun, and fiscal years are figures."""
    assert values("Revenue was $4.2 billion in FY2023 with 2.3 million users and 450 stores.") == [
        ("$4.2 billion", "money"),
        ("FY2023", "year"),
        ("2.3 million users", "count"),
        ("450 stores", "count"),
    ]


def test_bare_numbers_and_identifiers_are_not_figures() -> None:
    """A bare number, a task id or a run id holds no figure."""
    assert values("We read 3 reports for task P1-S01-T01 of run-20241121-000000-001.") == []


def test_unit_family_groups_like_with_like() -> None:
    """Won amounts, euro amounts and percents fall in different families."""
    assert unit_family("1,200억 원", "money") == "KRW"
    assert unit_family("€6.9 billion", "money") == "EUR"
    assert unit_family("$740 million", "money") == "USD"
    assert unit_family("35%", "percent") == "%"
