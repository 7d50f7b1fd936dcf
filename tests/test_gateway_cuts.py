"""A text answer cut by the length limit, continued where it stopped: through litellm and a real
loopback server, and the seam between the parts (pure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from multiverse.gateway import Gateway, LlmCache
from multiverse.gateway.calls import LlmAnswer, LlmCall, LlmErrorCode, RetryPolicy
from multiverse.gateway.cuts import CONTINUE_NOTE, cut_failure, join_parts

from fake_openai import FakeOpenAI, length_cut, text

RUN = "run-20261127-000000-002"
FIRST = "# Memo\n\nThe market reached €18.5 billion in 2023, up 14% from"
SECOND = " 2022. Growth came from the north.\n"
LOOP = "The market is growing. " * 120


def call(server: FakeOpenAI, continuations: int = 2, **changes: object) -> LlmCall:
    """A keyless text call to the fake server, charged to RUN."""
    fields: dict[str, object] = {
        "role": "executor", "agent_version": "1", "prompt_version": "p", "scope": "s",
        "run_id": RUN, "model": "openai/local-model", "api_base": server.base_url,
        "messages": [{"role": "system", "content": "You write."},
                     {"role": "user", "content": "Write the memo."}],
        "max_tokens": 300, "tier_max_tokens": 1200, "continuations": continuations,
    }  # fmt: skip
    return LlmCall.model_validate({**fields, **changes})


def gateway(tmp_path: Path) -> Gateway:
    """A gateway charging runs under tmp_path/runs, with a disk cache."""
    return Gateway(
        runs_root=tmp_path / "runs", cache=LlmCache(tmp_path / "cache"),
        retry=RetryPolicy(max_attempts=1), sleep=lambda _: None,
    )  # fmt: skip


def test_a_cut_answer_is_continued_and_the_parts_joined(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """A cut text answer is asked to go on, its text as the assistant's turn; both parts
    joined, every call in usage.json and the log with its continuation index."""
    fake_openai.script(
        length_cut(FIRST, completion_tokens=300, cached_tokens=0),
        text(SECOND, prompt_tokens=350, completion_tokens=20, cached_tokens=300),
    )
    with capture_logs() as events:
        answer = gateway(tmp_path).complete(call(fake_openai))
    assert answer.text == FIRST + SECOND and answer.finish_reason == "stop"
    assert (answer.parts, answer.prompt_tokens, answer.completion_tokens) == (2, 361, 320)
    assert answer.cached_tokens == 300
    first, second = fake_openai.requests
    assert second["messages"][:2] == first["messages"]
    assert second["messages"][2] == {"role": "assistant", "content": FIRST}
    assert second["messages"][3] == {"role": "user", "content": CONTINUE_NOTE}
    assert second["max_tokens"] == 300
    usage = json.loads((tmp_path / "runs" / RUN / "usage.json").read_text())
    assert (usage["calls"], usage["prompt_tokens"], usage["completion_tokens"]) == (2, 361, 320)
    logged = [(e["continuation"], e["finish_reason"]) for e in events if e["event"] == "llm_call"]
    assert logged == [(0, "length"), (1, "stop")]


def test_the_joined_answer_is_cached_whole(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """A restarted daemon gets the whole continued answer from the cache, paying nothing."""
    fake_openai.script(length_cut(FIRST, 300), text(SECOND))
    gateway(tmp_path).complete(call(fake_openai))
    again = gateway(tmp_path).complete(call(fake_openai))
    assert again.cached and again.text == FIRST + SECOND and fake_openai.count == 2


def test_continuations_are_bounded(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """Still cut after two continuations: the joined text comes back cut after three calls."""
    fake_openai.script(length_cut("one two", 300), length_cut(" three", 300),
                       length_cut(" four", 300), text(" five"))  # fmt: skip
    answer = gateway(tmp_path).complete(call(fake_openai))
    assert answer.text == "one two three four" and answer.finish_reason == "length"
    assert answer.parts == 3 and fake_openai.count == 3
    usage = json.loads((tmp_path / "runs" / RUN / "usage.json").read_text())
    assert usage["calls"] == 3 and usage["cache_hits"] == 0


@pytest.mark.parametrize(
    ("cut", "changes"),
    [
        (length_cut(FIRST, 300), {"continuations": 0}),  # the caller did not ask for it
        (length_cut(LOOP, 300), {}),  # a loop is not continued
        (length_cut(FIRST, 300), {"json_mode": True}),  # JSON is asked again, not continued
    ],
)
def test_what_is_not_continued(
    fake_openai: FakeOpenAI, tmp_path: Path, cut: object, changes: dict[str, object]
) -> None:
    """No continuation unless asked, of a loop, or of a JSON answer: one call, cut."""
    fake_openai.script(cut)  # type: ignore[arg-type]
    answer = gateway(tmp_path).complete(call(fake_openai, **changes))
    assert answer.finish_reason == "length" and fake_openai.count == 1


def test_the_seam_drops_what_the_model_repeats() -> None:
    """A continuation that restarts the words or the line it was in is joined without them."""
    assert join_parts("The market grew by 12", "% in 2024.") == "The market grew by 12% in 2024."
    assert join_parts("grew ", "by 12%.") == "grew by 12%."
    assert join_parts("grew by", " 12%") == "grew by 12%"
    restart = join_parts("x grew by 12% in 2024 and", "grew by 12% in 2024 and then fell.")
    assert restart == "x grew by 12% in 2024 and then fell."
    assert join_parts("a\n\n## Sec", "## Section\n\nText") == "a\n\n## Section\n\nText"
    assert join_parts("a\n\n## Section", "\n\n## Section\n\nB") == "a\n\n## Section\n\nB"
    assert join_parts("It rose. The", "The end.") == "It rose. The end."
    assert join_parts("| 12 |", "\n| 13 |") == "| 12 |\n| 13 |"
    assert join_parts("costs 1", "15 dollars") == "costs 115 dollars"  # a number going on
    assert join_parts("end.\n", "\nNext") == "end.\n\nNext"


def test_a_cut_failure_names_the_size_and_the_fix(fake_openai: FakeOpenAI) -> None:
    """Still cut: LENGTH_LIMIT with the parts, the room and the setting; a loop: RUNAWAY."""
    cut = LlmAnswer(text=FIRST, finish_reason="length", model="m", parts=3)
    full = call(fake_openai, tier="HIGH", max_tokens=1200)
    error = cut_failure(full, cut, "document")
    assert error.code is LlmErrorCode.LENGTH_LIMIT
    said = str(error)
    assert "3 parts of up to 1200 tokens each" in said and "HIGH tier" in said
    assert "(now 1200)" in said and "narrow the request" in said and "ran away" not in said
    sized = str(cut_failure(call(fake_openai), cut, "document"))
    assert "300 tokens each" in sized and "the room follows the length asked" in sized
    looped = cut.model_copy(update={"text": LOOP})
    assert cut_failure(call(fake_openai), looped).code is LlmErrorCode.RUNAWAY
