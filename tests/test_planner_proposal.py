"""Tests of the builtin amendment proposal (planner.builtin.proposal)."""

from __future__ import annotations

from pathlib import Path

from test_planner_support import context, make_home

from multiverse.contracts import LearningContext, PastRun, Proposal
from multiverse.models import InstructionStatus, UserInstruction
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


def test_first_run_proposal(tmp_path: Path) -> None:
    """A first run's proposal restates the request and proposes typed, justified instructions."""
    home = make_home(tmp_path)
    proposal = BuiltinPlanner().propose(context(home, MEMO))
    kinds = by_type(proposal)
    assert list(kinds) == [
        "GOAL",
        "DELIVERABLE",
        "SOURCES",
        "FORMAT",
        "VISUALS",
        "RESEARCH",
        "LANGUAGE",
        "STYLE",
    ]
    assert kinds["GOAL"] == MEMO
    assert "a memo" in kinds["DELIVERABLE"]
    assert "assets/q3.md" in kinds["SOURCES"] and "assets/시장_보고서.md" in kinds["SOURCES"]
    assert "at most 2 pages" in kinds["FORMAT"]
    assert kinds["LANGUAGE"] == "Write the deliverables in English."
    assert "guidelines/style.md" in kinds["STYLE"]
    assert all(item.justification for item in proposal.instructions)
    assert proposal.made_offline and proposal.conflicts == []
    assert "Deliverables detected: memo, with charts" in proposal.understanding
    assert "Sources available: 5 file(s)" in proposal.understanding
    assert "first run, no past runs" in proposal.understanding


def test_korean_request_flows_through_unchanged(tmp_path: Path) -> None:
    """A Korean request is kept verbatim as the goal and read as Korean."""
    home = make_home(tmp_path, assets={})
    proposal = BuiltinPlanner().propose(context(home, KOREAN))
    kinds = by_type(proposal)
    assert kinds["GOAL"] == KOREAN
    assert "a report" in kinds["DELIVERABLE"]
    assert "at most 3 pages" in kinds["FORMAT"]
    assert kinds["LANGUAGE"] == "Write the deliverables in Korean."
    assert kinds["SOURCES"].startswith("No source files")
    assert KOREAN in proposal.understanding


def test_conflicts_supersede_active_past_instructions(tmp_path: Path) -> None:
    """An ACTIVE past instruction of the same type with other content is a conflict to supersede."""
    home = make_home(tmp_path)
    instructions = [
        past("I0001", "LANGUAGE", "Write the deliverables in English."),
        past("I0002", "DELIVERABLE", "Deliver a memo as markdown in the run's outputs folder."),
        past("I0003", "FORMAT", "One page only.", InstructionStatus.SUPERSEDED),
        past("I0004", "VISUALS", "No charts."),
    ]
    learning = LearningContext(past_runs=[PastRun(run_id=EARLIER, score=2.5, user_request="memo")])
    ctx = context(
        home,
        "한국어로 시장 메모를 써줘, 차트 포함",
        past_instructions=instructions,
        learning=learning,
    )
    proposal = BuiltinPlanner().propose(ctx)
    supersedes = {item.instruction_type: item.supersedes for item in proposal.instructions}
    assert supersedes["LANGUAGE"] == ["I0001"]
    assert supersedes["VISUALS"] == ["I0004"]
    assert supersedes["DELIVERABLE"] == [] and supersedes["FORMAT"] == []
    assert len(proposal.conflicts) == 2
    assert "I0001 of run-20260201-080000-001" in proposal.conflicts[1]
    assert "would be superseded" in proposal.conflicts[1]
    assert "1 earlier instruction(s) agree, 2 conflict" in proposal.understanding
    assert validate_proposal(proposal, ctx) == []


def test_modify_revises_the_proposal(tmp_path: Path) -> None:
    """MODIFY keeps the text verbatim and replaces the deliverable, language, visuals it names."""
    home = make_home(tmp_path)
    text = "Make it a presentation in Korean, without the chart"
    proposal = BuiltinPlanner().propose(context(home, MEMO, modification=text))
    kinds = by_type(proposal)
    assert kinds["USER_MODIFICATION"] == text
    assert "a presentation" in kinds["DELIVERABLE"]
    assert kinds["LANGUAGE"] == "Write the deliverables in Korean."
    assert "VISUALS" not in kinds
    assert f'Revised after your modification "{text}"' in proposal.understanding
    assert "deliverable is now presentation" in proposal.understanding
    assert "visuals removed" in proposal.understanding


def test_korean_modify_adds_a_chart_and_a_length(tmp_path: Path) -> None:
    """A Korean MODIFY asking for a chart and five pages adds VISUALS and changes FORMAT."""
    home = make_home(tmp_path)
    text = "차트를 추가하고 5페이지로 해줘"
    proposal = BuiltinPlanner().propose(
        context(home, "Summarise the notes into a report", modification=text)
    )
    kinds = by_type(proposal)
    assert kinds["USER_MODIFICATION"] == text
    assert "at most 5 pages" in kinds["FORMAT"]
    assert "VISUALS" in kinds
    assert kinds["LANGUAGE"] == "Write the deliverables in English."


def test_modify_without_recognised_words_is_kept_verbatim(tmp_path: Path) -> None:
    """A modification the keywords do not cover still becomes a verbatim instruction."""
    home = make_home(tmp_path)
    proposal = BuiltinPlanner().propose(context(home, MEMO, modification="Mention Acme twice."))
    assert by_type(proposal)["USER_MODIFICATION"] == "Mention Acme twice."
    assert "kept as a verbatim instruction" in proposal.understanding
