"""The pure check of a model's wording (communicator.wording_check), over generated wordings:
truthful sentences in varied order and form, with or without one untrue sentence of each kind,
in English and Korean; the expectation comes from how each wording was built."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from communicator import LANGUAGES, BuiltinCommunicator
from communicator.model import failure_facts, proposal_facts
from communicator.wording_check import refusals
from multiverse.roles import ANSWERED_BY, COMMANDS, Message, MessageKind

RUN = "run-20260101-120000-001"
PROPOSAL = Message(
    kind=MessageKind.PROPOSAL,
    run_id=RUN,
    facts={"proposal_path": f"runs/{RUN}/feedback_for_user.md", "summary": "A memo for the board."},
)
FAILURE = Message(
    kind=MessageKind.FAILURE,
    run_id=RUN,
    facts={
        "role": "executor", "phase": "P1", "stage": "P1-S01", "task": "P1-S01-T01",
        "tool_task": "", "purpose": "Extract the revenue figures",
        "error": "column 'revenue' not found; the table was written partially",
    },
)  # fmt: skip
DOCUMENT = "# Proposal\n\nUnderstanding: a 2-page memo for the board\n"
SOURCES = {
    MessageKind.PROPOSAL: [proposal_facts(PROPOSAL), DOCUMENT],
    MessageKind.FAILURE: [failure_facts(FAILURE)],
}
MESSAGES = {MessageKind.PROPOSAL: PROPOSAL, MessageKind.FAILURE: FAILURE}

# What each message may truthfully say, in both languages.
TRUE: dict[MessageKind, list[str]] = {
    MessageKind.PROPOSAL: [
        "Here is how I understood your request.",
        "I have read your request and prepared a proposal for a 2-page memo.",
        "Your proposal is ready for review.",
        "Nothing has been produced yet.",
        "No analysis has been done so far.",
        "The memo will be written once you confirm.",
        "Please read the proposal, then confirm, modify or cancel.",
        f"To go ahead, run `multiverse confirm {RUN}`.",
        f'To change it, run `multiverse modify {RUN} "one page only"`.',
        "Thank you for your request.",
        "Please confirm to go ahead.",
        "요청을 읽고 제안서를 준비했습니다.",
        "아직 아무것도 만들지 않았습니다.",
        "확정하시면 보고서를 작성하겠습니다.",
        f"`multiverse cancel {RUN}`으로 중단할 수 있습니다.",
        "요청해 주셔서 감사합니다.",
        "제안서를 확인하신 뒤 답해 주세요.",
    ],
    MessageKind.FAILURE: [
        "The run stopped while extracting the revenue figures.",
        "It stopped at stage P1-S01, in task P1-S01-T01.",
        f"Once the cause is fixed, `multiverse retry {RUN}` resumes it.",
        "Work already completed is kept.",
        "The error log below says the table was written partially.",
        "Nothing more will run for it.",
        "The task could not be completed.",
        "실행이 오류로 멈췄습니다.",
        "스테이지 P1-S01에서 멈췄습니다.",
        f"원인을 고친 뒤 `multiverse retry {RUN}`로 다시 시작할 수 있습니다.",
        "이미 끝난 작업은 그대로 유지됩니다.",
        "작업 P1-S01-T01을 완료하지 못했습니다.",
    ],
}

NOT_COMMANDS = ["restart", "rerun", "reset", "support", "fix", "continue", "resolve", "reopen"]
EN_WORK = ["The first analysis", "A report", "The chart", "Your deliverables", "The summary table"]
EN_DONE = ["was produced", "has been completed", "is ready", "was written", "has been generated"]
KO_WORK = ["첫 분석을", "보고서를", "차트를", "결과물을", "데이터 표를"]
KO_DONE = ["만들었습니다", "완료했습니다", "작성했습니다", "생성했습니다"]
EN_THANKS = ["Thank you for", "Thanks for", "We appreciate"]
EN_ANSWERS = ["confirming", "your confirmation", "your approval", "your answer", "your reply"]
KO_ANSWERS = ["확인해 주셔서 감사합니다.", "승인해 주셔서 감사합니다.", "답변 감사합니다.",
              "확정해 주셔서 고맙습니다.", "실행이 확정되었습니다."]  # fmt: skip
REASONS = {
    "invented": "does not exist",
    "wrong": "which does not answer",
    "claim": "claims work not done",
    "thanks": "acknowledges",
    "contact": "offers a contact",
    "value": "states a value not among the facts",
}


@st.composite
def lies(draw: st.DrawFn, kind: MessageKind) -> tuple[str, str]:
    """One untrue sentence for `kind`, and which rule it breaks."""
    what = draw(st.sampled_from(sorted(REASONS)))
    korean = draw(st.booleans())
    if what == "invented":
        name = draw(st.sampled_from(NOT_COMMANDS))
        said = f"`multiverse {name} {RUN}`" + ("을 실행해 주세요." if korean else " fixes it.")
    elif what == "wrong":
        name = draw(st.sampled_from(sorted(COMMANDS - set(ANSWERED_BY[kind]))))
        said = f"`multiverse {name} {RUN}`" + ("로 진행하세요." if korean else " is next.")
    elif what == "claim":
        if korean:
            said = f"{draw(st.sampled_from(KO_WORK))} {draw(st.sampled_from(KO_DONE))}."
        else:
            said = f"{draw(st.sampled_from(EN_WORK))} {draw(st.sampled_from(EN_DONE))}."
    elif what == "thanks":
        if korean:
            said = draw(st.sampled_from(KO_ANSWERS))
        else:
            said = f"{draw(st.sampled_from(EN_THANKS))} {draw(st.sampled_from(EN_ANSWERS))}."
    elif what == "contact":
        user = draw(st.from_regex(r"[a-z]{3,8}", fullmatch=True))
        said = draw(
            st.sampled_from(
                [
                    f"Write to {user}@example.com.",
                    f"See https://{user}.example.org/help.",
                    "Please contact support if it happens again.",
                    "Reach out to our help desk.",
                    "관리자에게 연락해 주세요.",
                    "고객센터로 문의해 주세요.",
                ]
            )
        )
    else:
        number = draw(st.integers(3, 10**6).filter(lambda n: str(n) not in RUN))
        said = f"{number}번째 단계에서 멈췄습니다." if korean else f"It took {number} steps."
    return said, what


@settings(max_examples=150, deadline=None)
@given(data=st.data(), kind=st.sampled_from([MessageKind.PROPOSAL, MessageKind.FAILURE]))
def test_a_wording_is_refused_exactly_when_it_holds_an_untrue_sentence(
    data: st.DataObject, kind: MessageKind
) -> None:
    """Truthful sentences in any order pass; one untrue sentence among them is named."""
    true = data.draw(st.lists(st.sampled_from(TRUE[kind]), min_size=1, max_size=4, unique=True))
    lie = data.draw(st.none() | lies(kind))
    sentences = list(true)
    if lie is not None:
        sentences.insert(data.draw(st.integers(0, len(sentences))), lie[0])
    joiner = data.draw(st.sampled_from([" ", "\n", "\n\n"]))
    found = refusals(joiner.join(sentences), MESSAGES[kind], SOURCES[kind])
    if lie is None:
        assert found == []
    else:
        assert any(REASONS[lie[1]] in reason for reason in found), (lie, found)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=400), kind=st.sampled_from(list(MessageKind)))
def test_any_text_gives_reasons_never_an_exception(text: str, kind: MessageKind) -> None:
    """The check is total: whatever a model writes, the answer is a list of reasons."""
    message = Message(kind=kind, run_id=RUN, facts={"text": "x", "answer": "CONFIRM"})
    assert isinstance(refusals(text, message), list)


FACTS = {
    "summary": "요약", "proposal_path": f"runs/{RUN}/feedback_for_user.md", "answer": "CONFIRM",
    "text": "한 페이지로", "finished": "phases 1 of 5", "error": "boom", "phase": "P1",
    "outputs": f"outputs/{RUN}/", "not_done": "chart of x by y: no such column",
    "approval_id": "a1", "action": "ls", "timeout": "10 min", "reason": "user:1",
    "retry": "2", "place": "stage P1-S01", "history": f"runs/{RUN}/failures.md", "reply": "hi",
    "table": f"runs/{RUN}/P1_stages.md", "plan": "P2",
}  # fmt: skip


@pytest.mark.parametrize("language", sorted(LANGUAGES))
@pytest.mark.parametrize("kind", list(MessageKind))
@pytest.mark.parametrize("answer", ["CONFIRM", "MODIFY"])
def test_the_codes_own_wording_passes(language: str, kind: MessageKind, answer: str) -> None:
    """Every template, in every language, says only what its message states (no false refusal)."""
    message = Message(
        kind=kind, run_id=RUN, facts={**FACTS, "answer": answer},
        items=[f"outputs/{RUN}/report.md"], language=language,
    )  # fmt: skip
    assert refusals(BuiltinCommunicator().compose(message), message) == []


@pytest.mark.parametrize(
    ("kind", "facts", "words", "refused"),
    [
        (MessageKind.ANSWER_RECEIVED, {"answer": "CONFIRM"}, "Thank you for confirming.", False),
        (MessageKind.ANSWER_RECEIVED, {"answer": "CONFIRM"}, "Thanks for your changes.", True),
        (MessageKind.ANSWER_RECEIVED, {"answer": "MODIFY"}, "수정 요청 감사합니다.", False),
        (MessageKind.ANSWER_RECEIVED, {"answer": "MODIFY"}, "승인해 주셔서 감사합니다.", True),
        (MessageKind.CANCELLED, {}, "Your cancellation is noted.", False),
        (MessageKind.CANCELLED, {}, "The report was written.", True),
        (MessageKind.CANCELLED, {"finished": "phase P1"}, "The report of P1 was written.", False),
        (MessageKind.COMPLETION, {}, "The report is ready.", False),
        (MessageKind.APPROVAL_REQUEST, {}, "Thank you for your approval.", True),
        (MessageKind.APPROVAL_REQUEST, {}, f"Allow it with `multiverse approve {RUN}`.", False),
        (MessageKind.HOLD, {"reason": "user:1"}, "Paused, as you asked.", False),
        (MessageKind.HOLD, {}, f"Go on with `multiverse retry {RUN}`.", True),
    ],
)
def test_what_is_true_follows_the_messages_facts(
    kind: MessageKind, facts: dict[str, str], words: str, refused: bool
) -> None:
    """Which answers may be thanked for, which work claimed, which command named: by the facts."""
    message = Message(kind=kind, run_id=RUN, facts=facts)
    assert bool(refusals(words, message)) is refused, refusals(words, message)
