"""The model-backed Communicator, through the real gateway against the loopback fake server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from communicator import BuiltinCommunicator
from communicator.model import ModelCommunicator
from multiverse.agent_package import role_package_dir
from multiverse.config import RuntimeMapping, Tier, TierConfig
from multiverse.gateway import Gateway
from multiverse.gateway.calls import RetryPolicy
from multiverse.home import Home
from multiverse.roles import Message, MessageKind

from fake_openai import FakeOpenAI, error, text

RUN = "run-20260101-120000-001"
PROPOSAL = Message(
    kind=MessageKind.PROPOSAL,
    run_id=RUN,
    facts={"proposal_path": f"runs/{RUN}/feedback_for_user.md", "summary": "A memo for the board."},
)
ERROR_LOG = "planner answer invalid:\n```json\n{bad}\n```\nline 2 | pipes | `ticks`"
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


def _mapping(server: FakeOpenAI) -> RuntimeMapping:
    tier = TierConfig(model="openai/fake-model", api_base=server.base_url, api_key_env="FAKE_KEY")
    return RuntimeMapping(tier_mapping={Tier.LOW: tier})


@pytest.fixture
def communicator(
    home: Home, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> ModelCommunicator:
    """A ModelCommunicator on the fake server, with a proposal file in its run."""
    monkeypatch.setenv("FAKE_KEY", "fake-key-value")
    feedback = home.run(RUN).feedback
    feedback.parent.mkdir(parents=True)
    feedback.write_text("# Proposal\n\nUnderstanding: a 2-page memo 📈\n", encoding="utf-8")
    gateway = Gateway(runs_root=home.runs, retry=RetryPolicy(max_attempts=1))
    return ModelCommunicator(home, gateway, _mapping(fake_openai))


def _answer(words: str) -> str:
    return json.dumps({"text": words})


def test_proposal_words_then_facts(
    communicator: ModelCommunicator, fake_openai: FakeOpenAI
) -> None:
    """A proposal is the model's wording followed by the path and the answer commands verbatim."""
    fake_openai.script(text(_answer("Here is how I understood your memo request.")))
    said = communicator.compose(PROPOSAL)
    assert said.startswith("Here is how I understood your memo request.")
    for fact in (
        RUN,
        f"runs/{RUN}/feedback_for_user.md",
        f"multiverse confirm {RUN}",
        f'multiverse modify {RUN} "what to change"',
        f"multiverse cancel {RUN}",
        f"runs/{RUN}/user_response.md",
    ):
        assert fact in said
    request = fake_openai.requests[0]
    assert request["model"] == "fake-model"
    system = request["messages"][0]
    assert system["role"] == "system" and "Communicator" in system["content"]
    sent = json.dumps(request["messages"], ensure_ascii=False)
    assert "a 2-page memo 📈" in sent  # the proposal itself was shown to the model


def test_failure_keeps_error_log_verbatim(
    communicator: ModelCommunicator, fake_openai: FakeOpenAI
) -> None:
    """A failure report holds the model's words, the exact place and the untouched error log."""
    fake_openai.script(text(_answer("The run stopped while extracting figures.")))
    said = communicator.compose(FAILURE)
    assert said.startswith("The run stopped while extracting figures.")
    assert "phase P1 › stage P1-S01 › task P1-S01-T01" in said
    assert ERROR_LOG in said
    assert "````\n" + ERROR_LOG + "\n````" in said  # a fence longer than the log's own
    assert "Extract the revenue figures" in said and RUN in said


def test_malformed_answers_fall_back_to_template(
    communicator: ModelCommunicator, fake_openai: FakeOpenAI
) -> None:
    """An answer still malformed after two repairs gives exactly the builtin template's text."""
    fake_openai.script(text("not json"), text('{"words": 1}'), text("```\n{]\n```"))
    said = communicator.compose(FAILURE)
    assert said == BuiltinCommunicator().compose(FAILURE)
    assert fake_openai.count == 3


def test_repaired_answer_is_used(communicator: ModelCommunicator, fake_openai: FakeOpenAI) -> None:
    """A malformed first answer is repaired on the second call and its wording used."""
    fake_openai.script(text("Sure! Here you go"), text(_answer("Your proposal is ready.")))
    said = communicator.compose(PROPOSAL)
    assert said.startswith("Your proposal is ready.")
    assert fake_openai.count == 2
    repair = fake_openai.requests[1]["messages"][-1]["content"]
    assert "could not be used" in repair


def test_provider_error_falls_back(
    communicator: ModelCommunicator, fake_openai: FakeOpenAI
) -> None:
    """A provider that refuses the call gives the builtin template's text, never an exception."""
    fake_openai.script(error(400, "bad request"))
    assert communicator.compose(PROPOSAL) == BuiltinCommunicator().compose(PROPOSAL)


def test_other_kinds_make_no_call(communicator: ModelCommunicator, fake_openai: FakeOpenAI) -> None:
    """Messages other than proposals and failures come from the templates without a model call."""
    completion = Message(
        kind=MessageKind.COMPLETION,
        run_id=RUN,
        facts={"outputs": f"outputs/{RUN}/"},
        items=[f"outputs/{RUN}/report.md"],
    )
    answered = Message(kind=MessageKind.ANSWER_RECEIVED, run_id=RUN, facts={"answer": "CONFIRM"})
    for message in (completion, answered):
        assert communicator.compose(message) == BuiltinCommunicator().compose(message)
    assert fake_openai.count == 0


def test_package_is_loaded_on_every_call(
    home: Home, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An edit of AGENT.md between two messages reaches the model on the very next call."""
    monkeypatch.setenv("FAKE_KEY", "fake-key-value")
    package = tmp_path / "communicator-agent"
    shutil.copytree(role_package_dir("communicator"), package)
    role = ModelCommunicator(home, Gateway(), _mapping(fake_openai), package_dir=package)
    fake_openai.script(text(_answer("one")), text(_answer("two")))
    role.compose(FAILURE)
    prompt = package / "AGENT.md"
    prompt.write_text(prompt.read_text(encoding="utf-8") + "\nEDITED-MARKER\n", encoding="utf-8")
    role.compose(FAILURE)
    systems = [request["messages"][0]["content"] for request in fake_openai.requests]
    assert "EDITED-MARKER" not in systems[0] and "EDITED-MARKER" in systems[1]


def test_proposal_path_outside_home_is_not_read(
    communicator: ModelCommunicator, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """A proposal path leading out of the home is never read into the model's input."""
    secret = tmp_path / "outside.md"
    secret.write_text("OUTSIDE-SECRET", encoding="utf-8")
    hostile = PROPOSAL.model_copy(update={"facts": {"proposal_path": "../outside.md"}})
    fake_openai.script(text(_answer("Please review.")))
    communicator.compose(hostile)
    assert "OUTSIDE-SECRET" not in json.dumps(fake_openai.requests[0]["messages"])
