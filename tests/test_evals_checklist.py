"""The evaluation's deliverable checklist (evals/checklist.py): pure, no model, no daemon."""

from __future__ import annotations

import sys
from pathlib import Path

# evals/ is a folder of the repository, not an installed package: pytest puts only tests/ on
# the path, so the repository root is added here.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evals import checklist

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
