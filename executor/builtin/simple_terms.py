"""The words a simple request names things by, and whether a text holds them.

Pure functions. A request's terms are its content words (`text.terms`: stop words dropped,
Korean particles cut) without the words that only say what to do ("summarise", "표로") or
what kind of thing it is ("file", "문서"), plus the years it names. English words match by a
shared stem ("chargers" ~ "charging"); a Korean word matches where it stands inside a longer
word ("배터리" in "배터리를"), since Korean attaches its particles.
"""

from __future__ import annotations

import re

from executor.builtin.text import ENGLISH_STOPWORDS, is_hangul, terms
from multiverse.asks import SYNONYMS

# Words that say what to do or what kind of thing is meant, not which thing.
_COMMAND_WORDS = """summarise summarize summary summarising summarizing convert converting
    show list count table tables markdown csv tsv file files document documents doc docs
    asset assets folder give tell please want need what's who's where's which talk talks
    talking say says said mention mentions mentioned contain contains find look fetch read
    quote exactly figure figures number numbers amount value total words word lines
    characters gist overview"""
COMMAND_WORDS = frozenset(_COMMAND_WORDS.split())
# Korean command stems and generic nouns; a term starting with one of these is dropped.
KOREAN_COMMANDS = (
    "요약", "보여", "알려", "변환", "정리", "목록", "찾아", "말해", "설명", "세어", "있어",
    "있나", "있는지", "해줘", "표로", "문서", "파일", "자료", "폴더", "내용", "무엇", "뭐",
    "어느", "어떤", "얼마", "마크다운", "수는", "수가", "수를", "개수", "몇",
)  # fmt: skip
# Korean question endings left on a word ("톤이야" → "톤", "규모인가요" → "규모").
_KOREAN_ENDINGS = ("인가요", "이에요", "인가", "이야", "예요", "에요", "이지", "이니", "야", "니")
_YEAR = re.compile(r"(?<!\d)(?:19|20)\d{2}(?!\d)")
_WORD = re.compile(r"[a-z0-9]+")
_ENGLISH_SUFFIXES = ("ings", "ing", "ers", "er", "ies", "es", "s", "ed")


def asked_terms(request: str) -> list[str]:
    """The terms a request names things by, in order, once each (years included)."""
    found: list[str] = []
    for term in terms(request):
        term = term.removesuffix("'s").strip("'")
        if is_hangul(term):
            term = next((term[: -len(e)] for e in _KOREAN_ENDINGS if term.endswith(e)), term)
            if len(term) >= 2 and not term.startswith(KOREAN_COMMANDS):
                found.append(term)
        elif term not in COMMAND_WORDS | ENGLISH_STOPWORDS and len(term) >= 3:
            found.append(term)
    found += _YEAR.findall(request)
    return list(dict.fromkeys(found))


def stem(word: str) -> str:
    """A crude English stem: a plural or verb ending cut ("chargers", "charging" → "charg")."""
    for suffix in _ENGLISH_SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def words_of(text: str) -> frozenset[str]:
    """The English word stems of a text (lower case), for `holds`."""
    return frozenset(stem(word) for word in _WORD.findall(text.casefold().replace("_", " ")))


def alternatives(term: str) -> frozenset[str]:
    """The term and the words meaning the same in a table's header ("매출" ~ "revenue")."""
    return SYNONYMS.get(term, frozenset()) | {term}


def holds(term: str, text: str, stems: frozenset[str] | None = None) -> bool:
    """Whether `text` names the term (`stems`: its `words_of`, when already known)."""
    if is_hangul(term) or _YEAR.fullmatch(term):
        return term in text
    wanted = stem(term)
    for word in stems if stems is not None else words_of(text):
        if word == wanted:
            return True
        if min(len(word), len(wanted)) >= 4 and (
            word.startswith(wanted) or wanted.startswith(word)
        ):
            return True
    return False
