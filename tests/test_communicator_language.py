"""The Communicator speaks the requester's language: Korean for a Korean run, English otherwise."""

from __future__ import annotations

import json
import re

import pytest

from communicator import KOREAN, TEMPLATES, BuiltinCommunicator, Speaker
from multiverse.home import Home
from multiverse.roles import Message, MessageKind

RUN = "run-20261127-101500-001"
FACTS = {
    "summary": "요약", "proposal_path": f"runs/{RUN}/feedback_for_user.md", "answer": "CONFIRM",
    "text": "한 페이지로", "finished": "phases 1 of 5", "error": "boom", "phase": "P1",
    "outputs": f"outputs/{RUN}/", "not_done": "chart of x by y: no such column",
    "approval_id": "a1", "action": "ls", "timeout": "10 min", "reason": "user:1",
}  # fmt: skip
_HANGUL = re.compile("[가-힣]")
_LATIN_WORD = re.compile(r"\b[a-z]{4,}\b")


@pytest.mark.parametrize("kind", sorted(KOREAN, key=str))
def test_a_korean_message_has_no_english_sentence(kind: MessageKind) -> None:
    """Each Korean template is Korean: its fixed words are Hangul; commands and facts stay."""
    text = BuiltinCommunicator().compose(
        Message(kind=kind, run_id=RUN, facts=FACTS, items=["outputs/x/report.md"], language="ko")
    )
    assert _HANGUL.search(text), text
    fixed = re.sub(r"`[^`]*`|```.*?```|> .*|run-\d+-\d+-\d+", "", text, flags=re.S)
    for value in FACTS.values():
        fixed = fixed.replace(value, "")
    words = set(_LATIN_WORD.findall(fixed)) - {"multiverse", "confirm", "modify", "cancel",
                                              "approve", "deny", "resume", "retry", "system"}
    assert not words, (kind, words, text)


def test_an_unknown_language_is_said_in_english() -> None:
    """A language without templates gets the English ones, never an error."""
    message = Message(kind=MessageKind.COMPLETION, run_id=RUN, facts=FACTS, language="fr")
    english = Message(kind=MessageKind.COMPLETION, run_id=RUN, facts=FACTS)
    assert BuiltinCommunicator().compose(message) == TEMPLATES[MessageKind.COMPLETION](english)


def test_the_speaker_takes_the_language_from_the_runs_spec(home: Home) -> None:
    """A message to a run whose spec says Korean is composed in Korean, in messages.md too."""
    paths = home.run(RUN)
    paths.root.mkdir(parents=True)
    paths.spec.write_text(json.dumps({"language": "ko"}), encoding="utf-8")
    said: list[str] = []
    speaker = Speaker(home, BuiltinCommunicator(), console=said.append)
    speaker.tell(Message(kind=MessageKind.COMPLETION, run_id=RUN, facts=FACTS))
    assert "완료되었습니다" in said[0]
    assert "완료되었습니다" in paths.messages.read_text(encoding="utf-8")
    assert "하지 못한 것" in said[0] and FACTS["not_done"] in said[0]
