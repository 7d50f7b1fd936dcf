"""Tests of sentence splitting, structure extraction and key-sentence scoring."""

from __future__ import annotations

from pathlib import Path

from executor.builtin import split_sentences, terms
from executor.builtin.extract import extract_text, key_sentences

ASSETS = Path(__file__).parent / "fixtures" / "assets"


def test_split_sentences_english_korean_and_cjk_stop() -> None:
    """Sentences split on . ! ? and 。, Korean `다.` endings, and stay whole around `e.g.`."""
    assert split_sentences("Sales rose. Costs fell! Why? See e.g. the table.") == [
        "Sales rose.",
        "Costs fell!",
        "Why?",
        "See e.g. the table.",
    ]
    assert split_sentences("매출이 증가했다. 비용은 감소했다.") == [
        "매출이 증가했다.",
        "비용은 감소했다.",
    ]
    assert split_sentences("市場は拡大した。競争も激しい。") == [
        "市場は拡大した。",
        "競争も激しい。",
    ]


def test_hard_wrapped_lines_join_and_korean_lines_split() -> None:
    """A wrapped English sentence is one sentence; Korean lines ending in 다 are separate."""
    facts = extract_text(
        "Growth was driven by\nstrong demand.\n\n시장이 성장했다\n경쟁이 심해졌다\n", "x"
    )
    assert [s.text for s in facts.sentences] == [
        "Growth was driven by strong demand.",
        "시장이 성장했다",
        "경쟁이 심해졌다",
    ]


def test_headings_levels_title_and_tables() -> None:
    """Headings keep their levels, the first H1 is the title, table lines are not prose."""
    facts = extract_text((ASSETS / "market_report_2024.md").read_text("utf-8"), "fallback")
    assert facts.title == "European E-Bike Market Report 2024"
    assert [(h.level, h.text) for h in facts.headings][:3] == [
        (1, "European E-Bike Market Report 2024"),
        (2, "Executive summary"),
        (2, "Market size and growth"),
    ]
    assert len(facts.table_lines) == 1 and facts.table_lines[0][0].startswith("| Country")
    assert not any(s.text.startswith("|") for s in facts.sentences)


def test_figures_carry_their_sentence() -> None:
    """Each sentence lists the figures it holds, so a figure's context is its sentence."""
    facts = extract_text((ASSETS / "competitor_review.txt").read_text("utf-8"), "x")
    holder = next(s for s in facts.sentences if any(f.value == "$740 million" for f in s.figures))
    assert holder.text.startswith("Cyclo GmbH reported revenue of $740 million")


def test_key_sentences_english_prefer_substance() -> None:
    """The best English sentences carry figures and recurring terms, not the byline."""
    facts = extract_text((ASSETS / "market_report_2024.md").read_text("utf-8"), "x")
    best = [s.text for s in key_sentences(facts.sentences, 4)]
    assert any("€18.5 billion" in text or "€6.9 billion" in text for text in best)
    assert not any(text.startswith("Prepared by") for text in best)


def test_key_sentences_korean() -> None:
    """Korean key sentences are found and the market-size sentence ranks first."""
    facts = extract_text((ASSETS / "korea_market_ko.md").read_text("utf-8"), "x")
    best = [s.text for s in key_sentences(facts.sentences, 3)]
    assert best[0] == "2023년 국내 전기자전거 시장 규모는 1,200억 원으로 전년 대비 35% 성장했다."
    assert all(len(text) > 15 for text in best)


def test_terms_drop_stop_words_and_korean_particles() -> None:
    """Terms are lower-cased content words; Korean particles are cut from the stem."""
    assert terms("The market is growing in Germany") == ["market", "growing", "germany"]
    assert terms("시장은 배터리를 위협") == ["시장", "배터리", "위협"]
