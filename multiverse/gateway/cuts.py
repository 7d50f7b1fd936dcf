"""What an answer cut by the length limit becomes (pure): a loop is told from a long honest
answer; a text answer is continued where it stopped and its parts joined; an answer that cannot
be given the room it needs fails with a message that names the size and what to change.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from multiverse.gateway.calls import ChatMessage, LlmAnswer, LlmCall, LlmError, LlmErrorCode

TAIL = 2000
MIN_SPAN = 240
MIN_REPEATS = 4
# Prose and JSON compress to ~30-50 % with zlib; a loop to a few percent.
LOOP_RATIO = 0.12

# The user turn after the partial answer. The partial text goes back as the assistant's turn
# and is followed by a user turn, the form every OpenAI-compatible server accepts (a trailing
# assistant message as a prefill is honoured only by some servers and versions).
CONTINUE_NOTE = (
    "Your answer above was cut by the length limit. Continue exactly where you stopped: write "
    "only the rest, starting with the next word (or the rest of the word that was cut). Do not "
    "repeat anything already written, do not start over, no preamble, no code fence."
)
# Only an overlap at least this long is a repeated seam; a shorter one may be chance.
MIN_SEAM = 6
MAX_SEAM = 1500


def exact_loop(text: str) -> str | None:
    """The chunk repeated at least MIN_REPEATS times back to back at the end of `text`, if any."""
    tail = text.rstrip()[-TAIL:]
    for period in range(1, len(tail) // MIN_REPEATS + 1):
        chunk = tail[-period:]
        repeats = 1
        while tail.endswith(chunk * (repeats + 1)):
            repeats += 1
        if repeats >= MIN_REPEATS and repeats * period >= MIN_SPAN:
            return chunk
    return None


def repetition(text: str) -> str | None:
    """Why the end of `text` is a loop rather than writing, or None."""
    chunk = exact_loop(text)
    if chunk is not None:
        shown = " ".join(chunk.split())[:80]
        return f"it repeats {shown!r} over and over"
    tail = text.rstrip()[-TAIL:].encode("utf-8")
    if len(tail) >= TAIL:
        ratio = len(zlib.compress(tail, 9)) / len(tail)
        if ratio < LOOP_RATIO:
            return f"its last {TAIL} characters repeat one pattern (compressed to {ratio:.0%})"
    return None


def continuable(call: LlmCall, answer: LlmAnswer, parts: int) -> bool:
    """Whether a text answer cut by the limit may be continued once more (not a loop)."""
    return (
        answer.finish_reason == "length"
        and parts <= call.continuations
        and call.process is None
        and not call.json_mode
        and not answer.tool_calls
        and bool(answer.text.strip())
    )


def continuation_messages(messages: Sequence[ChatMessage], written: str) -> list[ChatMessage]:
    """The call's messages, then what was written so far, then the request to go on."""
    return [
        *messages,
        {"role": "assistant", "content": written},
        {"role": "user", "content": CONTINUE_NOTE},
    ]


def join_parts(written: str, more: str) -> str:
    """`more` appended to `written`, without the text a model repeats at the seam."""
    # A model that goes on often restarts the line, or the words, it was in: the longest start
    # of `more` that `written` ends with, from a word's start, is dropped. A short one counts
    # only as whole words or a whole line: "by 1" then "15 %" is a number going on.
    for size in range(min(len(more), len(written), MAX_SEAM), 0, -1):
        before, after = written[:-size], more[size : size + 1]
        at_word = not before or before[-1].isspace() or more[0].isspace()
        if not at_word or not written.endswith(more[:size]):
            continue
        whole = not after.isalnum() or not before or before.endswith("\n")
        if size >= MIN_SEAM or whole:
            return written + more[size:]
    return written + more


def joined(parts: Sequence[LlmAnswer], text: str) -> LlmAnswer:
    """One answer from the answers of a continued call: their text joined, their usage summed."""
    last = parts[-1]
    return last.model_copy(
        update={
            "text": text,
            "tool_calls": [],
            "prompt_tokens": sum(p.prompt_tokens for p in parts),
            "cached_tokens": sum(p.cached_tokens for p in parts),
            "completion_tokens": sum(p.completion_tokens for p in parts),
            "cost_usd": sum(p.cost_usd for p in parts),
            "latency_ms": sum(p.latency_ms for p in parts),
            "attempts": sum(p.attempts for p in parts),
            "parts": sum(p.parts for p in parts),
            "constrained": parts[0].constrained,
        }
    )


def more_room(call: LlmCall) -> int | None:
    """max_tokens for asking a cut answer again: all the tier allows (no ceiling known: twice
    the call's); None when that is no more than the call had."""
    room = call.tier_max_tokens if call.tier_max_tokens is not None else 2 * call.max_tokens
    return room if room > call.max_tokens else None


def cut_failure(call: LlmCall, answer: LlmAnswer, what: str = "answer") -> LlmError:
    """The error of an answer still cut by the limit: a loop is a RUNAWAY; anything else did
    not fit, and the message says in how much room and what to change."""
    loop = repetition(answer.text)
    if loop is not None:
        return LlmError(
            LlmErrorCode.RUNAWAY,
            f"{call.model} looped instead of finishing its {what}: {loop}; the step is stopped",
        )
    if answer.parts > 1:
        size = f"{answer.parts} parts of up to {call.max_tokens} tokens each"
    elif not answer.text.strip():
        # The gateway asks an empty cut answer once more with twice the room.
        size = f"{2 * call.max_tokens} tokens"
    else:
        size = f"{call.max_tokens} tokens"
    wrote = "had no text" if not answer.text.strip() else "was still unfinished"
    ceiling = call.tier_max_tokens
    if ceiling is not None and call.max_tokens < ceiling:
        # The caller sized the room to the length asked: the tier's setting is not what cut it.
        fix = "the room follows the length asked: ask for less, or narrow the request"
    else:
        fix = (
            f"raise max_tokens of the {call.tier} tier in runtime-mapping.yaml (now "
            f"{ceiling or call.max_tokens}), or narrow the request"
        )
    return LlmError(
        LlmErrorCode.LENGTH_LIMIT,
        f"the {what} written by {call.model} {wrote} after {size} (cut at the length limit); "
        f"{fix}",
    )
