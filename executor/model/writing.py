"""Pure decisions about a document a model wrote as its whole answer.

Models like to wrap a document in a ```markdown fence, sometimes after a line of preamble; the
file gets the document, not the wrapping. An answer cut by the length limit is either a loop
(stopped: RUNAWAY) or an honest answer that was too long (asked once more, shorter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from multiverse.runaway import repetition

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


@dataclass(frozen=True)
class Cut:
    """What to do with an answer the length limit cut: stop it (`runaway`) or ask again."""

    runaway: str | None


def judge_cut(text: str, cut_before: bool, max_tokens: int) -> Cut:
    """A loop, an empty answer (the gateway already gave it twice the room) or a second cut
    is a runaway; a first honest cut may be asked again."""
    loop = repetition(text)
    if loop is not None:
        return Cut(runaway=loop)
    if not text.strip():
        return Cut(runaway=f"it wrote nothing before the length limit, even with twice the "
                           f"room ({2 * max_tokens} tokens)")  # fmt: skip
    if cut_before:
        return Cut(runaway=f"the length limit cut it twice (last at {max_tokens} tokens)")
    return Cut(runaway=None)


def retry_note(max_tokens: int) -> str:
    """What the model is told when its answer was cut."""
    return (
        f"Your previous answer was cut at {max_tokens} tokens, before it was complete. Write "
        "it complete and shorter: the whole document, within the length asked, no repetition."
    )
