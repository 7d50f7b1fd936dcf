"""The rules that read what a request asks (offline.asks), English and Korean."""

from __future__ import annotations

import pytest

from offline import asks


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("write a two-page market-entry memo", 1000),
        ("a 2-page memo", 1000),
        ("keep it to one page", 500),
        ("in 300 words", 300),
        ("a short note on Finland", 300),
        ("한 페이지로 작성해 주세요", 500),
        ("3페이지 보고서", 1500),
        ("500단어로", 500),
        ("half a page", 250),
    ],
)
def test_lengths_in_words(text: str, words: int) -> None:
    """Pages count 500 words; short forms 300; Korean counts too."""
    found = asks.length_asked(text)
    assert found is not None and found.words == words


def test_an_instruction_edited_to_fewer_pages_is_read_by_its_pages() -> None:
    """ "1 page (about 1,000 words)" after a hand edit means one page."""
    found = asks.length_asked("1 page (about 1,000 words), ±15 %.", pages_first=True)
    assert found is not None and found.words == 500


def test_no_length_is_not_a_length() -> None:
    """A request naming no length gets None, and the defaults depend on the kind asked."""
    assert asks.length_asked("Summarise the reports") is None
    assert asks.default_length(("note", "note")).words == 500
    assert asks.default_length(("memo", "memo")).words == 1000


@pytest.mark.parametrize(
    ("text", "who"),
    [
        ("a memo for a charging-network investor, with a chart", "a charging-network investor"),
        ("Summarise the Nordic brief for a board meeting.", "a board meeting"),
        ("a market outlook for Germany", None),
        ("charts for each country", None),
        ("투자자를 위한 한 페이지 메모", "투자자"),
        ("이사회용 요약", "이사회"),
    ],
)
def test_audiences(text: str, who: str | None) -> None:
    """Only a phrase ending in a word for people or an occasion is an audience."""
    assert asks.audience_asked(text) == who


def test_outside_information_is_asked_explicitly() -> None:
    """ "market" is not a web search; "latest news" and "search the web" are."""
    assert asks.outside_asked("a market-entry memo for an investor") is None
    assert asks.outside_asked("with the latest news on chargers") is not None
    assert asks.outside_asked("search the web too") is not None
    assert asks.outside_asked("최신 뉴스도 포함") is not None


def test_charts_and_leave_outs() -> None:
    """Charts are a measure by a dimension; a leave-out stops at the next clause."""
    assert asks.chart_asks("a chart of revenue by country") == [asks.ChartAsk("revenue", "country")]
    assert asks.chart_asks("국가별 매출을 차트로") == [asks.ChartAsk("매출", "국가")]
    assert asks.leave_outs("Leave out the Korean battery report and make it one page.") == [
        "the Korean battery report"
    ]
    assert asks.charts_refused("no chart, please") and not asks.charts_refused("a chart")
    assert asks.language_asked("leave out the Korean report") is None
    assert asks.language_asked("write it in Korean") == "Korean"


def test_deliverables_prefer_the_document_over_the_method() -> None:
    """ "market analysis report" asks for a report; "분석 보고서" too."""
    assert asks.deliverable_asked("a market analysis report") == ("report", "report")
    assert asks.deliverable_asked("시장 분석 보고서를 작성") == ("report", "보고서")
