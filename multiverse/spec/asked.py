"""What a text says of the work's length and language, read the same by every role.

A person's instructions, a task a model planned and a proposal all say a length ("two pages",
"300 words", "한 페이지") or a language ("in Korean", "영어로") in a few fixed shapes; these are
the shapes, in English and Korean. A page is about 500 words, as the spec and the proposal count it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

WORDS_PER_PAGE = 500  # a printed page of prose, as most style guides count it
# When no length is asked: a page for a short kind of deliverable, two pages for any other. The
# proposal promises it, the offline brief and the model's deliverable are sized to it, and the
# Planner plans a deliverable this short by code.
DEFAULT_WORDS = 2 * WORDS_PER_PAGE
SHORT_KINDS = frozenset({"note", "brief", "briefing", "summary", "overview", "answer"})
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "single": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "한": 1, "두": 2, "세": 3, "네": 4, "다섯": 5,
}  # fmt: skip
_COUNT = r"(?<![\w.])(\d+(?:\.\d+)?|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + r")"
_PAGES = re.compile(_COUNT + r"[\s-]*(?:pages?|페이지|쪽)(?![a-z])", re.I)
_HALF_PAGE = re.compile(r"\bhalf[\s-]+(?:a[\s-]+)?page\b|반\s*페이지", re.I)
_WORDS = re.compile(r"(\d[\d,]*)(?:\s*(?:-|–|to|~)\s*(\d[\d,]*))?[\s-]*(?:words?\b|단어)", re.I)


def default_words(deliverable: str) -> int:
    """The words of a deliverable of this kind when no length is asked."""
    return WORDS_PER_PAGE if deliverable in SHORT_KINDS else DEFAULT_WORDS


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


# Language names a text may ask for, in English and in Korean, with their ISO 639-1 codes.
LANGUAGES = {
    "en": ("English", "영어", "영문"), "ko": ("Korean", "한국어", "국문", "한글"),
    "ja": ("Japanese", "일본어"), "zh": ("Chinese", "Mandarin", "중국어"),
    "fr": ("French", "프랑스어"), "de": ("German", "독일어"), "es": ("Spanish", "스페인어"),
    "it": ("Italian", "이탈리아어"), "pt": ("Portuguese", "포르투갈어"),
    "ru": ("Russian", "러시아어"),
    "vi": ("Vietnamese", "베트남어"), "ar": ("Arabic", "아랍어"), "hi": ("Hindi", "힌디어"),
    "nl": ("Dutch", "네덜란드어"), "id": ("Indonesian", "인도네시아어"), "th": ("Thai", "태국어"),
}  # fmt: skip
_CODE = {name.casefold(): code for code, names in LANGUAGES.items() for name in names}
_ENGLISH = "|".join(n for names in LANGUAGES.values() for n in names if n.isascii())
_KOREAN = "|".join(n for names in LANGUAGES.values() for n in names if not n.isascii())
# "in Korean", "into English", "written in French": the language of the text itself, so the
# name must end the phrase ("in Korean cities" names no language to write in).
_ASKED_EN = re.compile(
    rf"\b(?:in|into)\s+(?:the\s+)?({_ENGLISH})(?:\s+language)?"
    rf"(?=\s*(?:[.,;:!?)]|$|\s+(?:only|please|text|prose|throughout)\b))",
    re.I,
)
_ASKED_KO = re.compile(rf"({_KOREAN})(?:로|으로)(?:\s|$|[.,])")


def languages_asked(text: str) -> set[str]:
    """The ISO codes of the languages a text asks the writing to be in ("in Korean", "영어로")."""
    found = {_CODE[m.group(1).casefold()] for m in _ASKED_EN.finditer(text)}
    return found | {_CODE[m.group(1)] for m in _ASKED_KO.finditer(text)}
