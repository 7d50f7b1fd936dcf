"""Tests of the final report's title and HTML rendering."""

from __future__ import annotations

from executor.builtin.charts import markdown_to_html, report_title


def test_title_from_heading_or_first_sentence() -> None:
    """The title is the request's first heading, else its first sentence."""
    assert report_title("# Market memo\n\nWrite it.") == "Market memo"
    assert report_title("Analyse the reports. Then write a memo.") == "Analyse the reports"
    assert report_title("---\nmode: run\n---\n시장 분석 보고서를 작성해 주세요.") == (
        "시장 분석 보고서를 작성해 주세요"
    )
    assert report_title("") == "Report"


def test_raw_html_is_escaped() -> None:
    """Raw HTML blocks and spans in markdown render as text."""
    page = markdown_to_html("Hi <img src=x onerror=alert(1)>\n\n<div onclick='x()'>a</div>\n")
    assert "<img" not in page and "<div" not in page and "&lt;img" in page


def test_tables_render() -> None:
    """Pipe tables become HTML tables."""
    assert "<table>" in markdown_to_html("| a | b |\n|---|---|\n| 1 | 2 |\n")
