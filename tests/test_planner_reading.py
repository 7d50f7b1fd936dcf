"""Tests of the offline request reading (planner.builtin.reading)."""

from __future__ import annotations

import pytest

from planner.builtin.reading import (
    chart_words,
    deliverables,
    first_line,
    length_limit,
    outside_words,
    read_request,
    script_language,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Summarize the reports into a memo", ["memo"]),
        ("Write a market analysis report", ["report"]),
        ("Draft a go-to-market strategy", ["strategy"]),
        ("Make slides and a memo", ["memo", "presentation"]),
        ("시장 분석 보고서를 써줘", ["report"]),
        ("경쟁 전략을 정리해줘", ["strategy"]),
        ("Explain the planet", []),
    ],
)
def test_deliverables(text: str, expected: list[str]) -> None:
    """Deliverables are whole singular words; a memo/report/presentation outranks qualifiers."""
    assert deliverables(text) == expected


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Write a memo", "English"),
        ("assets/q3.md 파일을 요약해서 보고서를 써줘", "Korean"),
        ("市場レポートを書いて", "Japanese"),
        ("写一份市场报告", "Chinese"),
        ("Напиши отчёт", "Russian"),
        ("123", "English"),
    ],
)
def test_script_language(text: str, language: str) -> None:
    """The language is judged by script; Korean with English file names stays Korean."""
    assert script_language(text) == language


def test_length_and_words() -> None:
    """Lengths, visuals, outside information and negations are read in both languages."""
    assert length_limit("a 2-page memo") == "at most 2 pages"
    assert length_limit("1 page") == "at most 1 page"
    assert length_limit("3페이지 이내") == "at most 3 pages"
    assert length_limit("about 500 words") == "at most 500 words"
    assert length_limit("no limit") is None
    assert chart_words("매출 그래프와 차트") == ["차트", "그래프"]
    assert chart_words("a charter school") == ["chart"]  # word start: a documented limit
    assert outside_words("latest competitor news") == ["competitor", "latest", "news"]
    assert outside_words("a supermarket") == []


def test_read_request_defaults() -> None:
    """A request naming no deliverable asks for a report; the language asked for wins."""
    reading = read_request("한국어 자료를 English로 정리")
    assert reading.deliverables == ["report"]
    assert reading.language == "English"
    assert read_request("Summarise the English notes in Korean").language == "Korean"
    assert read_request("영어 자료를 한국어로 요약").language == "Korean"
    assert first_line("\n\n  first  \nsecond") == "first"
    assert first_line("x" * 200, 10) == "x" * 9 + "…"
