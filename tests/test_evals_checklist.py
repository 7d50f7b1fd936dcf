"""The evaluation's deliverable checklist (evals/checklist.py), and how a case's model use is
read from the log and said in EVALS.md: pure, no model, no daemon."""

from __future__ import annotations

import sys
from pathlib import Path

# evals/ is a folder of the repository, not an installed package: pytest puts only tests/ on
# the path, so the repository root is added here.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evals import cells, checklist, collect, render

ASSETS = {
    "report.md": "Germany reached €6.9 billion, up 14%; prices rose to €3,600 in 2023.",
    "korea.md": "국내 시장 규모는 1,200억 원으로 35% 성장했다.",
    "revenue.csv": "quarter,region,revenue_eur_m\n2023-Q1,Germany,1520\n2023-Q2,Germany,1985\n"
    "2023-Q1,France,480\n2023-Q2,France,690\n",
}


def test_figures_are_found_by_value_not_spelling() -> None:
    """1,200 matches 1200, 3600 matches €3,600, and 6.90 matches 6.9."""
    memo = "Korea is worth 1200억 원; bikes cost €3600; Germany made €6.90 billion."
    assert checklist.check_figures(memo, ASSETS) == checklist.FigureCheck(3, 3, [])


def test_years_list_numbers_single_digits_and_codes_are_not_figures() -> None:
    """Years, list numbering, one-digit numbers, ids and code spans are left out."""
    memo = (
        "## 1. Market in 2023\n\n1. Germany leads with 14% growth.\n2) 3 risks remain.\n"
        "See `run-20261123-131115-001`, task P4-S02-T01 and report-chart-12.svg."
    )
    assert checklist.figures(memo) == ["14"]


def test_a_csv_comma_separates_cells() -> None:
    """In a CSV, France,480,690 holds 480 and 690, not 480,690."""
    assert {480.0, 690.0} <= checklist.asset_numbers("x.csv", "France,480,690\n")
    assert 480690.0 in checklist.asset_numbers("x.md", "France,480,690")


def test_figures_not_in_the_assets_are_listed() -> None:
    """A derived or invented figure counts as missing, once in the list."""
    found = checklist.check_figures("Total 2,175 and 2,175 again; growth 14%.", ASSETS)
    assert (found.found, found.total, found.missing, found.passed) == (1, 3, ["2,175"], False)


def test_the_chart_must_name_the_countries_and_show_the_values() -> None:
    """A chart with every country and the revenue cells passes; one without values fails."""
    series = checklist.revenue_by_country(ASSETS["revenue.csv"])
    assert series.totals == {"Germany": 3505.0, "France": 1170.0}
    good = "<svg><style>.x{height:480}</style><text>Germany</text><text>France</text>" + "".join(
        f"<text>{v:g}</text>" for v in series.values
    )
    bad = "<svg><text>Germany</text><text>France</text><text>12</text></svg>"
    found = checklist.check_chart({"a.svg": bad, "b.svg": good}, series)
    assert (found.passed, found.file, found.values_found) == (True, "b.svg", 4)
    assert not checklist.check_chart({"a.svg": bad}, series).passed


def test_chart_totals_are_enough() -> None:
    """A chart of the per-country totals passes without the quarterly cells."""
    series = checklist.revenue_by_country(ASSETS["revenue.csv"])
    chart = "<svg><text>Germany 3,505</text><text>France 1,170</text></svg>"
    assert checklist.check_chart({"c.svg": chart}, series).passed


def test_pygal_layout_numbers_are_not_data() -> None:
    """pygal's config script (height 480) is dropped; other scripts are kept as chart data."""
    markup = "<script>window.pygal = {}; config = {height: 480}</script><text>Germany</text>"
    assert "480" not in checklist.visible_text(markup)
    assert "480" in checklist.visible_text("<script>data = [480]</script>")


def test_a_page_is_a_chart_only_through_its_svgs_or_scripts() -> None:
    """A report page's prose is not a chart; its inline SVGs are."""
    page = "<html><p>Germany 1520 France 480</p><svg><text>Germany</text></svg></html>"
    assert list(checklist.chart_parts("out/report.html", page)) == ["out/report.html#svg1"]
    assert checklist.chart_parts("out/note.html", "<p>Germany 1520</p>") == {}


def test_length_targets_come_from_the_request() -> None:
    """Two pages ≈ 900, one page (한 페이지) ≈ 450, a short note ≈ 250, else no target."""
    assert checklist.target_words("a two-page memo") == 900
    assert checklist.target_words("메모를 한 페이지로 작성해 주세요") == 450
    assert checklist.target_words("write a short note on it") == 250
    assert checklist.target_words("write a memo") is None


def test_length_passes_within_half_the_target() -> None:
    """Words within ±50% of the target pass; markup and numbering are not words."""
    assert checklist.check_length("word " * 300, "a short note") == checklist.LengthCheck(
        300, 250, True
    )
    assert not checklist.check_length("word " * 100, "a short note").passed
    assert checklist.word_count("## Title\n\n| a | b |\n|---|---|\n1. one `code`") == 4


def test_a_recommendation_section_with_a_reason_passes() -> None:
    """A recommendation heading counts with its sub-sections, up to the next same-level heading."""
    memo = "# Memo\n\n## Recommendation\n\nEnter Germany.\n\n### Why\n\nBecause it is largest.\n"
    assert checklist.check_recommendation(memo).passed
    cut = "# Memo\n\n## Recommendation\n\nEnter Germany.\n\n## Risks\n\nBecause of stock.\n"
    found = checklist.check_recommendation(cut)
    assert (found.recommendation, found.reason) == (True, False)


def test_a_recommendation_sentence_needs_its_reason_in_the_same_paragraph() -> None:
    """A reason in another paragraph does not back a recommendation sentence."""
    assert checklist.check_recommendation("We recommend France, given its 21% growth.").passed
    assert not checklist.check_recommendation("We recommend France.\n\nBecause.").passed


def test_korean_recommendation_and_reason_markers() -> None:
    """추천/권고 mark a recommendation, 때문/따라서 a reason."""
    assert checklist.check_recommendation("성장률이 높기 때문에 서울 진출을 추천한다.").passed
    assert not checklist.check_recommendation("서울 진출을 추천한다.").passed


def llm_call(scope: str, **fields: object) -> dict[str, object]:
    """One `llm_call` log event as the gateway writes it."""
    return {"event": "llm_call", "role": "executor", "scope": scope, "tier": "MEDIUM",
            "repairs": 0, "constrained": False, "prompt_tokens": 1000, "completion_tokens": 300,
            "latency_ms": 5.0, "finish_reason": "stop", "cache_hit": False, **fields}  # fmt: skip


def test_model_use_counts_cached_prompt_tokens_cuts_and_continuations() -> None:
    """Cached prompt tokens are summed; a continuation joins its call and is counted apart."""
    events = [
        llm_call("a", cached_tokens=0, finish_reason="length", continuation=0),
        llm_call("a", cached_tokens=900, continuation=1),
        llm_call("b", cached_tokens=600, continuation=0),
    ]
    used = collect.model_use(events, None)
    assert (used["cached_tokens"], used["prompt_tokens"]) == (1500, 3000)
    assert (used["finish_length"], used["continued"]) == (1, 1)
    assert used["repairs_per_call"] == {"0": 2}


def test_a_log_from_before_cached_tokens_says_nothing_of_them() -> None:
    """Events without cached_tokens leave the figure unknown (None), never 0."""
    used = collect.model_use([llm_call("a"), llm_call("b")], None)
    assert used["cached_tokens"] is None and used["continued"] == 0


def test_the_tokens_cell_shows_the_cached_share_when_known() -> None:
    """prompt (cached, share) + completion from usage.json; an older result keeps its form."""
    usage = {"prompt_tokens": 59_407, "cached_prompt_tokens": 31_000, "completion_tokens": 1_234}
    case = {"model": {"usage": usage}}
    assert cells.tokens(case) == "prompt 59,407 (cached 31,000, 52 %) + completion 1,234"
    logged = {"model": {"usage": None, "prompt_tokens": 200, "completion_tokens": 10,
                        "cached_tokens": 50}}  # fmt: skip
    assert cells.tokens(logged) == "prompt 200 (cached 50, 25 %) + completion 10"
    old = {"model": {"usage": {"prompt_tokens": 8_254, "completion_tokens": 1_000}}}
    assert cells.tokens(old) == "8,254 + 1,000"
    assert cells.tokens({"model": {}}) == "0"


def test_the_calls_cell_says_how_many_cut_answers_went_on() -> None:
    """"cut at max_tokens N" gains "(M continued)" when some cut answers were continued."""
    model = {"by_role": {"executor": {"calls": 3}}, "calls_logged": 3, "finish_length": 2,
             "continued": 2, "events": {}}  # fmt: skip
    assert "cut at max_tokens 2 (2 continued)" in cells.calls({"model": model})
    model["continued"] = 0
    assert cells.calls({"model": model}).endswith("cut at max_tokens 2")


def test_rendering_keeps_both_corpus_blocks(tmp_path: Path) -> None:
    """EVALS.md written again keeps what make eval-corpus and make eval-local-spec wrote."""
    from evals.corpus import BEGIN, END
    from evals.corpus_model import MODEL_BEGIN, MODEL_END

    target = tmp_path / "EVALS.md"
    offline = f"{BEGIN}\n## offline corpus\n{END}"
    local = f"{MODEL_BEGIN}\n## corpus on the local model\n{MODEL_END}"
    target.write_text(f"# Evaluations\n\nold\n\n{offline}\n\n{local}\n", encoding="utf-8")
    render.write(target)
    written = target.read_text(encoding="utf-8")
    assert offline in written and local in written and "\nold\n" not in written
