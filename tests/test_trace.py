"""Every number a deliverable states is looked up in its sources and computed facts; so is
every name it writes mid-sentence."""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from multiverse.trace import Known, claims, unsourced_names, untraced, with_untraced

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


FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize(("written", "traced"), [
    ("The market reached 120 billion won in 2023, up 35%.", True),  # 1,200억 원
    ("Samchuly's sales were KRW 105 billion, a 32% share.", True),  # 1,050억 원
    ("The market is expected to reach 200 billion won by 2026.", True),  # 2,000억 원
    ("The market reached 0.12 trillion won.", True),
    ("The market reached 1.2 trillion won in 2023.", False),  # what the local model wrote
    ("Samchuly reported sales of 1.05 trillion won.", False),
    ("The market reached 1.3 trillion won.", False),
    ("About 180,000 units were sold.", True),  # 18만 대, written out whole
    ("About 18 million units were sold.", False),  # what the local model wrote
    ("About 180,001 units were sold.", False),
    ("The market reached 120,000,000,000 won.", True),
])  # fmt: skip
def test_an_amount_converted_from_korean_units_is_traced_by_what_it_means(
    written: str, traced: bool
) -> None:
    """A Korean source writes 1,200억 원; an English deliverable says 120 billion won (traced) or
    1.2 trillion won (ten times it: not); the number is judged with its scale word."""
    source = (FIXTURES / "assets" / "korea_market_ko.md").read_text(encoding="utf-8")
    assert (not untraced(written, Known.of([source]))) is traced


@given(st.integers(min_value=1, max_value=999_999), st.sampled_from([0, 1, 2]))
def test_an_amount_in_eok_is_traced_in_billions_and_millions(eok: int, places: int) -> None:
    """n억 (n × 10⁸) written in billions or millions at any precision is traced."""
    source = f"매출은 {eok:,}억 원이었다."
    known = Known.of([source])
    billions = Decimal(eok).scaleb(-1)
    printed = f"{billions.quantize(Decimal(1).scaleb(-places)):,}"
    significant = len(printed.replace(",", "").replace(".", "").lstrip("0"))
    if significant >= 2 or billions == billions.quantize(Decimal(1).scaleb(-places)):
        assert not untraced(f"Sales were {printed} billion won.", known)
    assert not untraced(f"Sales were {eok * 100:,} million won.", known)
    assert not untraced(f"Sales were {eok * 100_000_000:,} won.", known)
    assert untraced(f"Sales were {eok * 100_000_000 + 1:,} won.", known)


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


# -- names ---------------------------------------------------------------------------------

CORPUS = Path(__file__).parent / "corpus"
TABLES = yaml.safe_load((CORPUS / "tables.yaml").read_text(encoding="utf-8"))["tables"]


def _category_values(meta: dict[str, object]) -> tuple[str, list[str]]:
    """A corpus table's text and the capitalised values of its first category column."""
    text = (CORPUS / str(meta["file"])).read_text(encoding="utf-8")
    columns = meta["columns"]
    assert isinstance(columns, list)
    category = next((c["name"] for c in columns if c["role"] == "category"), None)
    if category is None:
        return text, []
    rows = list(csv.DictReader(io.StringIO(text)))
    values = sorted({row[category] for row in rows if row.get(category)})
    return text, [v for v in values if re.fullmatch(r"[A-Z][a-z]+(?: [A-Z][a-z]+)*", v)][:6]


WITH_NAMES = [name for name, meta in TABLES.items() if _category_values(meta)[1]]


@pytest.mark.parametrize("table", WITH_NAMES)
def test_names_a_real_table_holds_are_sourced_and_an_invented_one_is_not(table: str) -> None:
    """Over the corpus tables whose categories are names (countries, states, companies…): a
    memo naming the table's own values mid-sentence names nothing unsourced; one more name
    that no source holds is the one listed, whole."""
    source, values = _category_values(TABLES[table])
    memo = "# Memo\n\n" + "".join(
        f"The figure for {value} is in the table, and it differs from the others.\n"
        for value in values
    )
    assert unsourced_names(memo, [source]) == []
    invented = memo + "The market is led by Zorvex Holdings, the largest of them.\n"
    assert unsourced_names(invented, [source]) == ["Zorvex Holdings"]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        # sentence-initial words, headings, a table's header, bold labels: not judged
        ("# Quarterly Outlook\n\nRevenue grew. However, costs rose.\n\n| Region | Revenue |\n"
         "|---|---|\n| North | 5 |\n\n**Key findings:** revenue grew.", []),
        # a word the text also writes in lower case is a word in title case, not a name
        ("The Revenue of the North grew, and revenue is what matters.", []),
        # abbreviations, months and one-letter words are not names
        ("It grew in January and in Q1, as GDP and USD show, I think.", []),
        # invented names mid-sentence, in English and among Korean words
        ("Sales in the North were led by Globex and by Initech Systems.",
         ["Globex", "Initech Systems"]),
        ("북부 매출은 Globex가 이끌었다.", ["Globex"]),
        # a name a known text abbreviates is known; a sentence's end ends a name
        ("Spending in the United States grew. It grew in the European Union too.", []),
        ("Spending in the United Kingdom grew. It grew in Ruritania Province too.",
         ["United Kingdom", "Ruritania Province"]),
        ("Sales of U.S. Steel and of J. Smith Holdings grew.", ["J. Smith Holdings"]),
        # named without a possessive ending
        ("Sales grew where Globex's stores and the Initech Systems' vans went.",
         ["Globex", "Initech Systems"]),
        # known in any case: "north" of the source is the North of the memo
        ("Most sales came from the North.", []),
    ],
)
def test_names_are_judged_mid_sentence_against_every_known_text(
    text: str, names: list[str]
) -> None:
    """Only capitalised words mid-sentence are judged, against the known texts in any case."""
    source = "region,revenue\nnorth,5\nsouth,3\n"
    assert unsourced_names(text, [source, "A memo on US and EU revenue, U.S. Steel's"]) == names


def test_a_number_in_exponent_form_is_known_whole_and_its_parts_are_not() -> None:
    """A table's 1e-05 is the number 0.00001 (either sign); its "1" and "05" are no numbers
    of the source, so a text's 5 is not traced to it."""
    known = Known.of(["rate,share\nA,1e-05\nB,2.5E+3\n"])
    assert known.holds("0.00001") and known.holds("-0.00001") and known.holds("2,500")
    assert not known.holds("5") and not known.holds("3")


# Each currency as texts write it: before the number (a sign, a code) or after it (a code, an
# English word, a Korean word).
NOTATIONS = {
    "EUR": ("€{n}", "EUR {n}", "{n} EUR", "{n} euros", "{n} 유로"),
    "USD": ("${n}", "US${n}", "USD {n}", "{n} dollars", "{n} 달러"),
    "GBP": ("£{n}", "GBP {n}", "{n} GBP"),
    "JPY": ("¥{n}", "JPY {n}", "{n} yen", "{n}엔"),
    "KRW": ("₩{n}", "KRW {n}", "{n} won", "{n}원", "{n} 원"),
}


@given(
    st.decimals(min_value=Decimal("0.1"), max_value=Decimal(99_999), places=1),
    st.sampled_from(["", " million", " billion", "억", "만"]),
    st.sampled_from(sorted(NOTATIONS)), st.sampled_from(sorted(NOTATIONS)),
    st.integers(min_value=0, max_value=4), st.integers(min_value=0, max_value=4),
)  # fmt: skip
def test_an_amount_is_traced_in_the_currency_its_sources_give_it(
    value: Decimal, scale: str, given_in: str, written_in: str, source_way: int, claim_way: int
) -> None:
    """An amount the sources give in one currency is traced written in that currency in any
    notation, and bare; written in another, it is listed; given in both, either is traced;
    given only bare (a table's cell under its header), no currency can be judged."""
    number = f"{value:,}{scale}"

    def written(currency: str, way: int) -> str:
        notations = NOTATIONS[currency]
        notation = notations[way % len(notations)]
        if scale.startswith(" "):  # after an English scale word, a Korean one follows a space
            notation = notation.replace("}원", "} 원").replace("}엔", "} 엔")
        return notation.format(n=number)

    source = f"Revenue was {written(given_in, source_way)} last year."
    claim = f"Revenue reached {written(written_in, claim_way)}."
    known = Known.of([source])
    assert (not untraced(claim, known)) is (given_in == written_in)
    assert not untraced(f"Revenue reached {number}.", known)
    both = Known.of([source, f"That is {written(written_in, claim_way + 1)}."])
    assert not untraced(claim, both)
    assert not untraced(claim, Known.of([f"| Revenue |\n|---|\n| {number} |"]))


@pytest.mark.parametrize(("written", "traced"), [
    ("Germany remains the largest market with €6.9 billion of revenue.", True),
    ("The Netherlands follows with KRW 3.2 billion.", False),  # what the local model wrote
    ("The market should exceed KRW 26 billion by 2027.", False),
    ("Average selling prices rose to KRW 3,600 per bike.", False),
    ("Average selling prices rose to 3,600 euros per bike.", True),
    ("The Korean market reached KRW 120 billion in 2023.", True),  # 1,200억 원
    ("The Korean market reached €120 billion in 2023.", False),
    # 1.1 is only a cell of a table under "€ bn": no currency is written at it to judge by.
    ("Italy's revenue was KRW 1.1 billion.", True),
])  # fmt: skip
def test_the_local_models_currency_slips_are_listed(written: str, traced: bool) -> None:
    """The local model, writing from a European and a Korean report, put the European figures
    in won: an amount the sources give only in euros is listed when written in won."""
    sources = [(FIXTURES / "assets" / name).read_text(encoding="utf-8")
               for name in ("market_report_2024.md", "korea_market_ko.md")]  # fmt: skip
    assert (not untraced(written, Known.of(sources))) is traced
