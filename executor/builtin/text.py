"""Language helpers of the offline engine: inline markdown cleaning, sentences, content terms,
and the figures a text states (numbers with a currency, a unit, a percent sign or a year:
`1,200억 원`, `$4.2 billion`, `35%`, `2.3 million users` and `2024` are figures; a bare `3` is
not).

Pure functions over strings; English and Korean are both first-class.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Literal, cast

from pydantic import BaseModel, ConfigDict

from multiverse.config import parse_yaml

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


# -- figures ------------------------------------------------------------------------------

FigureKind = Literal["money", "percent", "count", "year"]

NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_SCALES = {
    "thousand": 1e3, "k": 1e3, "million": 1e6, "mn": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9,
    "b": 1e9, "trillion": 1e12, "tn": 1e12, "천": 1e3, "만": 1e4, "억": 1e8, "조": 1e12,
}  # fmt: skip
_MONEY_WORDS = frozenset(
    (
        "원", "달러", "엔", "위안", "유로", "dollars", "euros", "won", "yen",
        "usd", "eur", "krw", "gbp", "jpy", "cny",
    )
)  # fmt: skip
_PERCENT_WORDS = frozenset(
    (
        "%", "%p", "퍼센트", "percent", "per-cent", "pp", "bps",
        "percentage-point", "percentage-points", "basis-points",
    )
)  # fmt: skip
_COUNT_NOUNS = (
    "users|customers|units|employees|stores|subscribers|downloads|orders|countries|cities|"
    "markets|shops|outlets|people|visitors|tonnes|tons|vehicles|products|partners|clients|"
    "members|hours|days|weeks|months|years|kg|km|MW|GW|GWh|TWh|MWh|kWh"
)
_CURRENCY = r"US\$|A\$|C\$|\$|€|£|¥|₩|(?:USD|EUR|GBP|KRW|JPY|CNY) ?"
_EN_SCALE = r"trillion|billion|million|thousand|tn|bn|mn|m|k|b"
_PATTERNS = (
    re.compile(rf"(?P<cur>{_CURRENCY})(?P<num>{NUM})(?:\s?(?P<scale>{_EN_SCALE})\b)?"),
    re.compile(
        rf"(?<![\d.,])(?P<num>{NUM})\s?(?P<scale>조|천억|백억|십억|억|천만|백만|십만|만|천)"
        rf"(?:\s?(?P<num2>{NUM})\s?(?P<scale2>천억|백억|십억|억|천만|백만|십만|만|천))?"
        r"(?:\s?(?P<unit>원|달러|엔|위안|유로|명|개|건|대|톤|가구|곳))?"
    ),
    re.compile(
        rf"(?<![\d.,])(?P<num>{NUM})\s?(?P<scale>trillion|billion|million|thousand|bn|mn)\b"
        r"(?:\s(?P<unit>dollars|euros|won|yen|USD|EUR|KRW|" + _COUNT_NOUNS + r")\b)?"
    ),
    re.compile(
        rf"(?<![\d.,])(?P<num>{NUM})\s?(?P<unit>%p|%|퍼센트|원|달러|명|개사|개|건|배|곳|대|톤|개월|분기)"
    ),
    re.compile(
        rf"(?<![\d.,])(?P<num>{NUM})\s?(?P<unit>percentage points?|per cent|percent|pp|bps|"
        rf"basis points|x|times|{_COUNT_NOUNS})\b"
    ),
    # Tonnes written "60,000 t" (also before Korean: "60,000 t이었고"), never "5 tables".
    re.compile(rf"(?<![\d.,])(?P<num>{NUM})\s?(?P<unit>kt|Mt|t)(?![A-Za-z])"),
    re.compile(r"(?<![\w.,$€£¥₩])(?:FY ?)?(?P<num>(?:19|20)\d{2})(?P<unit>년)?(?![\d%]|[.,]\d)"),
)
_KIND_RANK: dict[str, int] = {"money": 0, "percent": 1, "count": 2, "year": 3}


class FoundFigure(BaseModel):
    """A figure found in a text: its words, value, magnitude in base units and kind."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    value: str
    number: float
    magnitude: float
    unit: str
    kind: FigureKind
    start: int
    end: int


def _to_float(raw: str | None) -> float:
    return float(raw.replace(",", "")) if raw else 0.0


def _kind(currency: str, scale: str, unit: str, number: float, is_year_pattern: bool) -> FigureKind:
    lowered = unit.lower().replace(" ", "-")
    if is_year_pattern or (unit == "년" and number.is_integer() and 1900 <= number <= 2100):
        return "year"
    if currency or lowered in _MONEY_WORDS or (scale.endswith(("억", "조")) and not unit):
        return "money"
    if lowered in _PERCENT_WORDS or lowered.rstrip("s") in _PERCENT_WORDS:
        return "percent"
    return "count"


_KO_DIGITS = {"십": 10.0, "백": 100.0, "천": 1e3}


def _scale(word: str) -> float:
    """A scale word's factor; Korean compounds multiply ("천억" = 10³ × 10⁸, "2천억" keeps it)."""
    folded = word.lower()
    if (folded in _SCALES and len(folded) == 1) or folded.isascii():
        return _SCALES.get(folded, 1.0)
    factor = 1.0
    for char in folded:
        factor *= _KO_DIGITS.get(char) or _SCALES.get(char, 1.0)
    return factor


def _build(match: re.Match[str], is_year_pattern: bool) -> FoundFigure:
    groups = match.groupdict()
    currency = (groups.get("cur") or "").strip()
    scale = groups.get("scale") or ""
    unit = groups.get("unit") or ""
    number = _to_float(groups["num"])
    magnitude = number * _scale(scale)
    if groups.get("num2"):
        magnitude += _to_float(groups["num2"]) * _scale(groups.get("scale2") or "")
    words = " ".join(part for part in (currency, scale, unit) if part)
    return FoundFigure(
        value=match.group(0).strip(),
        number=number,
        magnitude=magnitude,
        unit=words,
        kind=_kind(currency, scale, unit, number, is_year_pattern),
        start=match.start(),
        end=match.end(),
    )


def find_figures(text: str) -> list[FoundFigure]:
    """Every figure in the text, left to right; where patterns overlap the longest wins."""
    candidates: list[FoundFigure] = []
    last = len(_PATTERNS) - 1
    for index, pattern in enumerate(_PATTERNS):
        candidates.extend(_build(m, index == last) for m in pattern.finditer(text))
    candidates.sort(key=lambda f: (f.start, -(f.end - f.start)))
    chosen: list[FoundFigure] = []
    for figure in candidates:
        if not chosen or figure.start >= chosen[-1].end:
            chosen.append(figure)
    return chosen


def parse_figure(value: str) -> FoundFigure | None:
    """The figure a value cell holds (as written in a figures table), if any."""
    found = find_figures(value)
    return found[0] if found else None


_FAMILY = re.compile(r"US\$|\$|€|£|¥|₩|USD|EUR|GBP|KRW|JPY|CNY|원|달러|엔|억|조|%")
_FAMILIES = {
    "US$": "USD",
    "$": "USD",
    "달러": "USD",
    "€": "EUR",
    "£": "GBP",
    "¥": "JPY",
    "엔": "JPY",
}
_FAMILIES |= {"₩": "KRW", "원": "KRW", "억": "KRW", "조": "KRW"}


def unit_family(value: str, kind: str) -> str:
    """What a figure's value is counted in (`USD`, `KRW`, `%`…), so like is compared with like."""
    found = _FAMILY.search(value)
    if not found:
        # Counts are only alike in the same unit: 60,000 t, 14 months and 11,232,000 are not.
        unit = re.sub(r"[\d.,\s]+", " ", value).strip().casefold()
        return f"{kind}:{unit}" if kind == "count" else kind
    return _FAMILIES.get(found.group(0), found.group(0))


def rank_key(kind: str, magnitude: float) -> tuple[int, float]:
    """Sort key putting money first, then percents, then counts, larger values first."""
    return (_KIND_RANK.get(kind, 9), -magnitude)


@cache
def _all_words() -> dict[str, dict[str, str]]:
    text = resources.files("executor.builtin").joinpath("brief_words.yaml").read_text("utf-8")
    return cast(dict[str, dict[str, str]], parse_yaml(text))


def words(lang: str) -> dict[str, str]:
    """The fixed text of a brief in a language (English when it has none of its own)."""
    known = _all_words()
    return known.get(lang, known["en"])


# -- an amount's reading in the scale words of another language --------------------------

_HANGUL_SCALE = re.compile(r"[십백천만억조]")
_READ = re.compile(r"\s*\(=")
# Per language read into: its scales (largest first, with how each is joined to its number)
# and its unit words for the other language's.
_READINGS: dict[str, tuple[tuple[tuple[float, str], ...], dict[str, str]]] = {
    "en": (
        ((1e12, " trillion"), (1e9, " billion"), (1e6, " million")),
        {"원": "won", "달러": "dollars", "엔": "yen", "위안": "yuan", "유로": "euros",
         "명": "people", "대": "units", "건": "cases", "톤": "tonnes", "가구": "households",
         "곳": "places"},
    ),
    "ko": (
        ((1e12, "조"), (1e8, "억"), (1e4, "만")),
        {"€": "유로", "eur": "유로", "euros": "유로", "$": "달러", "us$": "달러", "usd": "달러",
         "dollars": "달러", "£": "파운드", "gbp": "파운드", "¥": "엔", "jpy": "엔", "yen": "엔",
         "₩": "원", "krw": "원", "won": "원", "cny": "위안", "users": "명", "customers": "명",
         "people": "명", "employees": "명", "visitors": "명", "subscribers": "명",
         "members": "명", "clients": "명", "units": "대", "vehicles": "대"},
    ),
}  # fmt: skip


def _short(value: float) -> str:
    return f"{value:,.6f}".rstrip("0").rstrip(".")


def _reading(figure: FoundFigure, lang: str) -> str:
    """The figure's amount in the scale and unit words of `lang` ("120 billion won")."""
    scales, units = _READINGS[lang]
    size, word = next(((size, word) for size, word in scales if figure.magnitude >= size),
                      (1.0, ""))  # fmt: skip
    unit = next((units[w] for w in figure.unit.casefold().split() if w in units), "")
    return f"{_short(figure.magnitude / size)}{word} {unit}".strip()


def with_readings(text: str, language: str) -> str:
    """The text with each amount written in another language's scale words followed by its
    reading in the scale words of `language` (English or Korean): `1,200억 원 (= 120 billion
    won)`, `€18.5 billion (= 185억 유로)`. A small model writing English from a Korean source
    read 1,200억 원 as 1.2 trillion won and 18만 대 as 18 million units; code converts, the
    model copies. An amount read already keeps its one reading (a working text that copied
    its sources' is read again by the next task). Any other language: the text as it is."""
    lang = language.split("-")[0].casefold()
    if lang not in _READINGS:
        return text
    parts, at = [], 0
    for figure in find_figures(text):
        scaled = figure.magnitude != figure.number and figure.kind not in ("percent", "year")
        # English is written from the Korean scales' amounts; Korean from the English ones.
        korean = _HANGUL_SCALE.search(figure.unit) is not None
        if not scaled or korean != (lang == "en") or _READ.match(text, figure.end):
            continue
        parts += [text[at : figure.end], f" (= {_reading(figure, lang)})"]
        at = figure.end
    return "".join(parts) + text[at:]
