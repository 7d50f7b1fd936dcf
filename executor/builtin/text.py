"""Language helpers of the offline engine: inline markdown cleaning, sentences, content terms.

Pure functions over strings; English and Korean are both first-class.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_MARKERS = re.compile(r"\*\*|__|~~|`")
_EMPHASIS = re.compile(r"(?<![\w*])[*_](?=\S)(.+?)(?<=\S)[*_](?![\w*])")
_SPACES = re.compile(r"\s+")
# A boundary: Latin terminal punctuation followed by space, or a CJK stop (no space needed).
_BOUNDARY = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")
_ABBREVIATIONS = ("e.g.", "i.e.", "vs.", "etc.", "mr.", "mrs.", "dr.", "inc.", "co.", "no.", "u.s.")
_TERMINAL = re.compile(r"(?:[.!?。！？:]|[다요음임함됨])[\"')\]]*$")
_TOKEN = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]|[가-힣]+")
_HANGUL = re.compile(r"[가-힣]")


def _words(text: str) -> list[str]:
    return text.split()


ENGLISH_STOPWORDS = frozenset(
    _words(
        """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself just
    me more most my no nor not now of off on once only or other our ours out over own same she
    should so some such than that the their theirs them then there these they this those through
    to too under until up very was we were what when where which while who whom why will with
    would you your yours per via within across among including include includes included however
    whereas thus therefore new one two three four five year years make made many much may might
    must shall us it's let let's get got use used using well still yet already"""
    )
)
KOREAN_STOPWORDS = frozenset(
    _words(
        """및 등 이 그 저 것 수 있다 있는 있으며 있고 없다 하는 했다 한다 하며 하고 위해
        위한 대한 대해 통해 따라 또한 그리고 하지만 그러나 이다 이며 되었다 된다 되는 됐다
        우리 올해 지난해 년 월 일 약 더 중 가장 각 모든 전 후 내 간 때 경우 기준 관련 이후
        이번 해당 보다 매우 다른 같은 이상 이하 것으 것이다"""
    )
)
_JOSA = sorted(
    _words(
        """에서는 으로는 에게서 까지 부터 에서 으로 에게 보다 처럼 이나 이며 이고 에는
        와 과 은 는 이 가 을 를 의 에 로 도 만"""
    ),
    key=len,
    reverse=True,
)
_VERB_ENDINGS = sorted(
    _words("했다 한다 하는 하고 했으며 하며 해야 할 된다 되었다 됐다 되는 하여 했고 하였다")
    + _words("적 적인 적으로"),
    key=len,
    reverse=True,
)


def clean_inline(text: str) -> str:
    """Markdown inline markup removed: images, link targets, tags, emphasis markers."""
    text = _IMAGE.sub("", text)
    text = _LINK.sub(r"\1", text)
    text = _TAG.sub("", text)
    text = _MARKERS.sub("", text)
    text = _EMPHASIS.sub(r"\1", text)
    return _SPACES.sub(" ", text).strip()


def ends_sentence(line: str) -> bool:
    """Whether a line ends a sentence (so a following line starts a new one)."""
    return bool(_TERMINAL.search(line.rstrip()))


def split_sentences(paragraph: str) -> list[str]:
    """Sentences of one paragraph, split on . ! ? 。 and kept whole around abbreviations."""
    pieces = [p.strip() for p in _BOUNDARY.split(paragraph) if p and p.strip()]
    sentences: list[str] = []
    for piece in pieces:
        if sentences and sentences[-1].lower().endswith(_ABBREVIATIONS):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences


def is_hangul(text: str) -> bool:
    """Whether the text contains Korean letters."""
    return bool(_HANGUL.search(text))


def _korean_stem(word: str) -> str:
    for suffix in _JOSA + _VERB_ENDINGS:
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    """The meaningful terms of a text: lower-cased, stop words dropped, Korean particles cut."""
    found: list[str] = []
    for raw in _TOKEN.findall(text):
        if is_hangul(raw):
            word = _korean_stem(raw)
            if len(word) >= 2 and word not in KOREAN_STOPWORDS:
                found.append(word)
        else:
            word = raw.lower()
            if len(word) >= 3 and word not in ENGLISH_STOPWORDS:
                found.append(word)
    return found


def word_count(text: str) -> int:
    """Words as a person counts them: runs of letters or digits."""
    return len(re.findall(r"\w+", text))


def normalized(text: str) -> str:
    """A comparison key: lower case, letters and digits only, single spaces."""
    return " ".join(re.findall(r"\w+", text.lower()))


@functools.lru_cache(maxsize=4096)
def _token_set(text: str) -> frozenset[str]:
    return frozenset(normalized(text).split())


def similar(a: str, b: str, threshold: float = 0.8) -> bool:
    """Whether two sentences say nearly the same thing (token-set Jaccard)."""
    left, right = _token_set(a), _token_set(b)
    if not left or not right:
        return left == right
    return len(left & right) / len(left | right) >= threshold


def shorten(text: str, limit: int) -> str:
    """The text cut at a word boundary to at most `limit` characters, with an ellipsis."""
    text = _SPACES.sub(" ", text).strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:") + "…"


def unique(items: Iterable[str]) -> list[str]:
    """Items in first-seen order without repeats."""
    return list(dict.fromkeys(items))


def matches_any(text: str, pattern: re.Pattern[str], korean: Iterable[str]) -> int:
    """How many English cue stems (a compiled pattern) and Korean cue words a text holds."""
    return len(pattern.findall(text)) + sum(text.count(word) for word in korean)
