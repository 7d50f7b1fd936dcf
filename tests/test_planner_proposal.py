"""Tests of the builtin amendment proposal (planner.builtin.proposal)."""

from __future__ import annotations

from pathlib import Path

from test_planner_support import context, make_home

from multiverse.models import InstructionStatus, UserInstruction
from multiverse.roles import LearningContext, PastRun, Proposal
from planner.builtin import BuiltinPlanner
from planner.validation import validate_proposal

MEMO = (
    "Analyse these reports and write a 2-page market-entry memo with a chart of the revenue figures"
)
KOREAN = "시장 분석 보고서를 한국어로 작성해줘 | 3페이지"
EARLIER = "run-20260201-080000-001"


def by_type(proposal: Proposal) -> dict[str, str]:
    """The proposal's instruction contents by type."""
    return {item.instruction_type: item.content for item in proposal.instructions}


def past(
    instruction_id: str,
    kind: str,
    content: str,
    status: InstructionStatus = InstructionStatus.ACTIVE,
) -> UserInstruction:
    """An instruction confirmed by an earlier run."""
    return UserInstruction(
        instruction_id=instruction_id,
        run_id=EARLIER,
        instruction_type=kind,
        content=content,
        status=status,
        justification="earlier",
    )


BRIEF_ASSETS = Path(__file__).parent / "fixtures" / "brief_assets"
JOURNEY = (
    "Analyse the market reports in assets/ and write a two-page market-entry memo for a "
    "charging-network investor, with a chart of revenue by country."
)


def brief_home(tmp_path: Path) -> Path:
    """A home holding the Nordic brief, the Korean battery brief and the revenue CSV."""
    assets = {
        f"assets/{p.name}": p.read_text(encoding="utf-8") for p in sorted(BRIEF_ASSETS.iterdir())
    }
    return make_home(tmp_path, assets=assets, style=False)


def test_first_run_proposal(tmp_path: Path) -> None:
    """A first run's proposal restates the request and proposes typed, justified instructions."""
    home = make_home(tmp_path)
    proposal = BuiltinPlanner().propose(context(home, MEMO))
    kinds = by_type(proposal)
    assert list(kinds) == [
        "GOAL",
        "DELIVERABLE",
        "LENGTH",
        "SOURCES",
        "LANGUAGE",
        "FORMAT",
        "STYLE",
    ]
    assert kinds["GOAL"] == MEMO
    assert "evidence brief" in kinds["DELIVERABLE"] and "memo asked for" in kinds["DELIVERABLE"]
    assert "assets/q3.md" in kinds["SOURCES"] and "assets/시장_보고서.md" in kinds["SOURCES"]
    assert kinds["LENGTH"].startswith("2 pages (about 1,000 words)")
    assert kinds["LANGUAGE"] == "Write in English."
    assert "guidelines/style.md" in kinds["STYLE"]
    assert all(item.justification for item in proposal.instructions)
    assert proposal.made_offline and proposal.conflicts == []
    # "a chart of the revenue figures" names no grouping: listed as not understood, not guessed.
    assert "**Not understood offline**" in proposal.understanding
    assert "names no data to chart" in proposal.understanding
    assert "first run, no past runs" in proposal.understanding


def test_the_journey_request_is_read_with_where_each_part_came_from(tmp_path: Path) -> None:
    """Length, audience and the chart (its CSV columns) are shown; no web search is invented."""
    home = brief_home(tmp_path)
    proposal = BuiltinPlanner().propose(context(home, JOURNEY))
    kinds = by_type(proposal)
    assert kinds["LENGTH"].startswith("2 pages")
    assert kinds["AUDIENCE"] == "a charging-network investor."
    assert kinds["CHART"].startswith("revenue by country: sums of `revenue_eur`")
    assert "`assets/revenue_by_country.csv`, grouped on `country`" in kinds["CHART"]
    assert "RESEARCH" not in kinds
    text = proposal.understanding
    assert "| length      | 2 pages (about 1,000 words)" in text and 'request: "two-page"' in text
    assert 'request: "a charging-network investor"' in text
    assert "| web search  | none" in text
    assert "nothing: every part of the request was read" in text


def test_outside_information_only_when_asked(tmp_path: Path) -> None:
    """A web search is proposed only when the request asks for outside information."""
    home = brief_home(tmp_path)
    asked = by_type(BuiltinPlanner().propose(context(home, JOURNEY + " Search the web for news.")))
    assert "RESEARCH" in asked
    market = by_type(BuiltinPlanner().propose(context(home, "Summarise the market trends.")))
    assert "RESEARCH" not in market


def test_modify_is_cumulative(tmp_path: Path) -> None:
    """Every MODIFY since the first proposal is applied in order and said to have changed it."""
    home = brief_home(tmp_path)
    texts = ["Leave out the Korean battery report and make it one page.", "Write it in Korean."]
    proposal = BuiltinPlanner().propose(
        context(home, JOURNEY, modification=texts[-1], modifications=texts)
    )
    kinds = by_type(proposal)
    assert kinds["LENGTH"].startswith("1 page")
    assert "Left out: `assets/korea_battery_recycling.md`" in kinds["SOURCES"]
    assert "Work from `assets/nordic_ev_market.md`" in kinds["SOURCES"]
    assert kinds["LANGUAGE"] == "Write in Korean."
    assert kinds["USER_MODIFICATION"] == f"(1) {texts[0]} (2) {texts[1]}"
    assert "evidence brief (the offline form of the memo" in kinds["DELIVERABLE"]
    text = proposal.understanding
    assert "MODIFY 1" in text and "left out assets/korea_battery_recycling.md" in text
    assert "MODIFY 2" in text and "language → Korean" in text


def test_a_leave_out_no_source_matches_is_not_guessed(tmp_path: Path) -> None:
    """ "Leave out X" that names no source is listed as not understood; every source stays."""
    home = brief_home(tmp_path)
    proposal = BuiltinPlanner().propose(context(home, JOURNEY + " Leave out the Lisbon study."))
    assert "Left out" not in by_type(proposal)["SOURCES"]
    assert "the Lisbon study" in proposal.understanding
    assert "matches no source" in proposal.understanding


def test_judgements_are_listed_as_not_understood(tmp_path: Path) -> None:
    """A request for a recommendation is shown as needing a judgement the engine does not make."""
    home = brief_home(tmp_path)
    proposal = BuiltinPlanner().propose(
        context(home, "Write a memo and recommend which country to enter first.")
    )
    assert "needs a judgement the offline engine does not make" in proposal.understanding


def test_korean_request_flows_through_unchanged(tmp_path: Path) -> None:
    """A Korean request is kept verbatim as the goal and read as Korean."""
    home = make_home(tmp_path, assets={})
    proposal = BuiltinPlanner().propose(context(home, KOREAN))
    kinds = by_type(proposal)
    assert kinds["GOAL"] == KOREAN
    assert "report asked for" in kinds["DELIVERABLE"]
    assert kinds["LENGTH"].startswith("3 pages")
    assert kinds["LANGUAGE"] == "Write in Korean."
    assert kinds["SOURCES"].startswith("No source files")


def test_conflicts_supersede_active_past_instructions(tmp_path: Path) -> None:
    """An ACTIVE past instruction of the same type with other content is a conflict to supersede."""
    home = make_home(tmp_path)
    instructions = [
        past("I0001", "LANGUAGE", "Write in English."),
        past("I0002", "FORMAT", "Markdown with headings and short sections; every fact with its "
             "source and location."),
        past("I0003", "LENGTH", "One page only.", InstructionStatus.SUPERSEDED),
        past("I0004", "CHART", "No charts."),
    ]  # fmt: skip
    learning = LearningContext(past_runs=[PastRun(run_id=EARLIER, score=2.5, user_request="memo")])
    ctx = context(
        home,
        "한국어로 시장 메모를 써줘, 국가별 매출 차트 포함",
        past_instructions=instructions,
        learning=learning,
    )
    proposal = BuiltinPlanner().propose(ctx)
    supersedes = {item.instruction_type: item.supersedes for item in proposal.instructions}
    assert supersedes["LANGUAGE"] == ["I0001"]
    assert supersedes["CHART"] == ["I0004"]
    assert supersedes["FORMAT"] == [] and supersedes["LENGTH"] == []
    assert len(proposal.conflicts) == 2
    assert any("I0001 of run-20260201-080000-001" in line for line in proposal.conflicts)
    assert "1 earlier instruction(s) agree, 2 conflict" in proposal.understanding
    assert validate_proposal(proposal, ctx) == []


def test_modify_revises_the_proposal(tmp_path: Path) -> None:
    """MODIFY keeps the text verbatim and replaces the deliverable, language, charts it names."""
    home = brief_home(tmp_path)
    text = "Make it a presentation in Korean, without the chart"
    proposal = BuiltinPlanner().propose(context(home, JOURNEY, modification=text))
    kinds = by_type(proposal)
    assert kinds["USER_MODIFICATION"] == f"(1) {text}"
    assert "presentation asked for" in kinds["DELIVERABLE"]
    assert kinds["LANGUAGE"] == "Write in Korean."
    assert "CHART" not in kinds
    assert "charts removed" in proposal.understanding


def test_korean_modify_adds_a_chart_and_a_length(tmp_path: Path) -> None:
    """A Korean MODIFY asking for a chart by country and five pages adds CHART and the length."""
    home = brief_home(tmp_path)
    text = "국가별 매출 차트를 추가하고 5페이지로 해줘"
    proposal = BuiltinPlanner().propose(
        context(home, "Summarise the notes into a report", modification=text)
    )
    kinds = by_type(proposal)
    assert kinds["LENGTH"].startswith("5 pages")
    assert "`revenue_eur`" in kinds["CHART"]
    assert kinds["LANGUAGE"] == "Write in English."


def test_modify_without_recognised_words_is_kept_verbatim(tmp_path: Path) -> None:
    """A modification the rules do not cover still becomes a verbatim instruction."""
    home = make_home(tmp_path)
    proposal = BuiltinPlanner().propose(context(home, MEMO, modification="Mention Acme twice."))
    assert by_type(proposal)["USER_MODIFICATION"] == "(1) Mention Acme twice."
    assert "nothing a rule reads; kept verbatim" in proposal.understanding
