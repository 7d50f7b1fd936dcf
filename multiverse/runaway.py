"""Telling a generation that ran away (a loop of repeated text) from a long honest answer.

Small models at low temperature fall into loops: the same line, list item or JSON fragment
again and again until the token limit cuts them. Pure functions on the answer's text.
"""

from __future__ import annotations

import zlib

TAIL = 2000
MIN_SPAN = 240
MIN_REPEATS = 4
# Prose and JSON compress to ~30-50 % with zlib; a loop to a few percent.
LOOP_RATIO = 0.12


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
