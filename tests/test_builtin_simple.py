"""Tests of SIMPLE_TASK replies of the offline engine."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from executor.builtin import BuiltinExecutor


@pytest.fixture
def home(tmp_path: Path) -> Path:
    shutil.copytree(Path(__file__).parent / "fixtures" / "assets", tmp_path / "assets")
    return tmp_path


def reply(request: str, home: Path) -> str:
    text = BuiltinExecutor().simple_task(request, home)
    assert text.startswith("> Produced offline by the multiverse builtin engine")
    return text


def test_list_assets_in_english_and_korean(home: Path) -> None:
    """`list the assets` and `자산 목록` both list assets/ with sizes."""
    for request in ("list the assets", "자산 목록 보여줘"):
        text = reply(request, home)
        assert "- `assets/quarterly_revenue.csv` (280 bytes)" in text
        assert "4 file(s)" in text


def test_convert_csv_to_markdown(home: Path) -> None:
    """A CSV converts to a markdown table with its values unchanged."""
    text = reply("convert assets/quarterly_revenue.csv to markdown", home)
    assert "| quarter" in text and "| 2023-Q1" in text and "31.5" in text


def test_summarize_and_count_words(home: Path) -> None:
    """`summarize` gives the catalog summary, `count words in` counts words and lines."""
    assert "European E-Bike Market Report 2024" in reply(
        "summarize assets/market_report_2024.md", home
    )
    assert "assets/competitor_review.txt`: 132 words" in reply(
        "count words in assets/competitor_review.txt", home
    )


def test_paths_are_confined_and_errors_are_replies(home: Path) -> None:
    """A path outside the home, a missing file or a non-CSV conversion gets a clear reply."""
    assert "outside the home" in reply("summarize ../../etc/passwd.txt", home)
    assert "does not exist" in reply("summarize assets/nope.md", home)
    assert "not a CSV file" in reply("convert assets/korea_market_ko.md to markdown", home)


def test_unknown_request_lists_what_is_understood(home: Path) -> None:
    """Anything else gets the list of simple commands the offline engine understands."""
    text = reply("make me a sandwich", home)
    assert "understands these simple commands" in text and "convert assets/" in text
