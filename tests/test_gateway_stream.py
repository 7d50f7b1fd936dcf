"""A text answer read as a stream and stopped where it starts writing itself again: the rule
(pure, on generated texts) and the call through litellm and a real loopback server."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from multiverse.gateway import Gateway, LlmCache
from multiverse.gateway.calls import LlmCall, RetryPolicy
from multiverse.gateway.stream import ENOUGH_FINISH, REPEAT_FINISH, enough_at, repeating_from

from fake_openai import FakeOpenAI, length_cut, text

RUN = "run-20261127-000000-003"
EVIDENCE = (
    "- **Source:** `assets/economics.csv`: 574 monthly rows of US economic series, from "
    "1967-07 to 2015-04.\n\n"
    "- **Source:** `assets/economics.md`: the description of the series and their units.\n\n"
)
WORDS = ("revenue", "growth", "market", "Germany", "France", "units", "margin", "quarter",
         "매출", "성장", "시장", "分析")  # fmt: skip


def paragraph(rng: random.Random) -> str:
    """A paragraph of 8-20 random words with a figure: never the same twice by chance."""
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 20))]
    return " ".join(words) + f" {rng.randint(10, 99_999):,}."


@pytest.mark.parametrize("seed", range(10))
def test_a_text_that_writes_its_paragraphs_again_is_stopped_before_them(seed: int) -> None:
    """Generated documents: the first of two repeated paragraphs in a row (and the headings
    right before it) is where the text stops; what came before is kept whole."""
    rng = random.Random(seed)
    head = [f"## Part {n}\n\n{paragraph(rng)}\n\n{paragraph(rng)}\n\n" for n in range(4)]
    written = "# Title\n\n" + "".join(head)
    looped = written + "## Claim 2\n\n### Evidence\n\n" + "".join(head[1:3]) + paragraph(rng)
    assert repeating_from(looped) == len(written)
    assert repeating_from(written) is None


@pytest.mark.parametrize("seed", range(10))
def test_a_single_repeat_short_lines_and_headings_do_not_stop_a_text(seed: int) -> None:
    """One paragraph said again between new ones, a heading or a short line said many times:
    writing, not a loop."""
    rng = random.Random(seed)
    first = paragraph(rng)
    text_ = f"# Memo\n\n{first}\n\n{paragraph(rng)}\n\n{first}\n\n{paragraph(rng)}\n\n"
    text_ += "".join(f"### Evidence\n\n- none\n\n{paragraph(rng)}\n\n" for _ in range(5))
    assert repeating_from(text_) is None


def call(server: FakeOpenAI, **changes: object) -> LlmCall:
    """A keyless text call to the fake server that stops repeats, charged to RUN."""
    fields: dict[str, object] = {
        "role": "executor", "agent_version": "1", "prompt_version": "p", "scope": "s",
        "run_id": RUN, "model": "openai/local-model", "api_base": server.base_url,
        "messages": [{"role": "user", "content": "Refine the content."}],
        "max_tokens": 1200, "stop_repeats": True,
    }  # fmt: skip
    return LlmCall.model_validate({**fields, **changes})


def gateway(tmp_path: Path) -> Gateway:
    """A gateway charging runs under tmp_path/runs, with a disk cache."""
    return Gateway(
        runs_root=tmp_path / "runs", cache=LlmCache(tmp_path / "cache"),
        retry=RetryPolicy(max_attempts=1), sleep=lambda _: None,
    )  # fmt: skip


def test_a_looping_answer_is_stopped_where_it_repeats(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """The local model's loop (the same evidence under every claim, until its limit): read as a
    stream, the answer keeps its first claim whole and says `repeat`, never `length`; its usage
    is counted from what was written."""
    first = "# Refine the content\n\n## Claim 1: Spending since 1967\n\n" + EVIDENCE
    looped = first + "".join(f"## Claim {n}: More\n\n### Evidence\n\n{EVIDENCE}"
                             for n in range(2, 30))  # fmt: skip
    fake_openai.script(length_cut(looped, completion_tokens=1200))
    answer = gateway(tmp_path).complete(call(fake_openai))
    assert answer.finish_reason == REPEAT_FINISH
    assert answer.text == first.rstrip() + "\n"
    assert fake_openai.requests[0]["stream"] is True
    assert 0 < answer.completion_tokens < 1200 and answer.prompt_tokens > 0
    usage = json.loads((tmp_path / "runs" / RUN / "usage.json").read_text())
    assert usage["calls"] == 1 and usage["completion_tokens"] == answer.completion_tokens


def test_a_streamed_answer_keeps_the_providers_usage_and_cache_report(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """An answer read whole from the stream: its text, finish, the provider's token counts and
    the prompt tokens its cache served (the usage's details, as OpenAI and llama-server send)."""
    fake_openai.script(text(EVIDENCE, prompt_tokens=900, completion_tokens=40, cached_tokens=700))
    answer = gateway(tmp_path).complete(call(fake_openai))
    assert (answer.text, answer.finish_reason) == (EVIDENCE, "stop")
    assert (answer.prompt_tokens, answer.completion_tokens, answer.cached_tokens) == (900, 40, 700)


def test_a_tool_call_or_a_schema_is_never_streamed(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """Only a plain text answer is read as a stream."""
    fake_openai.script(text('{"a": 1}'))
    gateway(tmp_path).complete(call(fake_openai, json_mode=True))
    assert "stream" not in fake_openai.requests[0]


@pytest.mark.parametrize("seed", range(8))
def test_a_text_is_closed_at_the_first_paragraph_end_past_its_words(seed: int) -> None:
    """Generated texts: the cut is the end of the first finished paragraph at which the words
    (headings aside) reach the limit; before it, nothing is cut."""
    rng = random.Random(seed)
    blocks = [f"## Part {n}\n\n{paragraph(rng)}" for n in range(12)]
    text_ = "# Title\n\n" + "\n\n".join(blocks) + "\n\n"
    limit = rng.randint(30, 120)
    # As the stream reads it: checked at each line's end, the first answer is the cut.
    ends = [at + 1 for at, char in enumerate(text_) if char == "\n"]
    cut = next(found for end in ends if (found := enough_at(text_[:end], limit)) is not None)
    kept = [line for line in text_[:cut].splitlines() if not line.startswith("#")]
    words = sum(len(line.split()) for line in kept)
    assert words >= limit and text_[cut : cut + 2] == "\n\n"
    last = text_[:cut].rsplit("\n\n", 1)[-1]
    assert words - len(last.split()) < limit or last.startswith("#")
    assert all(enough_at(text_[:end], 10_000) is None for end in ends)


def test_a_long_answer_stops_at_a_paragraph_end_past_the_words_asked(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """A model that writes far past the length asked (the local model wrote 1,800 tokens for a
    210-word analysis, cut three times at its limit): the stream is closed at the first
    paragraph's end past the words, finish `enough`, never `length`."""
    rng = random.Random(3)
    paragraphs = [paragraph(rng) for _ in range(40)]
    fake_openai.script(length_cut("\n\n".join(paragraphs), completion_tokens=1200))
    answer = gateway(tmp_path).complete(call(fake_openai, stop_at_words=60))
    assert answer.finish_reason == ENOUGH_FINISH
    written = answer.text.split()
    assert 60 <= len(written) < 60 + 25 and answer.text.rstrip().endswith(".")
