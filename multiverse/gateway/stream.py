"""A text answer read as the model writes it, and closed where it starts writing again what it
already wrote: a small model's loop (the same evidence under every claim, a whole document
again) would otherwise run to its token limit, minutes of a slow model's time for text that
is thrown away, and leave an answer cut at its limit. Given the words asked, it is also closed
at the first paragraph's end past them (a line's end, well past them, in a block that has none):
sized to what was asked, not cut mid-sentence. Given the rows a table may have, it is closed
at the end of the last row allowed: a working text states the facts computed from a table and
copies none out (the local model copied a 141-row table until its limit cut the text).

Only whole paragraphs count: two paragraphs in a row that each repeat an earlier one of the
answer (a heading or a short line, like "- none", may recur in its own right). The answer
keeps what came before them; its finish reason says `repeat` (or `enough`). The provider sends
no usage for a stream closed early: its usage is what litellm counts of its messages and text,
or, from a llama-server asked for its `timings` in every chunk, the server's own counts and
cache report (`cache_n`). The cache report of a whole stream is its usage's
`prompt_tokens_details` (OpenAI, and llama-server's builds that send it) or its `timings`.

What an answer cut by the length limit becomes (pure): a loop is told from a long honest
answer; a text answer is continued where it stopped and its parts joined; an answer that cannot
be given the room it needs fails with a message that names the size and what to change.

A document answered whole is taken out of the one markdown fence (or the preamble) a model
wraps it in (`unwrap_document`).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from itertools import takewhile
from types import ModuleType
from typing import Any

from multiverse.gateway.calls import ChatMessage, LlmAnswer, LlmCall, LlmError, LlmErrorCode

# A paragraph this long said twice is a repeat, not an emphasis; a Hangul or CJK character
# counts twice, as it says more.
REPEAT_CHARS = 40
REPEATS_IN_A_ROW = 2
REPEAT_FINISH = "repeat"
ENOUGH_FINISH = "enough"  # closed at a paragraph's end once the words asked were written
TABLE_FINISH = "table"  # closed at the end of a table's last row allowed
LINE_SHARE = 1.3  # past this share of the words, a line's end will do
_HEADING = re.compile(r"^(#{1,6})\s")
_BLANK = re.compile(r"\n[ \t]*\n")
_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")  # a table's "|---|---|"


def paragraphs(text: str) -> list[list[str]]:
    """A text's paragraphs (blocks between blank lines), each as its lines below the headings
    that open it (a small model writes a heading and its text with no blank line between);
    a block of headings alone is an empty list."""
    found = []
    for block in _BLANK.split(text.strip()):
        lines = block.strip().splitlines()
        while lines and _HEADING.match(lines[0].lstrip()):
            lines = lines[1:]
        found.append(lines)
    return found


def paragraph_key(block: str) -> str | None:
    """What a paragraph says, spaces and case aside, below the headings that open it; None for
    headings alone or a short line."""
    lines = paragraphs(block)[0] if block.strip() else []
    key = " ".join(" ".join(lines).split()).casefold()
    size = sum(1 if char.isascii() else 2 for char in key)
    return None if size < REPEAT_CHARS else key


def repeating_from(text: str) -> int | None:
    """Where `text` starts writing again what it wrote: the start of the first of
    REPEATS_IN_A_ROW finished paragraphs in a row that each repeat an earlier one (with the
    headings right before them); None when it does not."""
    seen: set[str] = set()
    start, run, headings = 0, 0, None
    run_start = 0
    for found in _BLANK.finditer(text):
        block, begin = text[start : found.start()], start
        start = found.end()
        if not block.strip():
            continue
        key = paragraph_key(block)
        if key is None:
            # Headings right before a repeat go with it; a short line in between does not.
            heading = _HEADING.match(block.lstrip()) is not None
            headings = (begin if headings is None else headings) if heading else None
            continue
        if key in seen:
            if run == 0:
                run_start = headings if headings is not None else begin
            run += 1
            if run >= REPEATS_IN_A_ROW:
                return run_start
        else:
            run = 0
        seen.add(key)
        headings = None
    return None


def enough_at(text: str, words: int) -> int | None:
    """The end of the last finished paragraph of `text` once its words (headings aside) reach
    `words`; failing that, of its last finished line once they reach LINE_SHARE times them (a
    table or a list written as one block has no paragraph end: the local model wrote a
    year-by-year table until its limit cut it, three times); None before."""
    end = text.rfind("\n\n")
    if end >= 0 and _said(text[:end]) >= words:
        return end
    line = text.rfind("\n")
    return line if line > 0 and _said(text[:line]) >= LINE_SHARE * words else None


def table_cut_at(text: str, rows: int) -> int | None:
    """The end of the `rows`-th body row of the markdown table `text` ends in, once its finished
    lines hold more body rows than that (its header and the rule under it aside); None before."""
    finished = text[: text.rfind("\n") + 1]
    lines = reversed(finished.splitlines(keepends=True))
    table = list(takewhile(lambda line: line.lstrip().startswith("|"), lines))[::-1]
    body = [index for index, line in enumerate(table) if not _RULE.match(line)][1:]
    if len(body) <= rows:
        return None
    start = len(finished) - sum(len(line) for line in table)
    return start + sum(len(line) for line in table[: body[rows]]) - 1


def _said(text: str) -> int:
    """The words of `text`, headings aside."""
    return sum(len(line.split()) for line in text.splitlines()
               if not _HEADING.match(line.lstrip()))  # fmt: skip


def without_repeats(text: str) -> str:
    """The document without the paragraphs it already said (`paragraph_key`: short lines, like
    "- none", may recur in their own right), and without a heading left with nothing under it:
    a small model that continues a cut text often starts a section again."""
    seen: set[str] = set()
    kept: list[str] = []
    for block in _BLANK.split(text.strip()):
        key = paragraph_key(block)
        if key is not None and key in seen:
            continue
        if key is not None:
            seen.add(key)
        kept.append(block)
    shown = [block for index, block in enumerate(kept)
             if index == 0 or not _empty_heading(block, kept[index + 1 : index + 2])]  # fmt: skip
    return "\n\n".join(shown) + "\n"


def _empty_heading(block: str, following: list[str]) -> bool:
    """Whether `block` is a heading with nothing under it before a heading of its level (a
    block that goes on below its heading line, "### Germany" then "- Revenue: 1,585", has
    its content)."""
    level = _HEADING.match(block)
    if level is None or "\n" in block.strip():
        return False
    if not following:
        return True
    below = _HEADING.match(following[0])
    return below is not None and len(below.group(1)) <= len(level.group(1))


def streamed(
    litellm: ModuleType, kwargs: dict[str, Any], words: int | None = None,
    rows: int | None = None,
) -> Any:  # fmt: skip
    """The provider's answer read as a stream, closed where it starts repeating itself (finish
    reason `repeat`), given `words` at the first paragraph's end past them (`enough`: the
    length asked, reached at a paragraph's end rather than cut mid-sentence at the token
    limit), given `rows` at the end of a table's last row allowed (`table`); the response as
    a whole call returns it. Raises what the provider raises."""
    stream = litellm.completion(**kwargs, stream=True, stream_options={"include_usage": True})
    chunks: list[Any] = []
    text, cut, finish = "", None, ""
    timings: dict[str, Any] | None = None  # llama-server's, per chunk when asked for them
    try:
        for chunk in stream:
            chunks.append(chunk)
            if isinstance(getattr(chunk, "timings", None), dict):
                timings = chunk.timings
            choices = getattr(chunk, "choices", None) or []
            piece = getattr(choices[0].delta, "content", None) if choices else None
            if not piece:
                continue
            text += piece
            # A paragraph ends only where a line does: the check runs once per line.
            if "\n" in piece:
                cut, finish = closing_at(text, words, rows)
                if cut is not None:
                    break
    finally:
        stream.close()  # stopped early, this closes the connection: the server stops writing
    response = litellm.stream_chunk_builder(chunks, messages=kwargs.get("messages"))
    if response is None:
        raise ValueError(f"the stream of {kwargs.get('model')} held no answer")
    if timings is not None:
        response.timings = timings  # the cache report (`cache_n`) of the prompt, stopped or not
    if cut is not None:
        choice = response.choices[0]
        choice.message.content = text[:cut].rstrip() + "\n"
        choice.finish_reason = finish
        if timings is not None and getattr(response, "usage", None) is not None:
            # The server's own counts, where litellm could only estimate the prompt's.
            response.usage.prompt_tokens = _count(timings, "prompt_n") + _count(timings, "cache_n")
            response.usage.completion_tokens = _count(timings, "predicted_n")
    return response


def closing_at(text: str, words: int | None, rows: int | None) -> tuple[int | None, str]:
    """Where a streamed text is closed, and its finish reason: at a repeat, else past the
    `words`, else past a table's `rows`; (None, "") while it goes on."""
    cut = repeating_from(text)
    if cut is not None:
        return cut, REPEAT_FINISH
    cut = None if words is None else enough_at(text, words)
    if cut is not None:
        return cut, ENOUGH_FINISH
    cut = None if rows is None else table_cut_at(text, rows)
    if cut is not None:
        return cut, TABLE_FINISH
    return None, ""


def _count(timings: dict[str, Any], key: str) -> int:
    value = timings.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


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


# -- a document answered whole ---------------------------------------------------------
_FENCE = re.compile(r"^[ \t]*(`{3,})[ \t]*([^`\s]*)[^`]*$")
MARKDOWN_TAGS = ("", "markdown", "md")
# Text outside a single markdown block that is still only a preamble ("Here is the memo:").
MAX_PREAMBLE = 200


def _closing(lines: list[str], start: int) -> int | None:
    """The line closing the fence opened at `start`: fences with a language open, bare ones
    close, so code blocks inside a wrapped document are stepped over."""
    depth = 0
    for index in range(start, len(lines)):
        fence = _FENCE.match(lines[index])
        if fence is None:
            continue
        depth += 1 if fence.group(2) or index == start else -1
        if depth == 0:
            return index
    return None


def _block(lines: list[str], start: int) -> tuple[str, int] | None:
    """The body of a markdown-tagged (or bare) block opened at `start`, and its closing line."""
    fence = _FENCE.match(lines[start])
    if fence is None or fence.group(2).lower() not in MARKDOWN_TAGS:
        return None
    end = _closing(lines, start)
    if end is None:
        return None
    return "\n".join(lines[start + 1 : end]).strip("\n") + "\n", end


def unwrap_document(answer: str) -> str:
    """The document in a model's answer: one wrapping markdown fence (or a preamble) removed."""
    lines = answer.strip().splitlines()
    whole = _block(lines, 0) if lines else None
    if whole is not None and whole[1] == len(lines) - 1:
        return whole[0]
    opening = _FENCE.match(lines[0]) if lines else None
    if opening is not None and opening.group(2).lower() in ("markdown", "md") and whole is None:
        # A fence opened and never closed: the document is what follows it.
        return "\n".join(lines[1:]).strip("\n") + "\n"
    for start, line in enumerate(lines):
        fence = _FENCE.match(line)
        if fence is None or fence.group(2).lower() not in ("markdown", "md"):
            continue
        block = _block(lines, start)
        if block is not None:
            outside = "\n".join(lines[:start] + lines[block[1] + 1 :])
            if len(outside.strip()) <= MAX_PREAMBLE:
                return block[0]
        break
    return answer.strip("\n") + "\n"
