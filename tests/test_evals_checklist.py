"""The evaluation's deliverable checklist (evals/checklist.py), and how a case's model use is
read from the log and said in EVALS.md: pure, no model, no daemon."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pygal
import pytest

# evals/ is a folder of the repository, not an installed package: pytest puts only tests/ on
# the path, so the repository root is added here.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evals import cells, chartread, checklist, collect, corpus_run, render
from evals.cases import CASES, select
from evals.corpus import cases as corpus_cases
from evals.corpus import corpus_home, spec_of
from multiverse.home import Home
from multiverse.spec import RequestSpec

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


@pytest.mark.parametrize(("written", "traced"), [
    ("Korea's market reached 120 billion won.", True),  # 1,200억 원
    ("Korea's market reached 120,000,000,000 won.", True),
    ("Korea's market reached 0.12 trillion won.", True),
    ("Korea's market reached 1,200억 원.", True),
    ("Korea's market reached 1.2 trillion won.", False),  # what the local model wrote
    ("Korea's market reached 12 billion won.", False),
    ("Germany made €6,900 million.", True),  # €6.9 billion
])  # fmt: skip
def test_an_amount_converted_to_another_scale_is_found_by_what_it_means(
    written: str, traced: bool
) -> None:
    """A Korean source's 1,200억 원 written in English as 120 billion won is the same amount;
    ten times it is not."""
    assert checklist.check_figures(written, ASSETS).passed is traced


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
    """450 words a page (세 페이지 ≈ 1,350), a short note ≈ 250, else no target."""
    assert checklist.target_words("a three-page market report") == 1350
    assert checklist.target_words("보고서를 세 페이지로") == 1350
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
    # Answers stopped at a repeat report no usage: the share is also given without them.
    calls = [{"finish_reason": "stop", "prompt_tokens": 1_000, "cached_tokens": 600},
             {"finish_reason": "repeat", "prompt_tokens": 3_000, "cached_tokens": 0}]  # fmt: skip
    stopped = {"model": {"usage": {**usage, "prompt_tokens": 4_000, "cached_prompt_tokens": 600},
                         "calls": calls}}  # fmt: skip
    assert cells.tokens(stopped).endswith(
        "; 1 answer(s) stopped early report no usage (cache unknown); "
        "the 1 others: cached 600 of 1,000 (60 %)"
    )


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


# ---------------------------------------------------------------- corpus cases end to end

CORPUS = {case["id"]: case for case in corpus_cases()}


def line_svg(values: list[float], labels: list[str], printed: bool = False) -> str:
    """A pygal line chart as the engine draws one (no script; values printed only if asked)."""
    chart = pygal.Line(js=[], disable_xml_declaration=True, print_values=printed,
                       show_dots=printed)  # fmt: skip
    chart.x_labels = labels
    chart.add("series", values)
    return str(chart.render(is_unicode=True))


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[corpus_run.ExpectedChart]]:
    """The expected charts of several corpus cases, computed from their tables in a home."""
    found = {}
    documents = tmp_path_factory.mktemp("documents")  # these cases name no built document
    for name in ("en-chart-01", "en-chart-03", "ko-chart-04", "en-calc-03", "en-excl-01"):
        with corpus_home(CORPUS[name], documents) as home:
            found[name] = corpus_run.expected_charts(CORPUS[name]["expect"], home.root)
    return found


def test_corpus_ids_mix_with_the_fixed_case_names() -> None:
    """A corpus id becomes a case carrying its expectations; a fixed name stays fixed."""
    chosen = select("chart-note,en-chart-01")
    assert chosen[0] is CASES["chart-note"] and chosen[0].corpus is None
    assert chosen[1].name == "en-chart-01" and chosen[1].corpus == CORPUS["en-chart-01"]
    assert chosen[1].request == CORPUS["en-chart-01"]["request"] and not chosen[1].assets
    with pytest.raises(ValueError, match="no-such-case"):
        select("en-chart-01,no-such-case")


def test_expected_charts_are_computed_from_their_tables(
    expected: dict[str, list[corpus_run.ExpectedChart]],
) -> None:
    """Yearly means, two quarterly series, a filtered country, a category sum; none asked."""
    marriages, = expected["en-chart-01"]
    assert len(marriages.values) > 100 and all(0 < v < 20 for v in marriages.values)
    rates, = expected["en-chart-03"]
    assert len(rates.values) % 2 == 0 and rates.values  # ibo and ide, quarter by quarter
    korea, = expected["ko-chart-04"]
    assert len(korea.values) == 12 and korea.values[0] < korea.values[-1]  # 1952 … 2007
    states, = expected["en-calc-03"]
    assert len(states.values) == 8 and all(v > 0 for v in states.values)
    assert expected["en-excl-01"] == []


def test_a_long_line_is_read_back_from_its_geometry() -> None:
    """No value printed: each point's height turned back into a value matches, in order."""
    values = [7.1 + (i % 17) * 0.53 for i in range(141)]
    svg = line_svg(values, [str(1867 + i) for i in range(141)])
    assert corpus_run.printed_numbers(checklist.visible_text(svg)).get(1) is None
    assert chartread.matched(svg, values) == 141
    assert chartread.matched(svg, [v + 0.4 for v in values]) == 0  # drawn off the data
    assert chartread.matched(svg, values[:-1]) == 0  # another series


def test_printed_values_match_at_their_precision_not_axis_ticks() -> None:
    """9.70 shows 9.6999; a tick of 10 does not show 9.7; 21,933 shows 21933."""
    printed = corpus_run.printed_numbers("9.70 10 21,933")
    assert corpus_run.is_shown(9.6999, printed) and corpus_run.is_shown(21933.0, printed)
    assert not corpus_run.is_shown(9.7 + 0.3 - 0.0001, corpus_run.printed_numbers("10"))
    assert corpus_run.is_shown(10.0, printed)


def test_chart_values_pass_with_half_shown_and_fail_below(
    expected: dict[str, list[corpus_run.ExpectedChart]],
) -> None:
    """The right chart passes; a chart of other values, or no chart, fails; none asked: None."""
    korea, = expected["ko-chart-04"]
    labels = [str(1952 + 5 * i) for i in range(12)]
    right = {"outputs/r/c.svg": line_svg(korea.values, labels, printed=True)}
    assert corpus_run.check_chart_values(right, korea).passed is True
    wrong = {"c.svg": line_svg([v * 1.5 for v in korea.values], labels, printed=True)}
    assert corpus_run.check_chart_values(wrong, korea).passed is False
    assert corpus_run.check_chart_values({}, korea) == corpus_run.ChartValues(1, False, total=12)
    refused = corpus_run.ExpectedChart(2, "assets/x.csv", note="not drawable")
    assert corpus_run.check_chart_values(right, refused).passed is None


TRACED = {"untraced_numbers": 0}


def judged(name: str, text: str, drawn: dict[str, str] | None = None,
           record: dict[str, Any] | None = TRACED, with_spec: bool = True) -> dict[str, Any]:
    """A corpus case judged on its offline spec (or none), a deliverable text, its delivery
    record (None: none written) and drawn charts."""
    case = CORPUS[name]
    with corpus_home(case, Path("/nonexistent")) as home:
        spec = spec_of(case, home)[0].model_copy(update={"confirmed": True})
        charts = corpus_run.expected_charts(case["expect"], home.root)
    return corpus_run.judge_run(case, spec if with_spec else None, text,
                                record, drawn or {}, charts)  # fmt: skip


def test_a_right_deliverable_passes_every_item() -> None:
    """Chart drawn with its values, nothing left out named, English, near its length."""
    case = CORPUS["en-chart-01"]
    with corpus_home(case, Path("/nonexistent")) as home:
        chart, = corpus_run.expected_charts(case["expect"], home.root)
    svg = line_svg(chart.values, [str(i) for i in range(len(chart.values))])
    text = "# US marriages\n\n" + "The rate fell over the decades and rose again. " * 30
    found = judged("en-chart-01", text, {"outputs/r/report-chart-1.svg": svg})
    assert found["ok"], found["problems"]
    assert found["charts_drawn"] == [1, 1] and found["charts_asked"] == [1, 1]
    assert found["language"]["passed"] and found["untraced"] == 0


def test_a_deliverable_fails_each_item_on_its_own() -> None:
    """No chart; a file left out named; an expected figure missing; untraced numbers; the
    wrong language; far from its length; no spec for a run."""
    words = "Consumer spending rose steadily in the period. " * 40
    assert judged("en-chart-01", words)["problems"] == [
        "chart 1 drawn with 0/141 of its values (best of 0 chart(s))"]
    leaked = judged("en-excl-01", words + "\nSee souvenirs.csv for more.\n")
    assert leaked["leaked"] == 1 and not leaked["ok"]
    listed = judged("en-excl-01", words + "\nLeft out as you asked: assets/souvenirs.csv\n")
    assert listed["ok"], listed["problems"]
    assert judged("en-excl-01", words, record={"untraced_numbers": 3})["untraced"] == 3
    assert judged("en-excl-01", words, record={})["problems"] == []  # a record saying nothing
    korean = judged("ko-chart-04", words)
    assert korean["delivered"] == [0, 1] and korean["language"]["written"] == "English"
    assert "deliverable states 0/1 expected figure(s)" in korean["problems"]
    long = judged("en-calc-03", words * 3)
    assert long["length"]["passed"] is False and any("words for 500" in p
                                                     for p in long["problems"])  # fmt: skip
    none = judged("en-excl-01", words, with_spec=False)
    assert "no confirmed spec" in none["problems"][0] and none["spec"] is False
    unrecorded = judged("en-excl-01", words, record=None)
    assert "no delivery record: the numbers were not traced" in unrecorded["problems"]


def test_a_reply_without_a_run_is_its_own_answer() -> None:
    """A simple request answered in the reply passes; the figure missing fails; no record."""
    reply = "Personal savings rate in 2008-09 was 4.7 (assets/economics.csv row 496)."
    found = judged("en-lookup-01", reply, record=None, with_spec=False)
    assert found["ok"] and found["delivered"] == [1, 1] and found["untraced"] is None
    wrong = judged("en-lookup-01", reply.replace("4.7", "5.2"), record=None, with_spec=False)
    assert wrong["delivered"] == [0, 1] and not wrong["ok"]


def corpus_result(name: str, label_problems: list[str]) -> dict[str, Any]:
    """A saved corpus case as run_case leaves it."""
    found = {"case": name, "request": CORPUS[name]["request"], "corpus": True,
             "outcome": "COMPLETED", "total_s": 754.0,
             "model": {"usage": {"calls": 23, "prompt_tokens": 41_000,
                                 "cached_prompt_tokens": 30_500, "completion_tokens": 6_100},
                       "by_role": {"planner": {"calls": 9, "tokens": 20_000,
                                               "cached_prompt_tokens": 15_000, "cost_usd": 0}},
                       "finish_length": 2},
             "timing": {"phases": {"intake": 30.0, "P1": 120.0}},
             "phase_names": {"P1": "ANALYZING"},
             "checklist": {"deliverable": "outputs/r/report.md", "corpus": {
                 "problems": label_problems, "charts_drawn": [1, 1], "charts_asked": [1, 1],
                 "chart_values": [{"passed": True, "found": 141, "total": 141}],
                 "exclusions": [0, 0], "leaked": 0, "questions": [0, 0], "delivered": [0, 0],
                 "untraced": 2, "language": {"written": "English", "passed": True},
                 "length": {"words": 285, "target": 300, "passed": True}}}}  # fmt: skip
    return {**found, "cost": collect.cost(found)}


def test_the_cost_of_a_deliverable_reads_usage_and_timing() -> None:
    """Calls, prompt (cached), completion, cut answers, minutes in all and per phase, by role."""
    cost = corpus_result("en-chart-01", [])["cost"]
    assert (cost["calls"], cost["prompt_tokens"], cost["cached_prompt_tokens"]) == (
        23, 41_000, 30_500)  # fmt: skip
    assert (cost["completion_tokens"], cost["cut_at_max_tokens"], cost["minutes"]) == (
        6_100, 2, 12.57)  # fmt: skip
    assert cost["minutes_per_phase"] == {"intake": 0.5, "ANALYZING": 2.0}
    assert cost["by_role"] == {"planner": {"calls": 9, "tokens": 20_000,
                                           "cached_prompt_tokens": 15_000}}  # fmt: skip
    old = collect.cost({"model": {"usage": {"calls": 3, "prompt_tokens": 10}}})
    assert old["cached_prompt_tokens"] is None and old["minutes"] == 0.0
    assert cells.cost(corpus_result("en-chart-01", [])) == (
        "23 calls; 41,000 (cached 30,500) + 6,100 tokens; cut 2; 12.57 min "
        "(intake 0.5, ANALYZING 2)")  # fmt: skip


def test_corpus_cases_render_in_their_own_section(monkeypatch: pytest.MonkeyPatch) -> None:
    """Corpus rows stay out of the fixed tables; a failed item shows in its row and columns."""
    fixed = {"case": "memo-en", "outcome": "COMPLETED", "checklist": None}
    results = {"after": {"cases": {"memo-en": fixed,
                                   "en-chart-01": corpus_result("en-chart-01", []),
                                   "en-excl-01": corpus_result("en-excl-01",
                                                               ["names souvenirs.csv"])}},
               "trial": {"cases": {"ko-chart-04": corpus_result("ko-chart-04", [])}}}  # fmt: skip
    monkeypatch.setattr(render, "load_all", lambda: results)
    text = render.render()
    head, _, corpus = text.partition("## Corpus cases end to end")
    assert "en-chart-01" not in head.partition("## How they ran")[2].partition("## after")[2]
    assert "## trial" not in head and "| trial |" in corpus  # a label of corpus cases only
    rows = [line for line in corpus.splitlines() if line.startswith("| after |")]
    assert [row.split(" | ")[1] for row in rows] == ["en-chart-01", "en-excl-01"]
    assert rows[0].endswith("| 2 | English ✓, 285/300 ✓ | none |")
    assert "1/1 (141/141), in the spec 1/1" in rows[0]
    assert rows[1].endswith("| names souvenirs.csv |")
    bare = {"after": {"cases": {"memo-en": fixed}}}
    monkeypatch.setattr(render, "load_all", lambda: bare)
    assert "Corpus cases" not in render.render()


def test_a_figure_computed_from_the_run_tables_is_traced(home: Home) -> None:
    """The memo checklist counts the run's verified facts (computed from the tables CONFIRM
    kept) as traced, as the product's own trace does; an invented figure stays untraced."""
    from specbrief import RUN, chart, checked, corpus_home

    corpus_home(home, "economics")
    asked = chart("the saving rate month by month", "economics.csv", "psavert", frequency="month")
    spec = checked(home, RequestSpec(request="saving rate", charts=[asked]))
    home.run(RUN).spec.write_text(spec.model_dump_json(), encoding="utf-8")
    facts = collect.computed_facts(home.root, RUN)
    stated = checklist.figures(facts.splitlines()[0].rsplit(" (", 1)[0])[-1]
    text = f"The rate moved to {stated}; we guess 98,765.4 next."
    assert checklist.check_figures(text, {"economics.md": ""}).found == 0
    check = checklist.check_figures(text, {"economics.md": "", collect.COMPUTED: facts})
    assert (check.found, check.missing) == (1, ["98,765.4"])
    assert collect.computed_facts(home.root, "run-20990101-000000-001") == ""  # no spec
