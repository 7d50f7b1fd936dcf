"""Tests of figure finding in English and Korean text."""

from __future__ import annotations

import math
import random
import re

import pytest

from executor.builtin.text import find_figures, unit_family, with_readings


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


KOREAN_SCALES = ("만", "억", "조", "천만", "백만", "천억", "백억", "천")
KOREAN_UNITS = (("원", "won"), ("달러", "dollars"), ("명", "people"), ("대", "units"), ("", ""))
ENGLISH_AMOUNTS = (("€{n} billion", "유로"), ("${n} million", "달러"), ("{n} million users", "명"),
                   ("USD {n} trillion", "달러"), ("{n} billion", ""))  # fmt: skip


SCALE_WORDS = {"trillion": 1e12, "billion": 1e9, "million": 1e6, "조": 1e12, "억": 1e8, "만": 1e4}
UNIT_READINGS = {
    "en": {korean: english for korean, english in KOREAN_UNITS if korean},
    "ko": {"€": "유로", "$": "달러", "USD": "달러", "users": "명"},
}


def reading(said: str) -> tuple[float, str]:
    """A reading's magnitude and unit, parsed apart from the code under test: "120 billion
    won" is (1.2e11, "won"), "185억 유로" (1.85e10, "유로")."""
    found = re.fullmatch(r"([\d,.]+) ?(trillion|billion|million|조|억|만)?(?: (\S+))?", said)
    assert found is not None, said
    scale = SCALE_WORDS[found[2]] if found[2] else 1.0
    return float(found[1].replace(",", "")) * scale, found[3] or ""


def number(rng: random.Random) -> str:
    """A number as a source writes one: 7, 1,200, 18.5, 3,050.25."""
    whole = rng.choice((rng.randint(1, 9), rng.randint(10, 999), rng.randint(1000, 99_999)))
    fraction = rng.choice(("", "", f".{rng.randint(1, 9)}", f".{rng.randint(10, 99)}"))
    return f"{whole:,}{fraction}"


@pytest.mark.parametrize("seed", range(40))
def test_a_korean_amount_is_read_in_english_and_an_english_one_in_korean(seed: int) -> None:
    """Generated amounts in running text: for English, each amount in Korean scale words is
    followed by its reading in English ones, and that reading, found again, is the same
    magnitude in the same unit; for Korean, the other way round. Percents, years and amounts
    already in the writing language's scale words are left as they are."""
    rng = random.Random(seed)
    korean = [f"{number(rng)}{rng.choice(KOREAN_SCALES)} {unit}".strip()
              for unit, _ in rng.sample(KOREAN_UNITS, 3)]  # fmt: skip
    english = [form.format(n=number(rng)) for form, _ in rng.sample(ENGLISH_AMOUNTS, 3)]
    plain = f"{rng.randint(1, 99)}% in {rng.randint(1990, 2030)}"
    text_ = "2023년 시장은 " + "이고, ".join(korean) + f"였다. {plain}. " + ", ".join(english) + "."
    for lang, glossed, left in (("en", korean, english), ("ko", english, korean)):
        read = with_readings(text_, lang)
        for amount in glossed:
            (original,) = find_figures(amount)
            found = re.search(re.escape(amount) + r" \(= ([^)]+)\)", read)
            assert found is not None, (lang, amount, read)
            value, unit = reading(found[1])
            assert math.isclose(value, original.magnitude, rel_tol=1e-9), found[1]
            units = UNIT_READINGS[lang]
            said = next((units[word] for word in original.unit.split() if word in units), "")
            assert unit == said, found[1]
        assert all(f"{amount} (=" not in read for amount in left)
        assert plain in read and read.count("(=") == len(glossed)
        # Read again (a working text that copied its sources' readings): one reading each.
        assert with_readings(read, lang) == read
    assert with_readings(text_, "fr") == text_


def test_the_local_models_misreadings_are_given_their_right_readings() -> None:
    """What the local model wrote for the Korean report (1.2 trillion won for 1,200억 원,
    18 million units for 18만 대, 1.05 billion won for 1,050억 원): the readings code gives."""
    read = with_readings("시장 규모는 1,200억 원, 약 18만 대, 삼천리자전거 매출 1,050억 원.", "en")
    assert "1,200억 원 (= 120 billion won)" in read
    assert "18만 대 (= 180,000 units)" in read
    assert "1,050억 원 (= 105 billion won)" in read
