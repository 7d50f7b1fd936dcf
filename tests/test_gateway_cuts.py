"""A text answer cut by the length limit, continued where it stopped, or read as a stream and
stopped before the limit (at a repeat, at the words asked): through litellm and a real loopback
server, and the rules (pure, on generated texts)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from multiverse.gateway import Gateway, LlmCache
from multiverse.gateway.calls import LlmAnswer, LlmCall, LlmErrorCode, RetryPolicy
from multiverse.gateway.stream import (
    CONTINUE_NOTE,
    ENOUGH_FINISH,
    LINE_SHARE,
    REPEAT_FINISH,
    TABLE_FINISH,
    closing_at,
    cut_failure,
    enough_at,
    join_parts,
    repeating_from,
    table_cut_at,
)

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


# -- a text answer read as a stream and stopped early (multiverse.gateway.stream) -------------


def streaming(server: FakeOpenAI, **changes: object) -> LlmCall:
    """A text call read as a stream that stops at repeats, with room for a long answer."""
    return call(server, 0, max_tokens=1200, tier_max_tokens=None, stop_repeats=True, **changes)


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
    answer = gateway(tmp_path).complete(streaming(fake_openai))
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
    answer = gateway(tmp_path).complete(streaming(fake_openai))
    assert (answer.text, answer.finish_reason) == (EVIDENCE, "stop")
    assert (answer.prompt_tokens, answer.completion_tokens, answer.cached_tokens) == (900, 40, 700)


def test_a_tool_call_or_a_schema_is_never_streamed(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """Only a plain text answer is read as a stream."""
    fake_openai.script(text('{"a": 1}'))
    gateway(tmp_path).complete(streaming(fake_openai, json_mode=True))
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


@pytest.mark.parametrize("seed", range(8))
def test_a_block_without_a_paragraph_end_is_closed_at_a_line_end_well_past_its_words(
    seed: int,
) -> None:
    """Generated tables and lists written as one block (a year-by-year table of a small model):
    no paragraph ends, so the cut is the first line's end at which the words reach LINE_SHARE
    times the limit; every line kept is whole, and nothing is cut before."""
    rng = random.Random(seed)
    if seed % 2:
        rows = [f"| {1860 + n} | {rng.randint(50, 199) / 10} | {rng.choice(WORDS)} |"
                for n in range(150)]  # fmt: skip
        block = "| Year | Rate | Note |\n|---|---|---|\n" + "\n".join(rows)
    else:
        block = "\n".join(f"- {paragraph(rng)}" for _ in range(60))
    text_ = f"## The data\n\n{block}\n"
    limit = rng.randint(40, 150)
    ends = [at + 1 for at, char in enumerate(text_) if char == "\n"]
    cut = next(found for end in ends if (found := enough_at(text_[:end], limit)) is not None)
    lines = text_[:cut].splitlines()
    said = sum(len(line.split()) for line in lines if not line.startswith("#"))
    assert said >= LINE_SHARE * limit and text_[cut] == "\n"
    assert said - len(lines[-1].split()) < LINE_SHARE * limit  # the first such line end
    assert all(line in text_.splitlines() for line in lines)  # whole lines only


def test_a_long_answer_stops_at_a_paragraph_end_past_the_words_asked(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """A model that writes far past the length asked (the local model wrote 1,800 tokens for a
    210-word analysis, cut three times at its limit): the stream is closed at the first
    paragraph's end past the words, finish `enough`, never `length`."""
    rng = random.Random(3)
    paragraphs = [paragraph(rng) for _ in range(40)]
    fake_openai.script(length_cut("\n\n".join(paragraphs), completion_tokens=1200))
    answer = gateway(tmp_path).complete(streaming(fake_openai, stop_at_words=60))
    assert answer.finish_reason == ENOUGH_FINISH
    written = answer.text.split()
    assert 60 <= len(written) < 60 + 25 and answer.text.rstrip().endswith(".")


def table(rng: random.Random, rows: int, rule: bool = True) -> tuple[str, list[str]]:
    """A markdown table of `rows` body rows with random columns, widths and alignment, and
    its body rows."""
    width = rng.randint(2, 5)
    pad = " " * rng.randint(0, 6)
    header = "| " + " | ".join(f"Col{n}{pad}" for n in range(width)) + " |"
    marks = [rng.choice(("---", ":---", "---:", ":---:", "-----------")) for _ in range(width)]
    body = ["| " + " | ".join(f"{rng.randint(1, 99_999) / 10}{pad}" if n else
                              f"{rng.choice(WORDS)} {1900 + index}" for n in range(width)) + " |"
            for index in range(rows)]  # fmt: skip
    lines = [header, *(["|" + "|".join(marks) + "|"] if rule else []), *body]
    return "\n".join(lines) + "\n", body


@pytest.mark.parametrize("seed", range(12))
def test_a_table_copied_out_is_closed_after_its_last_row_allowed(seed: int) -> None:
    """Generated tables (2-5 columns, padded or not, aligned, with or without the rule under
    the header), after prose and an earlier small table: read as the stream reads them, the cut
    is the end of the last body row allowed; only the table being written counts, and a table
    within its rows is never cut."""
    rng = random.Random(seed)
    limit = rng.randint(3, 20)
    small, _ = table(rng, rng.randint(1, limit))  # an earlier table within its rows
    big, rows = table(rng, limit + rng.randint(1, 60), rule=seed % 3 != 0)
    before = f"## Sources\n\n{paragraph(rng)}\n\n{small}\n{paragraph(rng)}\n\n"
    text_ = before + big + "\nThe rest of the analysis.\n"
    ends = [at + 1 for at, char in enumerate(text_) if char == "\n"]
    cut = next(found for end in ends if (found := table_cut_at(text_[:end], limit)) is not None)
    kept = text_[:cut]
    assert kept.endswith(rows[limit - 1]) and rows[limit] not in kept
    assert kept.startswith(before) and text_[cut] == "\n"
    assert all(table_cut_at(text_[:end], limit) is None for end in ends if end <= len(before))
    assert table_cut_at(before + big, limit + len(rows)) is None


def test_a_text_is_closed_at_a_repeat_first_then_its_words_then_a_tables_rows() -> None:
    """Each closing says why: a repeat before the words, the words before a table's rows; a text
    that needs none goes on, and says no reason."""
    rng = random.Random(1)
    looped = "\n\n".join([paragraph(rng)] * 3) + "\n\n"
    assert closing_at(looped, 1, 1)[1] == REPEAT_FINISH
    long_table, _ = table(rng, 40)
    wordy = f"{paragraph(rng)}\n\n{paragraph(rng)}\n\n{long_table}"
    assert closing_at(wordy, 5, 3)[1] == ENOUGH_FINISH
    assert closing_at(wordy, 10_000, 3)[1] == TABLE_FINISH
    assert closing_at(wordy, 10_000, 100) == (None, "")
    assert closing_at(wordy, None, None) == (None, "")


def test_a_table_copied_out_of_a_source_is_closed_at_its_rows_not_cut_at_the_limit(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """The local model copied a 141-row table into a working document until max_tokens cut
    it: read as a stream with the rows a table may have, the answer keeps the text before the
    table and the table's first rows whole, and says `table`, never `length`."""
    rng = random.Random(7)
    copied, rows = table(rng, 141)
    fake_openai.script(length_cut(f"# First analysis\n\n{paragraph(rng)}\n\n{copied}",
                                  completion_tokens=1200))  # fmt: skip
    answer = gateway(tmp_path).complete(streaming(fake_openai, stop_at_rows=15))
    assert answer.finish_reason == TABLE_FINISH
    assert answer.text.rstrip().endswith(rows[14]) and rows[15] not in answer.text
    assert answer.text.startswith("# First analysis")
