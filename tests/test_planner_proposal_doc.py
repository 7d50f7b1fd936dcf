"""Tests of the proposal document (planner.proposal_doc)."""

from __future__ import annotations

from pathlib import Path

from multiverse.roles import LearningContext, PastRun, Proposal, ProposedInstruction
from multiverse.spec import RequestSpec
from multiverse.store import parse_table_text
from planner.proposal_doc import read_instructions, render_proposal

RUN = "run-20260301-090000-001"


def proposal(made_offline: bool = True) -> Proposal:
    """A proposal with a Korean goal, a pipe in a content and one superseded instruction."""
    return Proposal(
        understanding="- Request: 시장 보고서\n- Language: Korean.",
        instructions=[
            ProposedInstruction(
                instruction_type="GOAL", content="시장 보고서 | 3페이지", justification="as written"
            ),
            ProposedInstruction(
                instruction_type="LANGUAGE",
                content="Write in Korean.",
                justification="script",
                supersedes=["I0001"],
            ),
        ],
        conflicts=["LANGUAGE: I0001 says English; it would be superseded."],
        made_offline=made_offline,
    )


def test_answer_instructions() -> None:
    """The document says how to confirm, modify or cancel, by CLI or user_response.md."""
    text = render_proposal(proposal(), RUN, LearningContext())
    assert f"`multiverse confirm {RUN}`" in text
    assert f'`multiverse modify {RUN} "' in text
    assert f"`multiverse cancel {RUN}`" in text
    assert f"runs/{RUN}/user_response.md" in text
    assert "`CONFIRM`, `MODIFY: <what to change>`, or `CANCEL`" in text


def test_instruction_table_round_trips() -> None:
    """The instructions table parses back with every cell intact, Korean and pipes included."""
    text = render_proposal(proposal(), RUN, LearningContext())
    columns = ("#", "type", "content", "justification", "supersedes")
    table = parse_table_text(text, Path("feedback_for_user.md"), columns)
    assert table.rows == [
        ["1", "GOAL", "시장 보고서 | 3페이지", "as written", "—"],
        ["2", "LANGUAGE", "Write in Korean.", "script", "I0001"],
    ]


def test_conflicts_and_superseded_ids() -> None:
    """Conflicts are listed with the ids that CONFIRM would supersede."""
    text = render_proposal(proposal(), RUN, LearningContext())
    assert "- LANGUAGE: I0001 says English" in text
    assert "On CONFIRM these become SUPERSEDED: I0001." in text
    quiet = proposal().model_copy(update={"conflicts": []})
    assert "None: no ACTIVE instruction" in render_proposal(quiet, RUN, LearningContext())


def test_learning_context_table() -> None:
    """Past runs appear ranked with their BM25 scores; a first run says so."""
    learning = LearningContext(
        past_runs=[
            PastRun(
                run_id="run-20260201-080000-001", score=3.14159, user_request="시장 메모\n둘째 줄"
            ),
            PastRun(run_id="run-20260101-080000-002", score=0.5, user_request="Q3 memo"),
        ]
    )
    text = render_proposal(proposal(), RUN, learning)
    assert "| rank" in text and "BM25" in text
    assert "run-20260201-080000-001 | 3.142" in text
    assert "시장 메모 둘째 줄" in text
    assert "First run: no past runs." in render_proposal(proposal(), RUN, LearningContext())


def test_offline_notice_only_when_offline() -> None:
    """The offline notice appears exactly when the proposal was made offline."""
    assert "Made offline by the builtin engine" in render_proposal(
        proposal(), RUN, LearningContext()
    )
    online = render_proposal(proposal(made_offline=False), RUN, LearningContext())
    assert "Made offline" not in online
    assert online.startswith(f"# Proposal for run {RUN}\n\n## What will be done")


def test_a_korean_proposal_is_read_back_as_a_person_left_it() -> None:
    """The instructions table of a Korean proposal (Korean headings and columns) is read back,
    a person's edit included; its fixed words are Korean."""
    korean = proposal().model_copy(
        update={"spec": RequestSpec(request="시장 보고서", language="ko"), "conflicts": []}
    )
    text = render_proposal(korean, RUN, LearningContext())
    assert text.startswith(f"# 실행 {RUN} 제안서\n") and "## 제안하는 지침" in text
    assert "| 유형" in text and "없음: 이전 실행의 ACTIVE 지침과" in text
    assert "첫 실행: 과거 실행이 없습니다." in text and "- 확정: `multiverse confirm" in text
    edited = text.replace("| Write in Korean. ", "| 한국어로 씁니다. ")
    kinds = {item.instruction_type: item for item in read_instructions(edited)}
    assert kinds["LANGUAGE"].content == "한국어로 씁니다."
    assert kinds["LANGUAGE"].supersedes == ["I0001"]
    assert kinds["GOAL"].content == "시장 보고서 | 3페이지"


def test_a_model_proposal_is_followed_by_what_the_files_allow() -> None:
    """A model's own understanding is kept, then the spec as checked against the files."""
    spec = RequestSpec(request="memo", deliverable="memo", language="en")
    made = proposal(made_offline=False).model_copy(update={"spec": spec})
    text = render_proposal(made, RUN, LearningContext())
    understood = text.split("## How I understood the request\n\n", 1)[1].split("\n## ", 1)[0]
    own = "- Request: 시장 보고서\n- Language: Korean."
    assert understood.startswith(f"{own}\n\n- **Deliverable:**")
    assert "Read offline" not in understood
