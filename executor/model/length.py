"""The length a person asks for, read from their instructions, and the tokens it needs.

"two pages" is about 900 words, "one page" about 450, "500 words" is 500. The writing call's
max_tokens follows from it (about 1.6 tokens a word), so a small model is neither starved nor
given room to ramble until the limit cuts it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

WORDS_PER_PAGE = 450
TOKENS_PER_WORD = 1.6
MIN_WRITING_TOKENS = 600
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "single": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "한": 1, "두": 2, "세": 3, "네": 4, "다섯": 5,
}  # fmt: skip
_COUNT = r"(?<![\w.])(\d+(?:\.\d+)?|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + r")"
_PAGES = re.compile(_COUNT + r"[\s-]*(?:pages?|페이지|쪽)(?![a-z])", re.I)
_HALF_PAGE = re.compile(r"\bhalf[\s-]+(?:a[\s-]+)?page\b|반\s*페이지", re.I)
_WORDS = re.compile(r"(\d[\d,]*)(?:\s*(?:-|–|to|~)\s*(\d[\d,]*))?[\s-]*(?:words?\b|단어)", re.I)


def _number(raw: str) -> float:
    word = raw.lower()
    return float(NUMBERS[word]) if word in NUMBERS else float(raw.replace(",", ""))


def asked_words(texts: Iterable[str]) -> int | None:
    """The longest length the texts ask for, in words; None when none says a length."""
    found: list[float] = []
    for text in texts:
        for match in _WORDS.finditer(text):
            # A range ("300-500 words") may use its upper end.
            found.append(_number(match.group(2) or match.group(1)))
        if _HALF_PAGE.search(text):
            found.append(WORDS_PER_PAGE / 2)
            text = _HALF_PAGE.sub(" ", text)  # its "a page" is not one page
        for match in _PAGES.finditer(text):
            found.append(_number(match.group(1)) * WORDS_PER_PAGE)
    words = [value for value in found if value > 0]
    return round(max(words)) if words else None


def writing_tokens(words: int | None, tier_max: int) -> int:
    """max_tokens of the writing call: about 1.6 tokens a word, at least 600, at most the tier's."""
    if words is None:
        return tier_max
    return min(tier_max, max(MIN_WRITING_TOKENS, round(words * TOKENS_PER_WORD)))


def describe_length(words: int | None) -> str:
    """The length as the prompt states it."""
    if words is None:
        return "No length is asked: be complete but concise; no padding, no repetition."
    return (
        f"About {words} words (at most {round(words * 1.15)}). Stop when the document is "
        "complete; never repeat a section to fill the length."
    )
