"""Tests of how the offline Planner reads a request: the request spec (planner.builtin.proposal),
its deliverable, language, length and research, read by the offline rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_planner_support import context, make_home

from multiverse.spec import RequestSpec
from planner.builtin import request_spec
from planner.builtin.tasks import first_line


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return make_home(tmp_path, assets={}, style=False)


def spec(home: Path, request: str) -> RequestSpec:
    """The spec the builtin Planner reads for a request in a home without assets."""
    return request_spec(context(home, request))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Summarize the reports into a memo", "memo"),
        ("Write a market analysis report", "report"),
        ("시장 분석 보고서를 써줘", "report"),
        ("Explain the planet", "brief"),
    ],
)
def test_deliverables(home: Path, text: str, expected: str) -> None:
    """The deliverable is a whole word; a report outranks a qualifier; none said: a brief."""
    assert spec(home, text).deliverable == expected


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Write a memo", "en"),
        ("assets/q3.md 파일을 요약해서 보고서를 써줘", "ko"),
        ("123", "en"),
    ],
)
def test_script_language(home: Path, text: str, language: str) -> None:
    """The language is judged by script; Korean with English file names stays Korean."""
    assert spec(home, text).language == language


@pytest.mark.parametrize("text", ["市場レポートを書いて", "写一份市场报告", "Напиши отчёт"])
def test_a_language_without_texts_is_answered_in_english_said_once(home: Path, text: str) -> None:
    """A request in a language the engine has no texts for is answered in English, said once."""
    read = spec(home, text)
    assert read.language == "en"
    assert len([n for n in read.not_understood if "answers in English" in n.phrase]) == 1


def test_length_and_research(home: Path) -> None:
    """Lengths are read in both languages; only an explicit ask is a web search."""
    assert spec(home, "a 2-page memo").length_words == 1000
    assert spec(home, "1 page").length_words == 500
    assert spec(home, "3페이지 이내").length_words == 1500
    assert spec(home, "about 500 words").length_words == 500
    assert spec(home, "no limit").length_words is None
    research = spec(home, "Search the web for the latest competitor news").research
    assert research is not None and research.reading.phrase == "Search the web"
    assert spec(home, "웹 검색으로 최신 동향을 찾아 줘").research is not None
    assert spec(home, "a supermarket").research is None


def test_the_language_asked_wins(home: Path) -> None:
    """The language asked for wins over the script the request is written in."""
    assert spec(home, "한국어 자료를 English로 정리").language == "en"
    assert spec(home, "Summarise the English notes in Korean").language == "ko"
    assert spec(home, "영어 자료를 한국어로 요약").language == "ko"
    assert first_line("\n\n  first  \nsecond") == "first"
    assert first_line("x" * 200, 10) == "x" * 9 + "…"
