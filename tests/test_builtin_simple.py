"""Tests of SIMPLE_TASK replies of the offline engine: what it answers, and what it declines."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from executor.builtin import BuiltinExecutor
from executor.builtin.simple_lookup import (
    Profile,
    Resolved,
    asked_terms,
    best,
    csv_quotes,
    holds,
    text_quotes,
)
from multiverse.roles import Declined

FIXTURES = Path(__file__).parent / "fixtures"
BANNER = "> Produced offline by the multiverse builtin engine"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "assets", tmp_path / "assets")
    return tmp_path


@pytest.fixture
def brief_home(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "brief_assets", tmp_path / "assets")
    return tmp_path


def reply(request: str, home: Path) -> str:
    text = BuiltinExecutor().simple_task(request, home)
    assert isinstance(text, str), f"declined: {request}"
    assert text.startswith(BANNER)
    return text


def test_list_assets_in_english_and_korean(home: Path) -> None:
    """`list the assets` and `자산 목록` list assets/ with sizes and one-line summaries."""
    for request in ("list the assets", "자산 목록 보여줘", "What's in the assets folder?"):
        text = reply(request, home)
        assert "- `assets/quarterly_revenue.csv` (280 bytes) — " in text
        assert "4 file(s)" in text and "European E-Bike Market Report 2024" in text


def test_convert_csv_to_markdown(home: Path) -> None:
    """A CSV converts to a markdown table with its values unchanged."""
    text = reply("convert assets/quarterly_revenue.csv to markdown", home)
    assert "| quarter" in text and "| 2023-Q1" in text and "31.5" in text


def test_summarize_and_count_words(home: Path) -> None:
    """`summarize` gives the title, sections and cited key sentences; `count words` counts."""
    text = reply("summarize assets/market_report_2024.md", home)
    assert "European E-Bike Market Report 2024" in text
    assert "### Key sentences" in text and "_(source: `assets/market_report_2024.md`)_" in text
    assert "assets/competitor_review.txt`: 132 words" in reply(
        "count words in assets/competitor_review.txt", home
    )


def test_paths_are_confined_and_errors_are_replies(home: Path) -> None:
    """A path outside the home, a missing file or a non-CSV conversion gets a clear reply."""
    assert "outside the home" in reply("summarize ../../etc/passwd.txt", home)
    assert "does not exist" in reply("summarize assets/nope.md", home)
    assert "not a CSV file" in reply("convert assets/korea_market_ko.md to markdown", home)


@pytest.mark.parametrize(
    "request_text",
    ["make me a sandwich", "Summarise the invoices", "What is the capital of France?", "hello"],
)
def test_what_cannot_be_done_offline_is_declined(home: Path, request_text: str) -> None:
    """A request no offline capability answers is declined (it becomes a run), never a help
    text; with nothing read in it, there is no reason to give."""
    assert BuiltinExecutor().simple_task(request_text, home) == Declined()


def test_a_document_is_named_by_its_topic(brief_home: Path) -> None:
    """A topic ("the Nordic charging brief") resolves to nordic_ev_market.md by its name and
    title, and the reply says so; a Korean request resolves by its words despite particles."""
    text = reply("Summarise the Nordic charging brief for a board meeting.", brief_home)
    assert "Taken to mean `assets/nordic_ev_market.md`" in text
    assert "Nordic EV Charging Market Brief" in text and "### Sections" in text
    assert text.count("_(source: `assets/nordic_ev_market.md`)_") >= 5
    korean = reply("한국 배터리 시장 문서를 요약해줘", brief_home)
    assert "Taken to mean `assets/korea_battery_recycling.md`" in korean
    assert "한국 배터리 재활용 시장 브리프" in korean


def test_resolution_never_guesses() -> None:
    """No matching word, or two files scoring the same, names no file; a clear winner does."""
    nordic = Profile(Path("a/nordic_ev_market.md"), "nordic ev market", "Nordic EV Charging")
    korea = Profile(Path("a/korea_battery_market.md"), "korea battery market", "한국 배터리 시장")
    found = best(["nordic", "charging", "board"], [nordic, korea])
    assert found is not None and (found.path, found.matched) == (
        nordic.path,
        ("nordic", "charging"),
    )
    assert best(["germany"], [nordic, korea]) is None
    assert best(["market"], [nordic, korea]) is None  # both file names hold it: a tie
    assert best(["market", "시장"], [nordic, korea]) == Resolved(korea.path, ("market", "시장"))
    assert best([], [nordic, korea]) is None
    assert best([], [nordic]) == Resolved(nordic.path)  # the only candidate of its kind


def test_request_terms_drop_commands_and_keep_names() -> None:
    """Command and generic words go; names, content words and years stay; particles are cut."""
    assert asked_terms("What was Germany's revenue in 2023?") == ["germany", "revenue", "2023"]
    assert asked_terms("한국 배터리 시장 문서를 요약해줘") == ["한국", "배터리", "시장"]
    assert asked_terms("What's in the assets folder?") == []
    assert holds("chargers", "fast charging") and holds("배터리", "폐배터리를")
    assert not holds("germany", "Norway and Sweden")


def test_a_figure_is_quoted_where_it_stands(brief_home: Path) -> None:
    """A figure asked for by name is quoted verbatim with its file and line; a table's figure
    for a year of quarters is their sum, cited by its rows."""
    text = reply("How many fast chargers does Sweden have?", brief_home)
    assert '"Sweden had 41,200 public charging points, but only 4,300 fast chargers' in text
    assert "`assets/nordic_ev_market.md`, line 18" in text
    rows = reply("What was Norway's revenue in 2023?", brief_home)
    total = 11_829_000 + 12_432_000 + 12_726_000 + 12_719_000  # the four rows of 2023
    assert f"{total:,} EUR in 2023" in rows and "Norway" in rows
    assert "(assets/revenue_by_country.csv 4 of rows 18–30)" in rows
    korean = reply("한국 배터리 재활용 시장 규모는 얼마야?", brief_home)
    assert "1조 2천억 원" in korean and "`assets/korea_battery_recycling.md`, line 8" in korean


def test_a_figure_not_in_the_assets_is_declined(brief_home: Path) -> None:
    """No sentence or row holds every named word: declined, never computed or guessed."""
    germany = BuiltinExecutor().simple_task("What was Germany's revenue in 2023?", brief_home)
    assert isinstance(germany, Declined)
    assert germany.reason.startswith("its question cannot be answered from the tables at once")
    assert BuiltinExecutor().simple_task("노르웨이 충전소 수는?", brief_home) == Declined()


def test_quotes_are_pure_and_exact() -> None:
    """A wrapped sentence is quoted whole from its first line; a header word picks no row."""
    text = "# T\n\nIntro line.\nSweden had 4,300 fast\nchargers in 2024.\n"
    [quote] = text_quotes(["sweden", "chargers"], "a.md", text)
    assert (quote.line, quote.text) == (4, "Sweden had 4,300 fast chargers in 2024.")
    table = "country,revenue\nNorway,10\nSweden,12\n"
    assert [q.line for q in csv_quotes(["sweden", "revenue"], "r.csv", table)] == [3]
    assert csv_quotes(["revenue"], "r.csv", table) == []


def test_measure_by_label_is_summed_over_the_whole_csv(brief_home: Path) -> None:
    """A measure by a label ("revenue by country", 국가별 매출) sums the CSV's column per label,
    with the total, the rows summed and the source file."""
    for request in ("show revenue by country as a table", "국가별 매출을 표로 보여줘"):
        text = reply(request, brief_home)
        assert "revenue_eur by country (sum of 12 rows each)" in text
        assert "| Norway" in text and "**Total**" in text
        assert "Summed over 48 of the 48 rows of `assets/revenue_by_country.csv`" in text


def test_a_csv_named_by_topic_converts(brief_home: Path) -> None:
    """A CSV named by its topic ("the revenue CSV", 매출 CSV) is the one whose name holds it."""
    for request in ("Convert the revenue CSV to a table", "매출 CSV를 표로 변환해줘"):
        text = reply(request, brief_home)
        assert "`assets/revenue_by_country.csv` as a table" in text and "| 2024-Q4" in text
