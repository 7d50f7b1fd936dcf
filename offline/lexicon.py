"""Words to match a request against a home's files and columns, in English and Korean (pure).

A request names a column in its own words ("marriages per 1,000 people", "저축률"), a table in
its words ("the German interest-rate data", "흑점 자료"); a column is named by its header
(`Marriages_per_1000`, `gdpPercap`) and by the description that ships with the table. Both
sides are reduced to the same terms: lower-cased English word stems, camelCase and snake_case
split, Korean words carried over to English through a general dictionary of the words of
statistics, economics and places (never a dataset's own names).

Also here: periods a request names, in English and Korean: years, quarters, months, days, decades,
centuries and ranges, each as a label in one normal form (pure).

Labels: `1950`, `2010Q3`, `2008-09`, `2020-01-05`. A range is a pair of labels; "since 1970"
is a range open at its end (None), "in the 1990s" is 1990–1999.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from multiverse.tabular import TimeAxis, parse_label

# Korean → English terms. Keys are matched inside Korean words, so particles may follow
# (저축률이, 실업률은); longer keys are tried first. Values are the English terms they mean.
KOREAN: dict[str, tuple[str, ...]] = {
    # time and periods
    "연도": ("year",), "연간": ("year", "annual"), "매년": ("year",), "해마다": ("year",),
    "년": ("year",), "분기": ("quarter",), "월별": ("month",), "월간": ("month",),
    "매월": ("month",), "주간": ("week",), "매주": ("week",),
    "주별": ("state", "week"), "개인": ("personal",),
    "일별": ("day",), "일간": ("day",), "요일": ("day", "weekday"), "날짜": ("date",),
    "기간": ("period",), "추이": ("trend",), "변화": ("change",), "세기": ("century",),
    # quantities and statistics
    "평균": ("mean", "average"), "합계": ("total", "sum"), "총": ("total",),
    "비율": ("rate", "ratio", "share", "percent"), "비중": ("share",), "율": ("rate",),
    "률": ("rate",), "지수": ("index",), "수익률": ("yield", "return"),
    "건수": ("number", "count"), "증가": ("growth", "increase"), "감소": ("decrease",),
    "성장": ("growth",), "최고": ("max", "highest"), "최저": ("min", "lowest"),
    "가장 큰": ("largest",), "가장 많": ("most",), "가장 높": ("highest",),
    "가장 낮": ("lowest",), "가장 적": ("least",), "가장 빠르게": ("fastest",),
    "상위": ("top",), "하위": ("bottom", "sub"),
    # economy and business
    "매출": ("sales", "revenue", "takings", "turnover"), "판매량": ("quantity", "sales"),
    "판매": ("sales",), "이익": ("profit",), "이윤": ("profit",), "수익": ("revenue", "profit"),
    "비용": ("cost",), "가격": ("price",), "주가": ("price", "stock", "close"),
    "종가": ("close",), "물가": ("price", "cpi"),
    "소비자물가지수": ("cpi", "consumer", "price", "index"),
    "소비자 물가": ("cpi", "consumer", "price"), "실업률": ("unemployment", "rate", "unemp"),
    "실업자": ("unemployed", "unemploy"), "실업": ("unemployment", "unemploy"),
    "실업 기간": ("duration", "unemployment"), "저축률": ("saving", "rate", "psavert"),
    "저축": ("saving",), "소비": ("consumption", "spending", "expenditure"),
    "지출": ("spending", "expenditure"), "소득": ("income",), "임금": ("wage",),
    "고용": ("employment", "employed", "payroll"), "일자리": ("jobs", "employment"),
    "국내총생산": ("gdp",), "총생산": ("gdp",), "1인당": ("per", "capita", "percap"),
    "투자": ("investment", "invest"), "총투자": ("gross", "investment", "invest"),
    "자본": ("capital",), "시장가치": ("market", "value"), "시가총액": ("market", "value"),
    "가치": ("value",), "부채": ("debt",), "예산": ("budget",), "세금": ("tax",),
    "수출": ("export",), "수입액": ("import",), "금리": ("rate", "interest"),
    "이자": ("interest",), "예금": ("deposit",), "채권": ("bond",), "인플레이션": ("inflation",),
    "물가상승률": ("inflation",), "환율": ("exchange", "rate"), "통화": ("money", "currency"),
    "할인": ("discount",), "배송": ("ship", "shipping"), "주문": ("order",),
    "고객": ("customer",), "제품": ("product",), "카테고리": ("category",),
    "범주": ("category",), "하위 카테고리": ("sub", "category"), "지역": ("region",),
    "방문객": ("visitors", "visits"), "방문자": ("visitors", "visits"),
    "관광객": ("tourists", "visitors"), "이용자": ("users",), "가입자": ("subscribers",),
    "학생": ("students",), "환자": ("patients",), "사고": ("accidents",),
    "생산량": ("production", "output"), "소비량": ("consumption",), "거래량": ("volume",),
    "배출량": ("emissions",), "매출액": ("sales", "revenue"), "판매액": ("sales",),
    "국가": ("country", "nation"), "나라": ("country", "nation"), "도시": ("city",),
    "매장": ("store", "shop"), "점포": ("store", "shop"), "지점": ("branch", "store"),
    "부서": ("department",), "품목": ("item", "product"), "상품": ("product", "item"),
    "대륙": ("continent",), "학교": ("school",), "연령": ("age",), "채널": ("channel",),
    "시장": ("market",), "기업": ("firm", "company"), "회사": ("company", "firm"),
    "종목": ("symbol", "stock", "company"), "산업": ("industry", "sector"),
    "업종": ("industry", "sector"), "숙박": ("accommodation", "hotel"), "객실": ("room",),
    "점유율": ("occupancy", "share"), "기념품": ("souvenir",), "가게": ("shop", "store"),
    "후보자": ("candidate",), "유형": ("type", "kind"), "종류": ("type", "kind"),
    "정당": ("party",), "세션": ("sessions", "session"),
    # people and society
    "인구": ("population", "pop"), "출생아": ("births", "birth"), "출생": ("births", "birth"),
    "사망자": ("deaths", "death"), "사망": ("deaths", "death"), "혼인": ("marriage",),
    "결혼": ("marriage",), "이혼": ("divorce",), "세례": ("christening",),
    "남자아이": ("boys", "male", "males"), "여자아이": ("girls", "female", "females"),
    "남성": ("male", "men"), "여성": ("female", "women"), "남자": ("male", "men"),
    "여자": ("female", "women"), "아이": ("children",), "학위": ("degree",),
    "학사": ("bachelor",), "전공": ("field", "major"), "졸업률": ("graduation", "grad"),
    "졸업": ("graduation", "grad"), "출산율": ("fertility", "rate"),
    "기대수명": ("life", "expectancy", "lifeexp"), "수명": ("life", "expectancy"),
    "범죄율": ("crime", "rate"), "범죄": ("crime",), "강력범죄": ("violent", "crime"),
    "폭력": ("violent",), "살인": ("murder",), "빈곤율": ("poverty", "rate"),
    "빈곤": ("poverty",), "선거": ("election",), "득표": ("votes", "vote"),
    "후보": ("candidate",), "구역": ("district",), "지구": ("district",), "팁": ("tip",),
    "계산서": ("bill",), "흡연": ("smoker",), "점심": ("lunch",), "저녁": ("dinner",),
    "인원": ("size", "party"), "서빙": ("server", "waiter"), "직원": ("staff", "server"),
    "경력": ("experience", "tenure"), "나이": ("age",), "성별": ("sex", "gender"),
    # nature, energy, transport
    "흑점": ("sunspot", "sunspots"), "활동": ("activity",), "기온": ("temperature", "temp"),
    "온도": ("temperature", "temp"), "강수량": ("precipitation", "rain"), "강우": ("rain",),
    "바람": ("wind",), "날씨": ("weather",), "전력": ("electricity", "power"),
    "전기": ("electricity", "power"), "발전량": ("generation",), "발전": ("generation",),
    "재생에너지": ("renewable", "renewables"), "재생": ("renewable", "renewables"),
    "원자력": ("nuclear",), "화석연료": ("fossil", "fuel"), "화석": ("fossil",),
    "석유": ("oil", "petroleum"), "유류": ("oil", "fuel"), "잔사유": ("residual", "oil"),
    "연료": ("fuel",), "가스": ("gas",), "휘발유": ("gas", "gasoline"), "공급량": ("supply",),
    "공급": ("supply",), "운전": ("driving", "drive", "miles"), "주행": ("driving", "miles"),
    "거리": ("distance", "miles"), "유량": ("flow", "volume"),
    "수위": ("level",), "사망 원인": ("cause",), "원인": ("cause",), "질병": ("disease",),
    "부상": ("wounds", "wound"), "전쟁": ("war",),
    # places and names people write in Korean
    "미국": ("us", "usa", "united", "states", "america"), "한국": ("korea", "south"),
    "대한민국": ("korea", "south"), "중국": ("china",), "일본": ("japan",),
    "독일": ("germany", "german"), "영국": ("uk", "united", "kingdom", "britain"),
    "프랑스": ("france",), "캐나다": ("canada",), "호주": ("australia", "australian"),
    "인도": ("india",), "러시아": ("russia",), "브라질": ("brazil",), "멕시코": ("mexico",),
    "이탈리아": ("italy",), "스페인": ("spain",), "덴마크": ("denmark", "danish"),
    "스웨덴": ("sweden",), "노르웨이": ("norway",), "핀란드": ("finland",),
    "네덜란드": ("netherlands",), "런던": ("london",), "파리": ("paris",),
    "몬트리올": ("montreal",), "나일": ("nile",), "아이오와": ("iowa",),
    "캘리포니아": ("california",), "텍사스": ("texas",), "뉴욕": ("new", "york"),
    "퀸즐랜드": ("queensland",), "뉴사우스웨일스": ("new", "south", "wales"),
    "빅토리아": ("victoria",), "태즈메이니아": ("tasmania",), "크림": ("crimea", "crimean"),
    "애플": ("apple", "aapl"), "넷플릭스": ("netflix", "nflx"),
    "마이크로소프트": ("microsoft", "msft"),
    "구글": ("google", "googl"), "아마존": ("amazon", "amzn"), "페이스북": ("facebook", "fb"),
    "아이비엠": ("ibm",), "제너럴 모터스": ("general", "motors"),
    "제너럴 일렉트릭": ("general", "electric"),
}  # fmt: skip
_KOREAN_KEYS = sorted(KOREAN, key=len, reverse=True)

# English words that name the same thing in a request and in a header or description.
_SYNONYMS = (
    {"revenue", "sales", "turnover", "takings", "income"},
    {"price", "prices", "cost"},
    {"people", "person", "capita"},
    {"percent", "percentage", "pct", "share"},
    {"rate", "ratio"},
    {"average", "mean", "avg"},
    {"total", "sum"},
    {"year", "yearly", "annual", "annually", "yr"},
    {"month", "monthly", "mon"},
    {"quarter", "quarterly", "qtr"},
    {"week", "weekly", "wk"},
    {"day", "daily", "date", "weekday"},
    {"waiter", "server", "waitress", "staff"},
    {"firm", "company", "corporation", "business"},
    {"symbol", "ticker", "company"},
    {"country", "nation"},
    {"state", "province"},
    {"unemployment", "unemployed", "unemp", "jobless"},
    {"employment", "employed", "payroll", "jobs"},
    {"saving", "savings"},
    {"spending", "consumption", "expenditure"},
    {"deaths", "death", "fatalities", "killed", "died"},
    {"births", "birth", "born"},
    {"investment", "invest"},
    {"gas", "gasoline", "petrol"},
    {"driving", "driven", "miles"},
    {"temperature", "temp"},
    {"electricity", "power", "energy"},
    {"marriage", "marriages", "married"},
    {"divorce", "divorces"},
    {"flow", "discharge", "volume", "streamflow"},
    {"jobs", "employment", "employees", "workers"},
    # well-known stock tickers, as tables name companies
    {"apple", "aapl"},
    {"microsoft", "msft"},
    {"netflix", "nflx"},
    {"google", "goog", "googl", "alphabet"},
    {"amazon", "amzn"},
    {"facebook", "fb", "meta"},
    {"ibm"},
    {"tesla", "tsla"},
)
# English phrases that a header writes as one abbreviation
PHRASES: dict[str, tuple[str, ...]] = {
    "consumer price index": ("cpi",),
    "gross domestic product": ("gdp",),
    "per capita": ("percap", "capita"),
    "life expectancy": ("lifeexp", "life", "expectancy"),
    "personal consumption expenditure": ("pce",),
    "personal consumption": ("pce",),
    "interest rate": ("interest", "rate"),
    "exchange rate": ("exchange", "rate"),
}
SYNONYMS: dict[str, frozenset[str]] = {}
for _group in _SYNONYMS:
    for _word in _group:
        SYNONYMS[_word] = SYNONYMS.get(_word, frozenset()) | frozenset(_group)

# Words that say nothing of what a thing is: never matched on their own.
FILLER = frozenset(
    """a an the of for to in on at by and or with from per over across each every all its it
    this that these those is are was were be been as my our your their me us we you i
    please data dataset datasets file files table tables csv md document documents folder
    report memo brief note chart charts graph plot line bar show draw make give tell write
    what which how much many when where who one two new old info information stuff thing
    things about figure figures""".split()  # noqa: SIM905
)
_CAMEL = re.compile(
    r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])"
)
_WORD = re.compile(r"[A-Za-z0-9]+|[가-힣]+")
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+")


def stem(word: str) -> str:
    """An English word's stem for matching: lower case, plural and a few endings off."""
    word = word.lower()
    if len(word) <= 3 or word.endswith(("ss", "us", "is", "series")):
        return word
    if word.endswith("ies") and word not in ("series", "species"):
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "ses")):
        return word[:-2]
    return word[:-1] if word.endswith("s") else word


def split_name(name: str) -> list[str]:
    """A header's words: `gdpPercap` → gdp, percap; `Marriages_per_1000` → marriages, per, 1000."""
    words: list[str] = []
    for part in re.split(r"[^0-9A-Za-z가-힣]+", unicodedata.normalize("NFKC", name)):
        if part:
            words += [piece for piece in _CAMEL.split(part) if piece]
    return words


def terms(text: str) -> list[str]:
    """The matching terms of a text: English stems (filler left out), Korean words carried over."""
    found: list[str] = []
    text = _GROUPED.sub(lambda m: m.group().replace(",", ""), unicodedata.normalize("NFKC", text))
    for word in _WORD.findall(text):
        if re.match(r"[가-힣]", word):
            found += korean_terms(word)
            continue
        for piece in split_name(word):
            lowered = piece.lower()
            if lowered not in FILLER:
                found.append(stem(lowered))
    return found


def korean_terms(word: str) -> list[str]:
    """The English terms a Korean word holds (several keys may be found inside one word)."""
    found: list[str] = []
    rest = word
    for key in _KOREAN_KEYS:
        if " " in key or key not in rest:
            continue
        found += [stem(term) for term in KOREAN[key]]
        rest = rest.replace(key, " ")
    return found


def phrase_terms(text: str) -> list[str]:
    """`terms` plus the multi-word Korean keys and English phrases found in the text."""
    found = terms(text)
    for key in _KOREAN_KEYS:
        if " " in key and key in text:
            found += [stem(term) for term in KOREAN[key]]
    lowered = " ".join(text.lower().split())
    for phrase, words in PHRASES.items():
        if phrase in lowered:
            found += [stem(word) for word in words]
    return found


def expand(words: Iterable[str]) -> set[str]:
    """Terms with their synonyms."""
    found: set[str] = set()
    for word in words:
        found.add(word)
        found |= {stem(other) for other in SYNONYMS.get(word, ())}
    return found


def overlap(asked: Iterable[str], named: Iterable[str]) -> float:
    """How much of what was asked a name covers: the share of asked terms found among the
    name's terms or their synonyms (a prefix of four letters or more counts: unemp ~ unemploy)."""
    asked_set, named_set = set(asked), expand(named)
    if not asked_set:
        return 0.0
    hits = sum(1 for term in asked_set if _covered(term, named_set))
    return hits / len(asked_set)


def _covered(term: str, named: set[str]) -> bool:
    if term in named or term in {stem(s) for s in SYNONYMS.get(term, ())} & named:
        return True
    return any(
        len(short) >= 4 and long.startswith(short)
        for other in named
        for short, long in ((term, other), (other, term))
    )


MONTHS = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sep": 9,
    "sept": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}
ORDINALS = {
    "first": 1,
    "1st": 1,
    "second": 2,
    "2nd": 2,
    "third": 3,
    "3rd": 3,
    "fourth": 4,
    "4th": 4,
    "last": 4,
}
_YEAR = r"(1[0-9]{3}|2[01][0-9]{2})"
_MONTH_NAME = "|".join(sorted(MONTHS, key=len, reverse=True))
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("day", re.compile(rf"(?<![\d-]){_YEAR}-(\d{{1,2}})-(\d{{1,2}})(?![\d-])")),
    ("day_ko", re.compile(rf"{_YEAR}년\s*(\d{{1,2}})월\s*(\d{{1,2}})일")),
    ("month_ko", re.compile(rf"{_YEAR}년\s*(\d{{1,2}})월")),
    ("quarter_ko", re.compile(rf"{_YEAR}년\s*([1-4])\s*분기")),
    ("quarter_label", re.compile(rf"(?<!\w){_YEAR}\s?-?\s?[Qq]([1-4])(?!\w)")),
    ("quarter_q_first", re.compile(rf"(?<!\w)[Qq]([1-4])\s+(?:of\s+)?{_YEAR}(?!\d)")),
    (
        "quarter_words",
        re.compile(rf"\b({'|'.join(ORDINALS)})\s+quarter\s+(?:of\s+)?{_YEAR}\b", re.IGNORECASE),
    ),
    (
        "month_name_day",
        re.compile(rf"\b({_MONTH_NAME})\.?\s+(\d{{1,2}}),?\s+{_YEAR}\b", re.IGNORECASE),
    ),
    ("month_name", re.compile(rf"\b({_MONTH_NAME})\.?,?\s+(?:of\s+)?{_YEAR}\b", re.IGNORECASE)),
    ("year_month_name", re.compile(rf"\b{_YEAR}\s+({_MONTH_NAME})\b", re.IGNORECASE)),
    ("month_iso", re.compile(rf"(?<![\d-]){_YEAR}-(0[1-9]|1[0-2])(?![\d-])")),
    ("year", re.compile(rf"(?<![\d,.$€£₩]){_YEAR}(?:년)?(?!\d|[,.]\d|%|\s?(?:s\b|년대|'s))")),
]
_DECADE = re.compile(
    r"(?P<since>since\s+(?:the\s+)?)?(?<!\d)(1[0-9]{2}|2[01][0-9])0'?s\b"
    r"|(1[0-9]{2}|2[01][0-9])0\s?년대(?P<ko_since>\s?(?:이후|부터))?",
    re.IGNORECASE,
)
_CENTURY = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)\s+century\b|(\d{1,2})\s?세기", re.IGNORECASE)
# What stands between two periods that makes them a range: "1935 and 1954" after "between",
# "1983 to 2016", "2009–2016", "1950년부터 2000년까지".
_BETWEEN = re.compile(
    r"^\s*(?:and|to|through|thru|until|till|-|–|—|~|부터|에서)\s*$", re.IGNORECASE
)
_SINCE = re.compile(r"(?:since|after|from)\s+(?:the\s+)?(?:end\s+of\s+)?$", re.IGNORECASE)
_SINCE_KO = re.compile(r"^\s*(?:년\s*)?(?:이후|부터|이래)")


@dataclass(frozen=True)
class Period:
    """One period named: its normal label, its grain, and where it stands in the text."""

    label: str
    grain: str  # "year", "quarter", "month", "day"
    start: int
    end: int


def periods_in(text: str) -> list[Period]:
    """Every single period the text names, in order (a longer form wins over a year inside it)."""
    found: list[Period] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            span = match.span()
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue
            period = _period(kind, match)
            if period is not None:
                found.append(period)
                taken.append(span)
    return sorted(found, key=lambda period: period.start)


def _period(kind: str, match: re.Match[str]) -> Period | None:
    g = match.groups()
    start, end = match.span()
    if kind in ("day", "day_ko"):
        year, month, day = int(g[0]), int(g[1]), int(g[2])
        if not _valid(month, day):
            return None
        return Period(f"{year}-{month:02d}-{day:02d}", "day", start, end)
    if kind in ("month_ko", "month_iso"):
        year, month = int(g[0]), int(g[1])
        return Period(f"{year}-{month:02d}", "month", start, end) if 1 <= month <= 12 else None
    if kind in ("quarter_ko", "quarter_label"):
        return Period(f"{g[0]}Q{g[1]}", "quarter", start, end)
    if kind == "quarter_q_first":
        return Period(f"{g[1]}Q{g[0]}", "quarter", start, end)
    if kind == "quarter_words":
        return Period(f"{g[1]}Q{ORDINALS[g[0].lower()]}", "quarter", start, end)
    if kind == "month_name_day":
        month, day = MONTHS[g[0].lower()], int(g[1])
        if not _valid(month, day):
            return None
        return Period(f"{g[2]}-{month:02d}-{day:02d}", "day", start, end)
    if kind == "month_name":
        return Period(f"{g[1]}-{MONTHS[g[0].lower()]:02d}", "month", start, end)
    if kind == "year_month_name":
        return Period(f"{g[0]}-{MONTHS[g[1].lower()]:02d}", "month", start, end)
    return Period(g[0], "year", start, end)


def _valid(month: int, day: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= 31


def span_in(text: str) -> tuple[str | None, str | None] | None:
    """The range of periods the text names: (start, end), an end None for "since …"."""
    decade = _DECADE.search(text)
    if decade is not None:
        year = int((decade.group(2) or decade.group(3)) + "0")
        if decade.group("since") or decade.group("ko_since"):
            return str(year), None
        return str(year), str(year + 9)
    century = _CENTURY.search(text)
    found = periods_in(text)
    if century is not None:
        explicit = [p for p in found if p.grain == "year"]
        if len(explicit) >= 2:
            return explicit[0].label, explicit[-1].label
        number = int(century.group(1) or century.group(2))
        return str((number - 1) * 100 + 1), str(number * 100)
    for first, second in itertools.pairwise(found):
        if _BETWEEN.match(text[first.end : second.start]):
            return first.label, second.label
    for period in found:
        if _SINCE.search(text[: period.start]) or _SINCE_KO.match(text[period.end :]):
            return period.label, None
    return None


# A Korean particle closing a word ("나라가", "해는"): left off before the word is looked up.
PARTICLE = re.compile(r"(?:이|가|은|는|을|를|의|들|에는|에)$")


def covers_all(start: str | None, end: str | None, time: TimeAxis) -> bool:
    """Whether a range of periods holds every period of the table (an open side holds it)."""
    first, last = parse_label(time.first), parse_label(time.last)
    if first is None or last is None:
        return False
    if start is not None:
        begin = parse_label(start)
        if begin is None or (begin.year, begin.month, begin.day) > (
                first.year, first.month, first.day):
            return False
    if end is not None:
        finish = parse_label(end)
        if finish is None:
            return False
        month = {"year": 12, "quarter": finish.month + 2}.get(finish.grain, finish.month)
        day = finish.day if finish.grain in ("day", "second") else 31
        if (finish.year, month, day) < (last.year, last.month, last.day):
            return False
    return True
