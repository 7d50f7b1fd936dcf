"""Tests of the learning context: tokenizing, BM25 ranking of past runs, and its markdown file."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25L

from multiverse.errors import TableError
from multiverse.home import Home
from multiverse.models import ProcessRun
from multiverse.roles import LearningContext, Mode, PastRun
from orchestrator.learning import (
    NO_PAST_RUNS,
    NO_SIMILAR_RUNS,
    learning_context_path,
    read_learning_context,
    render_learning_context,
    write_learning_context,
)
from orchestrator.past_runs import rank_past_runs, tokenize


def run(number: int, request: str) -> ProcessRun:
    """A past run whose id grows with `number` (a higher number is a newer run)."""
    return ProcessRun(
        run_id=f"run-20260101-{number // 1000:06d}-{number % 1000:03d}", user_request=request
    )


PAST = [
    run(1, "시장 분석 보고서를 작성해 주세요: 한국 전기차 시장 진입 전략"),
    run(2, "Write a market-entry memo for electric vehicles in Germany with a revenue chart"),
    run(3, "고객 설문 데이터를 요약하고 만족도 그래프를 그려 주세요"),
    run(4, "Summarise the customer survey and plot satisfaction"),
    run(5, "Translate the employee handbook into French"),
    run(6, "사내 규정집을 영어로 번역"),
]


def test_tokenize_english_lowercases_and_drops_stop_words() -> None:
    """English words are lower-cased, split on punctuation, and stop words are dropped."""
    assert tokenize("Write THE Market-Entry memo for 2026!") == [
        "write",
        "market",
        "entry",
        "memo",
        "2026",
    ]


def test_tokenize_korean_spacing_and_particles_share_terms() -> None:
    """시장분석, 시장 분석 and 시장을 all yield the term 시장."""
    assert tokenize("시장분석") == ["시장분석", "시장", "장분", "분석"]
    assert tokenize("시장 분석") == ["시장", "분석"]
    assert "시장" in tokenize("시장을")
    assert tokenize("GDP성장률") == ["gdp", "성장률", "성장", "장률"]


def test_tokenize_cjk_bigrams() -> None:
    """Chinese and Japanese runs yield character bigrams; a single ideograph stays whole."""
    assert tokenize("市場分析") == ["市場", "場分", "分析"]
    assert tokenize("本") == ["本"]


def test_korean_request_ranks_korean_same_topic_first() -> None:
    """A Korean market request ranks the Korean market run first and excludes unrelated runs."""
    context = rank_past_runs("전기차 시장분석 보고서 작성", PAST)
    ids = [past.run_id for past in context.past_runs]
    assert ids[0] == PAST[0].run_id
    assert PAST[4].run_id not in ids and PAST[3].run_id not in ids


def test_english_request_ranks_english_same_topic_first() -> None:
    """An English survey request ranks the English survey run first and excludes unrelated ones."""
    context = rank_past_runs("Please summarise our customer survey results", PAST)
    ids = [past.run_id for past in context.past_runs]
    assert ids == [PAST[3].run_id]
    assert context.past_runs[0].score > 0


def test_single_similar_past_run_is_found() -> None:
    """With one past run (where Okapi's idf would go negative) a similar request still ranks it."""
    past = [run(1, "market entry memo")]
    assert [p.run_id for p in rank_past_runs("market entry memo", past).past_runs] == [
        past[0].run_id
    ]


def test_common_term_still_ranks_best_match_first() -> None:
    """A term in every past run does not push the genuinely similar run out of first place."""
    past = [run(1, "report on sales"), run(2, "report on hiring"), run(3, "report on sales growth")]
    context = rank_past_runs("report on sales growth", past)
    assert context.past_runs[0].run_id == past[2].run_id
    assert all(p.score > 0 for p in context.past_runs)


def test_ties_newer_first_limit_and_rounding() -> None:
    """Equal scores put the newer run first, the limit is honoured, and scores have 3 decimals."""
    past = [run(n, "quarterly revenue chart") for n in range(1, 8)]
    context = rank_past_runs("revenue chart", past, limit=3)
    assert [p.run_id for p in context.past_runs] == [past[6].run_id, past[5].run_id, past[4].run_id]
    assert all(p.score == round(p.score, 3) for p in context.past_runs)


def test_best_run_then_ties_at_the_cutoff_newer_first() -> None:
    """With more matching runs than the limit, the best comes first, then the newest of a tie."""
    past = [
        run(1, "revenue chart growth plan"),
        *(run(n, "quarterly revenue chart") for n in range(2, 8)),
    ]
    context = rank_past_runs("revenue chart growth", past, limit=3)
    assert [p.run_id for p in context.past_runs] == [past[0].run_id, past[6].run_id, past[5].run_id]


_WORDS = ["market", "revenue", "chart", "시장", "분석", "보고서", "plan", "memo"]


@settings(max_examples=60, deadline=None)
@given(
    requests=st.lists(
        st.lists(st.sampled_from(_WORDS), min_size=0, max_size=5).map(" ".join), max_size=25
    ),
    query=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4).map(" ".join),
    limit=st.integers(min_value=1, max_value=6),
)
def test_ranking_matches_the_library_scoring_every_run(
    requests: list[str], query: str, limit: int
) -> None:
    """Scoring only the runs that share a term gives the ranking of rank_bm25 scoring them all."""
    past = [run(n, text) for n, text in enumerate(requests, 1)]
    corpus = [tokenize(text) for text in requests]
    expected: list[tuple[float, str]] = []
    if any(corpus):
        scores = BM25L(corpus).get_scores(list(dict.fromkeys(tokenize(query))))
        expected = sorted(
            ((round(float(s), 3), p.run_id) for s, p in zip(scores, past, strict=True)),
            reverse=True,
        )
        expected = [pair for pair in expected if pair[0] > 0][:limit]
    got = rank_past_runs(query, past, limit=limit).past_runs
    assert [(p.score, p.run_id) for p in got] == expected


@pytest.mark.parametrize(
    ("request_text", "past"),
    [("anything", []), ("the of and", PAST), ("!!!", PAST), ("quantum physics", PAST)],
)
def test_nothing_to_learn_from(request_text: str, past: list[ProcessRun]) -> None:
    """No past runs, no index terms, or no shared term give an empty context."""
    assert rank_past_runs(request_text, past) == LearningContext()


def test_ten_thousand_past_runs() -> None:
    """Among 10,000 past runs the one about the same topic ranks first."""
    topics = ["hiring plan", "office move", "budget review", "채용 계획", "사무실 이전"]
    past = [run(n, f"{topics[n % len(topics)]} number {n}") for n in range(10_000)]
    past[4321] = run(4321, "반도체 공급망 위험 분석 semiconductor supply chain risk")
    context = rank_past_runs("반도체 공급망 리스크 분석해줘", past)
    assert context.past_runs[0].run_id == past[4321].run_id
    assert len(context.past_runs) == 1


def test_the_index_follows_new_edited_and_removed_past_runs() -> None:
    """The index grows with new runs and is rebuilt when a run leaves or its request changes."""
    past = [run(1, "heat pump market memo"), run(2, "office move plan")]
    assert [p.run_id for p in rank_past_runs("heat pump", past).past_runs] == [past[0].run_id]
    past.append(run(3, "heat pump installer survey"))
    ranked = [p.run_id for p in rank_past_runs("heat pump", past).past_runs]
    assert ranked == [past[2].run_id, past[0].run_id]
    past[0] = run(1, "office party")  # a person edited the request in its table
    assert [p.run_id for p in rank_past_runs("heat pump", past).past_runs] == [past[2].run_id]
    assert rank_past_runs("heat pump", past[:2]) == LearningContext()  # run 3 removed


def test_render_read_round_trip(tmp_path: Path) -> None:
    """A ranking with pipes, newlines, <br> and Korean in requests survives render and read."""
    context = LearningContext(
        past_runs=[
            PastRun(
                run_id="run-20260101-000000-002", score=3.25, user_request="a | b\nsecond line"
            ),
            PastRun(
                run_id="run-20260101-000000-001", score=0.5, user_request="literal <br> \\ `x`"
            ),
            PastRun(
                run_id="run-20251231-235959-999", score=0.001, user_request="시장 분석 | 보고서"
            ),
        ]
    )
    text = render_learning_context(context, Mode.CONTINUOUS_RUN)
    assert text.startswith("# Learning context\n\nMode: CONTINUOUS_RUN\n")
    assert "| rank" in text and "3.250" in text
    path = tmp_path / "learning_context.md"
    path.write_text(text, encoding="utf-8")
    assert read_learning_context(path) == context


@settings(max_examples=60, deadline=None)
@given(requests=st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=4))
def test_round_trip_any_text(tmp_path_factory: pytest.TempPathFactory, requests: list[str]) -> None:
    """Any request text survives render and read."""
    context = LearningContext(
        past_runs=[
            PastRun(run_id=f"run-20260101-000000-{n:03d}", score=1.5, user_request=text)
            for n, text in enumerate(requests)
        ]
    )
    path = tmp_path_factory.mktemp("lc") / "learning_context.md"
    path.write_text(render_learning_context(context, Mode.CONTINUOUS_RUN), encoding="utf-8")
    assert read_learning_context(path) == context


@pytest.mark.parametrize(
    ("mode", "sentence"), [(Mode.INITIAL_RUN, NO_PAST_RUNS), (Mode.CONTINUOUS_RUN, NO_SIMILAR_RUNS)]
)
def test_empty_context_is_a_sentence(tmp_path: Path, mode: Mode, sentence: str) -> None:
    """An empty context is written as a sentence and reads back empty."""
    text = render_learning_context(LearningContext(), mode)
    assert sentence in text and "|" not in text
    path = tmp_path / "learning_context.md"
    path.write_text(text, encoding="utf-8")
    assert read_learning_context(path) == LearningContext()


def test_missing_file_is_empty(tmp_path: Path) -> None:
    """A run without a learning_context.md has an empty context."""
    assert read_learning_context(tmp_path / "absent.md") == LearningContext()


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("| rank | run_id | user_request |\n|---|---|---|\n| 1 | r | x |\n", "missing column"),
        (
            "| rank | run_id | score | user_request |\n|---|---|---|---|\n| 1 | r | high | x |\n",
            "score",
        ),
        (
            "| rank | run_id | score | user_request |\n|---|---|---|---|\n| one | r | 1 | x |\n",
            "rank",
        ),
        ("| rank | run_id | score | user_request |\n|---|---|---|---|\n| 1 | r | 1 |\n", "cells"),
        ("Nothing here.\n", "no pipe table"),
    ],
)
def test_malformed_file_raises_table_error(tmp_path: Path, body: str, problem: str) -> None:
    """A hand-broken learning_context.md raises a TableError naming the file and the problem."""
    path = tmp_path / "learning_context.md"
    path.write_text("# Learning context\n\n" + body, encoding="utf-8")
    with pytest.raises(TableError, match=problem) as caught:
        read_learning_context(path)
    assert caught.value.path == path


def test_write_learning_context_in_run_folder(tmp_path: Path) -> None:
    """The context is written to runs/<run_id>/learning_context.md and reads back."""
    paths = Home(tmp_path).run("run-20260102-000000-001")
    context = rank_past_runs("customer survey", PAST)
    written = write_learning_context(paths, context, Mode.CONTINUOUS_RUN)
    assert written == learning_context_path(paths) == paths.root / "learning_context.md"
    assert read_learning_context(written) == context
