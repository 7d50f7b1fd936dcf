"""Fitting references into a context window: token estimates and fair shares (pure).

No tokenizer is loaded: about 3 characters a token for ASCII text (a safe side of English's ~4)
and one a token for other scripts (Korean, Chinese), so a prompt is never sized too small.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

ASCII_CHARS_PER_TOKEN = 3
# Slack for the chat template's own tokens and the estimate's error.
MARGIN_TOKENS = 128


def estimate_tokens(text: str) -> int:
    """About how many tokens `text` is."""
    ascii_chars = sum(1 for char in text if ord(char) < 128)
    return math.ceil(ascii_chars / ASCII_CHARS_PER_TOKEN) + (len(text) - ascii_chars)


def room_for_references(window: int, answer_tokens: int, prompt_tokens: int) -> int:
    """Tokens left for the references: the window less the answer, the prompt and a margin."""
    return max(0, window - answer_tokens - prompt_tokens - MARGIN_TOKENS)


def fair_caps(sizes: Sequence[int], budget: int) -> list[int]:
    """Each item's share of `budget`: small items whole, the rest cut to one equal cap."""
    if sum(sizes) <= budget:
        return list(sizes)
    caps = [0] * len(sizes)
    left = budget
    order = sorted(range(len(sizes)), key=lambda index: sizes[index])
    for position, index in enumerate(order):
        share = left // (len(order) - position)
        caps[index] = min(sizes[index], share)
        left -= caps[index]
    return caps


def cut_to_tokens(text: str, tokens: int) -> str:
    """The longest start of `text` estimated at most `tokens`, ending at a line if one is near."""
    if estimate_tokens(text) <= tokens:
        return text
    low, high = 0, len(text)
    while low < high:  # the estimate grows with the length: bisect for the longest fit
        middle = (low + high + 1) // 2
        if estimate_tokens(text[:middle]) <= tokens:
            low = middle
        else:
            high = middle - 1
    head = text[:low]
    line_end = head.rfind("\n")
    # A cut mid-line loses little; a cut far back would waste the share.
    return head[: line_end + 1] if line_end >= low * 0.8 else head
