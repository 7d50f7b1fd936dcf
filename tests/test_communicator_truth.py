"""Messages that are true (issue 26): through the loopback model server, a wording that says
more than the code states is refused for the template; a truthful one is kept, facts verbatim."""

from __future__ import annotations

import json

import pytest
from structlog.testing import capture_logs

from communicator import BuiltinCommunicator
from communicator.model import MODEL_WORDED, ModelCommunicator
from multiverse.config import RuntimeMapping, Tier, TierConfig
from multiverse.gateway import Gateway
from multiverse.gateway.calls import RetryPolicy
from multiverse.home import Home
from multiverse.roles import ANSWERED_BY, COMMANDS, Message, MessageKind

from fake_openai import FakeOpenAI, text

RUN = "run-20260101-120000-001"
ERROR_LOG = "executor: column 'revenue' not found\n  in table sales.csv"
PROPOSAL = Message(
    kind=MessageKind.PROPOSAL,
    run_id=RUN,
    facts={"proposal_path": f"runs/{RUN}/feedback_for_user.md", "summary": "A memo for the board."},
)
FAILURE = Message(
    kind=MessageKind.FAILURE,
    run_id=RUN,
    facts={
        "role": "executor",
        "phase": "P1",
        "stage": "P1-S01",
        "task": "P1-S01-T01",
        "tool_task": "",
        "purpose": "Extract the revenue figures",
        "error": ERROR_LOG,
    },
)
KO_PROPOSAL = PROPOSAL.model_copy(update={"language": "ko"})
KO_FAILURE = FAILURE.model_copy(update={"language": "ko"})


@pytest.fixture
def communicator(
    home: Home, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> ModelCommunicator:
    """A ModelCommunicator on the fake server, with a proposal file in its run."""
    monkeypatch.setenv("FAKE_KEY", "fake-key-value")
    feedback = home.run(RUN).feedback
    feedback.parent.mkdir(parents=True)
    feedback.write_text("# Proposal\n\nUnderstanding: a 2-page memo\n", encoding="utf-8")
    tier = TierConfig(
        model="openai/fake-model", api_base=fake_openai.base_url, api_key_env="FAKE_KEY"
    )
    gateway = Gateway(runs_root=home.runs, retry=RetryPolicy(max_attempts=1))
    return ModelCommunicator(home, gateway, RuntimeMapping(tier_mapping={Tier.LOW: tier}))


def _said(communicator: ModelCommunicator, fake: FakeOpenAI, message: Message, words: str) -> str:
    fake.script(text(json.dumps({"text": words}, ensure_ascii=False)))
    return communicator.compose(message)


def _facts_verbatim(message: Message, said: str) -> None:
    assert RUN in said
    if message.kind is MessageKind.FAILURE:
        assert ERROR_LOG in said and "P1-S01-T01" in said and f"multiverse retry {RUN}" in said
    else:
        assert f"multiverse confirm {RUN}" in said and f"multiverse cancel {RUN}" in said
        assert f"runs/{RUN}/feedback_for_user.md" in said


REFUSED = [
    # (message, the model's wording, what the refusal says)
    (FAILURE, "Please run `multiverse restart` once the cause is fixed.", "does not exist"),
    (KO_FAILURE, f"원인을 고친 뒤 `multiverse rerun {RUN}`을 실행하세요.", "does not exist"),
    (FAILURE, f"You can retry by running `multiverse confirm {RUN}`.", "does not answer a FAILURE"),
    (KO_FAILURE, f"`multiverse approve {RUN}`로 다시 진행하세요.", "does not answer a FAILURE"),
    (PROPOSAL, "Type CANCEL or RESUME in the answer file.", "does not answer a PROPOSAL"),
    (PROPOSAL, "I read your files and a first analysis was produced.", "claims work not done"),
    (KO_PROPOSAL, "요청을 읽고 첫 분석을 만들었습니다.", "claims work not done"),
    (FAILURE, "Stage P1-S01 was completed before the error.", "claims work not done"),
    (PROPOSAL, "Thank you for confirming! Here is the plan.", "acknowledges CONFIRM"),
    (KO_PROPOSAL, "확인해 주셔서 감사합니다. 제안서를 보내 드립니다.", "acknowledges CONFIRM"),
    (KO_FAILURE, "재시도를 요청해 주셔서 감사합니다.", "acknowledges RETRY"),
    (FAILURE, "If it happens again, contact support.", "offers a contact"),
    (FAILURE, "Write to help@multiverse.example for help.", "offers a contact"),
    (KO_FAILURE, "문제가 계속되면 고객센터로 문의해 주세요.", "offers a contact"),
    (FAILURE, "It failed at step 3 of the stage.", "states a value not among the facts: '3'"),
    (PROPOSAL, "The proposal has 5 parts.", "states a value not among the facts: '5'"),
]


@pytest.mark.parametrize(("message", "words", "reason"), REFUSED)
def test_an_untrue_wording_is_refused_for_the_template(
    communicator: ModelCommunicator,
    fake_openai: FakeOpenAI,
    message: Message,
    words: str,
    reason: str,
) -> None:
    """A wording that says more than the code states is logged with why and the template said."""
    with capture_logs() as events:
        said = _said(communicator, fake_openai, message, words)
    assert said == BuiltinCommunicator().compose(message)
    assert words not in said
    _facts_verbatim(message, said)
    refused = [event for event in events if event["event"] == "communicator_wording_refused"]
    assert len(refused) == 1 and refused[0]["kind"] == message.kind.value
    assert any(reason in why for why in refused[0]["reasons"]), refused[0]["reasons"]
    assert fake_openai.count == 1  # a refused wording is not asked for again


def test_the_issues_wording_is_refused_on_both_counts(
    communicator: ModelCommunicator, fake_openai: FakeOpenAI
) -> None:
    """The wording the issue quotes: a wrong command and an invented support line."""
    words = "The task failed. Please retry by running `multiverse confirm`, or contact support."
    with capture_logs() as events:
        said = _said(communicator, fake_openai, FAILURE, words)
    assert said == BuiltinCommunicator().compose(FAILURE)
    (refused,) = [event for event in events if event["event"] == "communicator_wording_refused"]
    joined = "\n".join(refused["reasons"])
    assert "does not answer a FAILURE" in joined and "offers a contact" in joined


TRUE = [
    (PROPOSAL, "I have read your request and prepared a proposal for a 2-page memo."),
    (PROPOSAL, "Nothing has been produced yet: the memo will be written once you confirm."),
    (KO_PROPOSAL, "요청을 읽고 제안서를 준비했습니다. 아직 아무것도 만들지 않았습니다."),
    (FAILURE, "The run stopped while extracting the revenue figures in stage P1-S01."),
    (FAILURE, f"Once the cause is fixed, `multiverse retry {RUN}` resumes it from this step."),
    (KO_FAILURE, "매출 수치를 추출하다 실행이 멈췄습니다. 원인을 고친 뒤 다시 시도할 수 있습니다."),
]


@pytest.mark.parametrize(("message", "words"), TRUE)
def test_a_truthful_wording_is_kept_with_the_facts(
    communicator: ModelCommunicator, fake_openai: FakeOpenAI, message: Message, words: str
) -> None:
    """A wording that only phrases what the code states is said, the facts verbatim below it."""
    with capture_logs() as events:
        said = _said(communicator, fake_openai, message, words)
    assert said.startswith(words)
    _facts_verbatim(message, said)
    assert not [event for event in events if event["event"] == "communicator_wording_refused"]


def test_a_revised_proposal_may_thank_for_the_changes(
    communicator: ModelCommunicator, fake_openai: FakeOpenAI
) -> None:
    """A proposal that follows the user's MODIFY may acknowledge it, and only it."""
    revised = PROPOSAL.model_copy(
        update={"facts": {**PROPOSAL.facts, "modification": "one page only"}}
    )
    kept = _said(communicator, fake_openai, revised, "Thank you for your changes: one page only.")
    assert kept.startswith("Thank you for your changes")
    refused = _said(communicator, fake_openai, revised, "Thank you for confirming the changes.")
    assert refused == BuiltinCommunicator().compose(revised)


def test_the_model_is_given_what_the_code_states(
    communicator: ModelCommunicator, fake_openai: FakeOpenAI
) -> None:
    """The prompt holds the event, the facts and the commands that answer it, from code."""
    _said(communicator, fake_openai, FAILURE, "The run stopped.")
    _said(communicator, fake_openai, PROPOSAL, "Here is the proposal.")
    failure, proposal = (
        json.loads(request["messages"][1]["content"].split("\n\n", 1)[1])
        for request in fake_openai.requests
    )
    assert failure["answer_commands"] == [f"multiverse retry {RUN}"]
    assert failure["facts"] == FAILURE.facts and failure["answers_given"] == []
    assert failure["work_done"] is False and "stopped" in failure["event"]
    assert ERROR_LOG in failure["shown_below_your_words"]
    assert proposal["answer_commands"] == [
        f"multiverse confirm {RUN}",
        f'multiverse modify {RUN} "what to change"',
        f"multiverse cancel {RUN}",
    ]
    assert "nothing has been produced" in proposal["event"]


CODE_FIXED = [kind for kind in MessageKind if kind not in MODEL_WORDED]


@pytest.mark.parametrize("kind", CODE_FIXED)
def test_a_message_fixed_by_code_makes_no_call(
    communicator: ModelCommunicator, fake_openai: FakeOpenAI, kind: MessageKind
) -> None:
    """Acks, completions, retries, holds and notices are the templates' words: no model call."""
    message = Message(kind=kind, run_id=RUN, facts={"answer": "CONFIRM", "text": "x"}, items=["a"])
    assert communicator.compose(message) == BuiltinCommunicator().compose(message)
    assert fake_openai.count == 0


def test_the_kernels_commands_are_the_clis() -> None:
    """The list the Communicator checks commands against is exactly the typer app's commands."""
    from app.cli import app

    names = {
        command.name or (command.callback.__name__ if command.callback else "")
        for command in app.registered_commands
    }
    assert {name.replace("_", "-") for name in names} == COMMANDS
    assert all(set(answers) <= COMMANDS for answers in ANSWERED_BY.values())
