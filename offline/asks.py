"""What a text asks that an engine can honour mechanically: a length, an audience, a kind of
deliverable, a language, charts (a measure by a dimension), sources to leave out and outside
information.

Pure functions over strings, English and Korean. The builtin Planner reads a request and each
MODIFY with them into visible instructions; the builtin Executor reads the confirmed
instructions back with the same functions, so an instruction a person edited is what is done.

Also here: charts asked for in words: "<measure> by <dimension>" (Korean "<dimension>별
<measure>"), and whether a table's column names the measure or the dimension (synonyms
included).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from multiverse.spec import DEFAULT_WORDS, SHORT_KINDS, WORDS_PER_PAGE, FormatRuleKind

_MEASURE_BY = re.compile(
    r"(?P<measure>[A-Za-z][A-Za-z -]{1,40}?)\s+(?:by|per|across|for each)\s+"
    r"(?P<dimension>[A-Za-z]{3,30})",
    re.IGNORECASE,
)
_MEASURE_BY_KO = re.compile(
    r"(?P<dimension>[가-힣A-Za-z]{1,10})별\s*(?P<measure>[가-힣A-Za-z]{1,10})"
)
_LEAD_WORDS = frozenset(
    {"a", "an", "the", "of", "chart", "charts", "graph", "plot", "bar", "line", "show"}
    | {"showing", "make", "draw", "total", "with", "and", "table", "compare", "list"}
)

SYNONYMS: dict[str, frozenset[str]] = {
    "country": frozenset({"country", "countries", "region", "nation", "market", "국가", "나라"}),
    "region": frozenset({"region", "regions", "country", "area", "market", "지역", "국가"}),
    "revenue": frozenset({"revenue", "revenues", "sales", "turnover", "매출", "매출액"}),
    "sales": frozenset({"sales", "revenue", "매출", "판매"}),
    "year": frozenset({"year", "years", "연도", "년"}),
    "quarter": frozenset({"quarter", "quarters", "분기"}),
    "product": frozenset({"product", "products", "segment", "제품"}),
    "units": frozenset({"units", "unit", "volume", "판매량"}),
    "margin": frozenset({"margin", "margins", "마진"}),
    "국가": frozenset({"국가", "나라", "country", "region"}),
    "매출": frozenset({"매출", "매출액", "revenue", "sales"}),
}
for _key, _words in list(SYNONYMS.items()):
    for _word in _words:
        SYNONYMS.setdefault(_word, _words)


@dataclass(frozen=True)
class ChartAsk:
    """A chart asked for in words: what is measured, grouped by what."""

    measure: str
    dimension: str


def singular(word: str) -> str:
    """An English word's singular by its ending ("countries" → "country"); others unchanged."""
    word = word.casefold()
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def chart_asks(text: str) -> list[ChartAsk]:
    """Every `<measure> by <dimension>` (Korean `<dimension>별 <measure>`) in order, once each."""
    asks: list[ChartAsk] = []
    for match in _MEASURE_BY.finditer(text):
        words = [w for w in match["measure"].split() if w.casefold() not in _LEAD_WORDS]
        if words:
            asks.append(ChartAsk(singular(words[-1]), singular(match["dimension"])))
    for match in _MEASURE_BY_KO.finditer(text):
        # "국가별 매출을 차트로": the particle is not part of the measure's name.
        measure = re.sub(r"(?:을|를|이|가|은|는|의|과|와|로|으로)$", "", match["measure"])
        asks.append(ChartAsk(measure or match["measure"], match["dimension"]))
    return list(dict.fromkeys(asks))


def column_matches(word: str, header: str) -> bool:
    """Whether a column header names `word` or a synonym ("revenue_eur" names revenue)."""
    names = SYNONYMS.get(word, frozenset({word}))
    parts = {singular(part) for part in re.split(r"[^0-9A-Za-z가-힣]+", header) if part}
    return bool(parts & {singular(name) for name in names}) or any(
        name in header for name in names if not name.isascii()
    )


SHORT_WORDS = 300  # "a short note", "짧은 메모": half a page and a little more
TOLERANCE = 0.15  # a length is kept when the words are within ±15 % of it

_EN_NUMBERS = {
    "a": 1.0, "an": 1.0, "one": 1.0, "single": 1.0, "two": 2.0, "three": 3.0, "four": 4.0,
    "five": 5.0, "six": 6.0, "seven": 7.0, "eight": 8.0, "nine": 9.0, "ten": 10.0,
    "half": 0.5, "half a": 0.5,
}  # fmt: skip
_KO_NUMBERS = {
    "한": 1.0, "하나": 1.0, "두": 2.0, "둘": 2.0, "세": 3.0, "셋": 3.0, "네": 4.0, "넷": 4.0,
    "다섯": 5.0, "여섯": 6.0, "일곱": 7.0, "여덟": 8.0, "아홉": 9.0, "열": 10.0, "반": 0.5,
}  # fmt: skip
_EN_COUNT = r"\d+(?:\.\d+)?|half a|half|single|one|two|three|four|five|six|seven|eight|nine|ten|an?"
_KO_COUNT = r"\d+(?:\.\d+)?|하나|다섯|여섯|일곱|여덟|아홉|한|두|둘|세|셋|네|넷|열|반"
_PAGES = re.compile(rf"(?<![\w-])(?P<n>{_EN_COUNT})[\s-]*(?:pages?|pager)\b", re.IGNORECASE)
_PAGES_KO = re.compile(rf"(?P<n>{_KO_COUNT})\s*(?:페이지|쪽|장(?![가-힣]))")
_WORDS = re.compile(r"(?P<n>\d[\d,]*)\s*(?:-\s*)?(?:words?\b|단어|어절)", re.IGNORECASE)
_SHORT = re.compile(
    r"\b(?:short|brief|quick|concise)\s+(?:\w+\s+)?(?:note|memo|summary|brief|overview|update|"
    r"email|answer)\b|짧은|짧게|간단한|간단히|간략",
    re.IGNORECASE,
)

DELIVERABLES = (
    ("memo", "memo"), ("memorandum", "memo"), ("report", "report"), ("briefing", "briefing"),
    ("brief", "brief"), ("note", "note"), ("presentation", "presentation"),
    ("slides", "presentation"), ("deck", "presentation"), ("summary", "summary"),
    ("overview", "overview"), ("analysis", "analysis"), ("comparison", "comparison"),
    ("보고서", "report"), ("리포트", "report"), ("메모", "memo"), ("브리핑", "briefing"),
    ("발표", "presentation"), ("요약", "summary"), ("분석", "analysis"), ("비교", "comparison"),
)  # fmt: skip
AUDIENCE_HEADS = frozenset(
    [
        "investor",
        "investors",
        "board",
        "ceo",
        "cfo",
        "cto",
        "coo",
        "executive",
        "executives",
        "management",
        "manager",
        "managers",
        "team",
        "teams",
        "customer",
        "customers",
        "client",
        "clients",
        "partner",
        "partners",
        "leadership",
        "committee",
        "meeting",
        "stakeholder",
        "stakeholders",
        "reader",
        "readers",
        "student",
        "students",
        "engineer",
        "engineers",
        "sales",
        "marketing",
        "regulator",
        "regulators",
        "government",
        "press",
        "media",
        "public",
        "beginner",
        "beginners",
        "newcomer",
        "newcomers",
        "lender",
        "lenders",
        "bank",
        "banks",
        "shareholder",
        "shareholders",
        "director",
        "directors",
        "founder",
        "founders",
        "council",
        "minister",
        "officials",
        "analyst",
        "analysts",
        "buyer",
        "buyers",
        "operator",
        "operators",
        "vc",
        "vcs",
    ]
)
_KO_AUDIENCE = ("투자자", "이사회", "경영진", "임원", "고객", "팀", "위원회", "회의", "주주",
                "대표", "사장", "본부", "부서", "담당자", "실무자", "학생", "기자",
                "정부")  # fmt: skip
_AUDIENCE = re.compile(
    r"\bfor\s+(?P<who>(?:(?:a|an|the|our|my|their|its)\s+)?[\w'’-]+(?:\s+[\w'’-]+){0,4}?)"
    r"(?=\s*(?:[,.;:!?)]|$)|\s+(?:with|and|that|which|who|in|on|about|by|including|to|from|"
    r"using|so|before|after|covering|at)\b)",
    re.IGNORECASE,
)
_AUDIENCE_KO = re.compile(
    r"(?P<who>[가-힣A-Za-z-]{1,20}?)(?:을|를)?\s?(?:위한|대상|용(?![가-힣])|에게)"
)
LANGUAGES = (
    ("english", "English"), ("영어", "English"), ("korean", "Korean"), ("한국어", "Korean"),
    ("한글", "Korean"), ("japanese", "Japanese"), ("일본어", "Japanese"),
    ("chinese", "Chinese"), ("중국어", "Chinese"), ("german", "German"), ("독일어", "German"),
    ("french", "French"), ("프랑스어", "French"), ("spanish", "Spanish"),
)  # fmt: skip
_OUTSIDE = re.compile(
    r"\b(?:search the web|web search|online sources?|on the (?:web|internet)|outside "
    r"(?:information|sources?|data)|external (?:information|sources?|data)|"
    r"(?:latest|recent|current)\s+(?:[\w-]+\s+){0,2}(?:news|trends?|developments?|data|"
    r"figures|information|prices?)|"
    r"up[- ]to[- ]date|current news|look (?:it |this )?up online|google)\b|웹\s?검색|인터넷|"
    r"최신\s?(?:뉴스|자료|정보)|외부\s?(?:자료|정보)",
    re.IGNORECASE,
)
_LEAVE_OUT = re.compile(
    r"\b(?:leave out|leaving out|leave aside|exclude|excluding|except|except for|ignore|ignoring|"
    r"drop|skip|omit|without|remove|not use|don't use|do not use)\s+(?P<what>[^,.;:!?\n]+)",
    re.IGNORECASE,
)
_LEAVE_OUT_KO = re.compile(
    r"(?P<what>[^,.;:!?\n]{2,40}?)\s?(?:은|는|을|를|이|가)?\s?"
    r"(?:빼고|빼줘|빼 주세요|제외|말고|없이)"
)
_CLAUSE_END = re.compile(
    r"\s+(?:and|but|then|so|because|while|,)\s+(?=(?:make|write|keep|use|add|change|put|turn|"
    r"limit|shorten|cut|focus|include|do|be|it|please|also|write)\b)",
    re.IGNORECASE,
)
_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]*[\w-]\.[A-Za-z0-9]{1,5})(?![\w/])")


@dataclass(frozen=True)
class Length:
    """A length asked for, in words, and the words that asked for it."""

    words: int
    said: str
    label: str


def _number(word: str) -> float:
    folded = word.casefold()
    if folded in _EN_NUMBERS:
        return _EN_NUMBERS[folded]
    if word in _KO_NUMBERS:
        return _KO_NUMBERS[word]
    return float(word)


def _plural(count: float, unit: str) -> str:
    shown = f"{count:g}"
    return f"{shown} {unit}" + ("" if count == 1 else "s")


def length_asked(text: str, pages_first: bool = False) -> Length | None:
    """The length a text asks for: words ("300 words"), pages ("two-page", "한 페이지") at
    500 words a page, or a short form ("a short note": 300 words); None when it names none.

    `pages_first` reads an instruction that states pages and, derived, words: a person who
    edits "2 pages" to "1 page" changes the length even if the derived words stay.
    """
    words = (
        None
        if pages_first and (_PAGES.search(text) or _PAGES_KO.search(text))
        else (_WORDS.search(text))
    )
    if words:
        count = int(words["n"].replace(",", ""))
        if count > 0:
            return Length(count, words.group(0).strip(), f"{count:,} words")
    for pattern in (_PAGES, _PAGES_KO):
        pages = pattern.search(text)
        if pages:
            pages_asked = _number(pages["n"])
            if pages_asked > 0:
                total = round(pages_asked * WORDS_PER_PAGE)
                label = f"{_plural(pages_asked, 'page')} (about {total:,} words)"
                return Length(total, pages.group(0).strip(), label)
    short = _SHORT.search(text)
    if short:
        return Length(SHORT_WORDS, short.group(0).strip(), f"short (about {SHORT_WORDS} words)")
    return None


def default_length(kind: tuple[str, str] | None) -> Length:
    """The length when none is asked: one page for a note, brief or summary, else two pages."""
    if kind is not None and kind[0] in SHORT_KINDS:
        return Length(
            WORDS_PER_PAGE, "", f"1 page (about {WORDS_PER_PAGE} words; default for a {kind[0]})"
        )
    return Length(DEFAULT_WORDS, "", f"2 pages (about {DEFAULT_WORDS:,} words; default)")


PRIMARY_KINDS = frozenset({"memo", "report", "briefing", "brief", "note", "presentation"})


def deliverable_asked(text: str) -> tuple[str, str] | None:
    """The kind of deliverable the text names and the word that named it: the first memo,
    report, brief, note or presentation; an analysis, summary or comparison only without one
    ("market analysis report" asks for a report)."""
    folded = text.casefold()
    found: list[tuple[bool, int, str, str]] = []
    for word, label in DELIVERABLES:
        pattern = rf"(?<![a-z]){re.escape(word)}(?![a-z])" if word.isascii() else re.escape(word)
        match = re.search(pattern, folded)
        if match:
            word_said = text[match.start() : match.end()]
            found.append((label not in PRIMARY_KINDS, match.start(), label, word_said))
    if not found:
        return None
    _, _, label, said = min(found)
    return label, said


def audience_asked(text: str) -> str | None:
    """Who the deliverable is for ("for a charging-network investor", "이사회용"), when the
    phrase ends in a word naming people or an occasion; None otherwise (never guessed)."""
    for found in _AUDIENCE.finditer(text):
        who = found["who"].strip()
        last = re.split(r"[\s-]+", who.casefold())[-1].strip("'’")
        if last in AUDIENCE_HEADS:
            return who
    for found in _AUDIENCE_KO.finditer(text):
        who = found["who"].strip()
        if any(head in who for head in _KO_AUDIENCE):
            return who
    return None


def language_asked(text: str) -> str | None:
    """A language the text asks for ("in English", "한국어로"), else None."""
    folded = text.casefold()
    for word, label in LANGUAGES:
        if re.search(rf"(?:\bin(?:to)? {word}\b|{word}\s*(?:로|으로))", folded):
            return label
    return None


def script_language(text: str) -> str:
    """The language a text is written in, judged by its script (Hangul, kana, Han, Latin)."""
    counts = {"Korean": 0, "Japanese": 0, "Chinese": 0, "Latin": 0, "Cyrillic": 0}
    for char in text:
        code = ord(char)
        if 0xAC00 <= code <= 0xD7A3 or 0x1100 <= code <= 0x11FF or 0x3130 <= code <= 0x318F:
            counts["Korean"] += 1
        elif 0x3040 <= code <= 0x30FF:
            counts["Japanese"] += 1
        elif 0x4E00 <= code <= 0x9FFF:
            counts["Chinese"] += 1
        elif 0x0400 <= code <= 0x04FF:
            counts["Cyrillic"] += 1
        elif char.isascii() and char.isalpha():
            counts["Latin"] += 1
    if counts["Japanese"]:
        return "Japanese"
    # Hangul weighs more: a Korean request usually quotes English names and file paths.
    if counts["Korean"] and counts["Korean"] * 3 >= counts["Latin"]:
        return "Korean"
    best = max(counts, key=lambda name: counts[name])
    if counts[best] == 0:
        return "English"
    return {"Latin": "English", "Cyrillic": "Russian"}.get(best, best)


def outside_asked(text: str) -> str | None:
    """The words asking for information from outside the sources (a web search), or None.

    Only an explicit ask counts ("search the web", "latest news", "웹 검색"): a request about a
    market is not a request to search the web.
    """
    found = _OUTSIDE.search(text)
    return found.group(0) if found else None


def paths_named(text: str) -> list[str]:
    """File names or paths the text names (`assets/a.csv`, `report.pdf`), in order."""
    return list(
        dict.fromkeys(m.group(1) for m in _PATH.finditer(text) if not m.group(1)[0].isdigit())
    )


def leave_outs(text: str) -> list[str]:
    """What the text says to leave out ("leave out the Korean battery report", "X는 빼고")."""
    found = [_CLAUSE_END.split(m["what"], maxsplit=1)[0].strip() for m in _LEAVE_OUT.finditer(text)]
    found += [m["what"].strip() for m in _LEAVE_OUT_KO.finditer(text)]
    return [what for what in found if what]


_CHARTS_REFUSED = re.compile(
    r"\b(?:no|without|drop|remove|leave out|skip|omit|don't want|do not want)\s+"
    r"(?:the\s+|a\s+|any\s+)?"
    r"(?:charts?|graphs?|plots?|visuals?|figures?)\b|(?:차트|그래프|시각화)\s?(?:는|은|를)?\s?(?:없이|빼|제외|말고)",
    re.IGNORECASE,
)
_SEARCH_REFUSED = re.compile(
    r"\b(?:no|without|drop|remove|skip|don't|do not)\s+(?:a\s+|any\s+|the\s+)?(?:web\s+)?"
    r"(?:search(?:ing)?|browsing|internet|outside (?:information|sources?))\b|"
    r"(?:웹\s?)?검색\s?(?:은|는)?\s?(?:없이|빼|제외|말고|하지)",
    re.IGNORECASE,
)


def charts_refused(text: str) -> bool:
    """Whether the text says to leave charts out ("no chart", "차트 없이")."""
    return _CHARTS_REFUSED.search(text) is not None


def search_refused(text: str) -> bool:
    """Whether the text says not to search the web ("no web search", "검색 없이")."""
    return _SEARCH_REFUSED.search(text) is not None


def sources_in(instruction: str) -> tuple[list[str], list[str]]:
    """The files a SOURCES instruction (as written, or as a person edited it) works from, and
    those it leaves out (named after "left out", "except", "without" or "exclude")."""
    lowered = instruction.casefold()
    cuts = [lowered.find(w) for w in ("left out", "leave out", "except", "without", "exclude")]
    cut = min((c for c in cuts if c >= 0), default=len(instruction))
    return paths_named(instruction[:cut]), paths_named(instruction[cut:])


# The format rules a text states (the request's own words, or guidelines/).
FORMAT_RULES: tuple[tuple[FormatRuleKind, re.Pattern[str]], ...] = (
    (
        "no_tables",
        re.compile(
            r"\b(?:never|don't|do not|avoid|no)\s+(?:use\s+)?tables?\b|\bwithout\s+tables?\b"
            r"|표(?:는|를)?\s?(?:사용하지|쓰지|넣지)|표\s?없이",
            re.IGNORECASE,
        ),
    ),
    ("bullets", re.compile(r"\bbullet(?:ed)?\s*(?:points?|lists?)?\b|글머리|불릿", re.IGNORECASE)),
    (
        "no_charts",
        re.compile(
            r"\b(?:never|don't|do not|avoid|no)\s+(?:use\s+|include\s+)?"
            r"(?:charts?|graphs?|figures?)\b"
            r"|(?:차트|그래프)(?:는|를)?\s?(?:사용하지|넣지|쓰지)",
            re.IGNORECASE,
        ),
    ),
    (
        "no_headings",
        re.compile(
            r"\b(?:never|don't|do not|avoid|no)\s+(?:use\s+)?(?:headings?|headers?|titles?)\b"
            r"|제목(?:은|을)?\s?(?:사용하지|쓰지|달지)",
            re.IGNORECASE,
        ),
    ),
    (
        "item_words",  # before max_words: "keep every bullet under 25 words" limits each one
        re.compile(
            r"\b(?:each|every|per|all)\s+(?:bullet(?:\s+point)?|point|item|sentence|line)s?\b"
            r"[^.\n]{0,40}?\b(?:no more than|at most|under|maximum of|max\.?|within|below|"
            r"less than|not exceed(?:ing)?)\s+(?P<n>\d[\d,]*)\s+words\b"
            r"|(?:각\s?(?:항목|문장|글머리\s?기호)|(?:항목|문장|글머리\s?기호)마다)[^.\n]{0,20}?"
            r"(?P<k>\d[\d,]*)\s?(?:단어|자)\s?(?:이내|이하|미만)",
            re.IGNORECASE,
        ),
    ),
    (
        "max_words",
        re.compile(
            r"\b(?:no more than|at most|under|maximum of|max\.?|not exceed(?:ing)?)\s+"
            r"(?P<n>\d[\d,]*)\s+words\b|(?P<k>\d[\d,]*)\s?(?:단어|자)\s?(?:이내|이하|미만)",
            re.IGNORECASE,
        ),
    ),
)
