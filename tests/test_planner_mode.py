"""Tests of the offline mode heuristic (planner.builtin)."""

from __future__ import annotations

import pytest

from multiverse.roles import Mode, ModeDecision
from planner.builtin import decide_mode, settle_mode, strip_front_matter


@pytest.mark.parametrize(
    "request_text",
    [
        "list the assets",
        "Show assets/q3.md",
        "convert assets/a.csv to markdown",
        "count the files in assets",
        "summarize assets/q3.md",
        "Summarise the reports",
        "what is in assets/?",
        "assets 목록 보여줘",
        "assets/a.csv를 마크다운으로 변환해줘",
        "q3.md 요약해줘",
    ],
)
def test_short_commands_are_simple_tasks(request_text: str) -> None:
    """A one-line command with a simple verb and no deliverable is a SIMPLE_TASK."""
    decision = decide_mode(request_text, has_past_runs=True)
    assert decision.mode is Mode.SIMPLE_TASK
    assert "simple command" in decision.reason


@pytest.mark.parametrize(
    ("request_text", "why"),
    [
        ("summarize the three reports into a memo", "deliverable: 'memo'"),
        ("show me a strategy for Q4", "deliverable: 'strategy'"),
        ("시장 보고서 목록 보여줘", "deliverable: '보고서'"),
        ("매출 분석 요약해줘", "deliverable: '분석'"),
        ("Analyse these three reports", "does not start with a simple command"),
        ("list the assets\nand then compare them", "2 lines"),
        ("list " + "word " * 20, "more than 15"),
        ("   ", "empty"),
    ],
)
def test_structured_requests_are_runs(request_text: str, why: str) -> None:
    """Anything else is a run, and the reason names the rule that fired."""
    decision = decide_mode(request_text, has_past_runs=False)
    assert decision.mode is Mode.INITIAL_RUN
    assert why in decision.reason


def test_past_runs_make_a_continuous_run() -> None:
    """A structured request with past runs is a CONTINUOUS_RUN."""
    decision = decide_mode("Write a 2-page market-entry memo from the assets", True)
    assert decision.mode is Mode.CONTINUOUS_RUN
    assert "past runs exist" in decision.reason


def test_front_matter_does_not_count_as_lines() -> None:
    """A front-matter block is ignored when counting lines and words."""
    text = "---\nmode: simple\n---\nlist the assets\n"
    assert strip_front_matter(text) == "list the assets\n"
    assert decide_mode(text, False).mode is Mode.SIMPLE_TASK


def test_a_models_simple_verdict_stands_only_without_structured_evidence() -> None:
    """A short question may be simple; a deliverable, lines or many words never are."""
    said = ModeDecision(mode=Mode.SIMPLE_TASK, reason="a quick question")
    question = "Which country sells the most e-bikes in assets/market_report_2024.md?"
    assert settle_mode(said, question, False).mode is Mode.SIMPLE_TASK
    memo = "Write a one-page memo on the e-bike market."
    settled = settle_mode(said, memo, True)
    assert settled.mode is Mode.CONTINUOUS_RUN and "deliverable: 'memo'" in settled.reason
