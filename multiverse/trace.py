"""Every number traced (SPEC §6a): each number a deliverable states is looked up among the numbers
its sources and the computed facts hold; the ones found nowhere are listed (pure). The names it
writes are looked up the same way (`unsourced_names`).

A number matches when it is the same value as a known one, written with as many decimals or
fewer (`9.70` and `9.7` match a computed 9.6999; `21,933` matches a cell `21933`; `12%` matches
`12 %`). What is not a claim is not traced: the numbers of a citation (`assets/x.csv rows 2–5`),
of a file name or a link, of a list's numbering, and of code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_DOWN, ROUND_HALF_UP, Decimal, InvalidOperation

from pydantic import BaseModel, ConfigDict

# A number as people write it: thousands grouped by commas (1,234,567) or not, decimals, signs;
# whole: never a part of one ("2" of "2.1m") nor of a code ("Q1", "v2"). A word in another
# script may follow it at once: Korean writes its particles and units there ("16.2로",
# "1,200억"), where an ASCII-only test had read "16" and "1".
_NUMBER = re.compile(
    r"(?<![\w.])[-−+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![0-9A-Za-z_])(?!\.\d)"
)
_PERCENT = re.compile(r"\s?(?:%|％|퍼센트|percent\b|per cent\b)", re.IGNORECASE)
_EXPONENT = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?[eE][-+]?\d+(?![\w.])")
# Spans that are not claims: code, links and images, citations in parentheses naming a file,
# bare paths, and a line's list numbering.
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)
_LINK = re.compile(r"!?\[[^\]]*\]\([^)]*\)|<[^>\s]+>|https?://\S+")
_CITATION = re.compile(
    r"\((?:[^()\n]*?(?:[\w-]+/)+[\w.-]+\.\w{1,5}|[^()\n]*?\brows?\b|[^()\n]*?\blines?\b|[^()\n]*?행)"
    r"[^()\n]*\)"
)
_PATH = re.compile(
    r"(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:csv|tsv|md|txt|json|xlsx|docx|pdf|pptx|html?)\b"
)
_LIST_NUMBER = re.compile(r"^(\s*)\d+[.)](?=\s)", re.MULTILINE)
_RUN_ID = re.compile(r"run-\d{8}-\d{6}-\d{3}")


class Untraced(BaseModel):
    """A number of the deliverable found in no source and no computed fact."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    number: str
    context: str


# An amount's scale written after its number: English words and their abbreviations, and the
# Korean units (천 and 백 only before 만, 억 or 조: "2천억" is 2 × 1,000 × 10⁸). A model writing
# English from a Korean source converts "1,200억 원" into "120 billion won", which is traced.
_SCALE_WORDS = {"thousand": 3, "million": 6, "mn": 6, "billion": 9, "bn": 9, "trillion": 12,
                "tn": 12}  # fmt: skip
_KOREAN_UNITS = {"만": 4, "억": 8, "조": 12}
_SCALE = re.compile(r"\s?(?:(thousand|million|mn|billion|bn|trillion|tn)\b|(천|백)?\s?(만|억|조))",
                    re.IGNORECASE)  # fmt: skip


# The currency written at an amount: a sign or code right before its number (€6.9, US$3,
# KRW 120) or a code or word right after it and its scale (3.2 EUR, 6.9 billion euros,
# 1,200억 원). "$" is the US dollar; another dollar names itself (A$, C$) and is not read.
_CURRENCY_BEFORE = re.compile(r"(?:(?<![A-Za-z])(US\$|\$|€|£|¥|₩)|\b(EUR|USD|GBP|JPY|KRW|CNY))\s?$")
_CURRENCY_AFTER = re.compile(
    r"\s?(?:(EUR|USD|GBP|JPY|KRW|CNY|euros?|dollars?|yen|won|yuan)\b|(원|유로|달러|엔|위안))",
    re.IGNORECASE,
)
_CURRENCY_CODES = {"us$": "USD", "$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₩": "KRW",
                   "euro": "EUR", "euros": "EUR", "dollar": "USD", "dollars": "USD", "yen": "JPY",
                   "won": "KRW", "yuan": "CNY", "원": "KRW", "유로": "EUR", "달러": "USD",
                   "엔": "JPY", "위안": "CNY"}  # fmt: skip


def _currency(text: str, start: int, end: int) -> str | None:
    """The currency written at the number that starts at `start`, its scale ending at `end`."""
    before = _CURRENCY_BEFORE.search(text, max(0, start - 4), start)
    after = _CURRENCY_AFTER.match(text, end)
    found = (before[1] or before[2]) if before else (after[1] or after[2]) if after else None
    return None if found is None else _CURRENCY_CODES.get(found.lower(), found.upper())


def _scale(text: str, end: int) -> tuple[int, int] | None:
    """The power of ten a scale word right after a number (ending at `end`) multiplies it by,
    and where the word ends; None without one."""
    match = _SCALE.match(text, end)
    if match is None:
        return None
    if match[1]:
        return _SCALE_WORDS[match[1].lower()], match.end()
    return _KOREAN_UNITS[match[3]] + {"천": 3, "백": 2, None: 0}[match[2]], match.end()


@dataclass(frozen=True)
class Known:
    """The numbers the sources and the computed facts hold, as exact decimals, and the amounts
    they write with a scale (`1,200억`, `612 million`) as the whole numbers they mean."""

    values: frozenset[Decimal]
    amounts: frozenset[Decimal] = frozenset()
    # The values written without a scale after them (None: all): 18 of "18만" means 180,000,
    # never 18 million.
    bare: frozenset[Decimal] | None = None
    # The currencies each amount is written with (€6.9 billion: 6.9 × 10⁹ in EUR).
    priced: dict[Decimal, frozenset[str]] = field(default_factory=dict, compare=False)
    _rounded: dict[tuple[int, bool], frozenset[Decimal]] = field(default_factory=dict,
                                                                  compare=False)  # fmt: skip

    @classmethod
    def of(cls, texts: Iterable[str]) -> Known:
        """Every number written in these texts (sources, facts, the request)."""
        found: set[Decimal] = set()
        amounts: set[Decimal] = set()
        bare: set[Decimal] = set()
        priced: dict[Decimal, set[str]] = {}
        for written in texts:
            # A table's 1e-05, which a text prints whole; blanked, its "05" is no number of
            # its own.
            text = written
            for match in _EXPONENT.finditer(written):
                found.update((Decimal(match.group()), -Decimal(match.group())))
                text = text[: match.start()] + " " * len(match.group()) + text[match.end() :]
            run = Decimal(0)  # "1조 2천억": the parts of one Korean amount, added up
            last_end, last_power = -1, 99
            for match in _NUMBER.finditer(text):
                value = _decimal(match.group())
                if value is None:
                    continue
                found.add(value)
                found.add(-value)  # "fell by 3.2" states a change the source wrote as -3.2
                scale = _scale(text, match.end())
                currency = _currency(text, match.start(), scale[1] if scale else match.end())
                if currency is not None:
                    priced.setdefault(abs(value.scaleb(scale[0] if scale else 0)),
                                      set()).add(currency)  # fmt: skip
                if scale is None:
                    bare.update((value, -value))
                    last_end = -1
                    continue
                power, scale_end = scale
                amount = value.scaleb(power)
                joined = 0 <= match.start() - last_end <= 1 and power < last_power
                run = run + amount if joined else amount
                amounts.update((amount, run))
                last_end, last_power = scale_end, power
        return cls(frozenset(found), frozenset(amounts), frozenset(bare),
                   {amount: frozenset(codes) for amount, codes in priced.items()})  # fmt: skip

    @classmethod
    def exactly(cls, numbers: Iterable[float]) -> Known:
        """These computed numbers, at their full precision, either sign (not read from text:
        a float's `repr` may be in exponent form)."""
        found = {Decimal(repr(number)) for number in numbers}
        return cls(frozenset(found | {-value for value in found}))

    def holds_amount(self, printed: str, power: int) -> bool:
        """Whether a number written with a scale (`printed` × 10**power) is an amount the
        sources write, at its printed precision (at least two significant digits to round)."""
        value = _decimal(printed)
        if value is None:
            return True
        amount = value.scaleb(power)
        if amount in self.amounts or -amount in self.amounts:
            return True
        if len(printed.replace(",", "").replace(".", "").lstrip("-−+0")) < 2:
            return False  # "1 trillion" rounds too much to be a figure's rounding
        quantum = Decimal(1).scaleb(power - _places(printed))
        return any(_round(known, quantum, way) == abs(amount)
                   for known in self.amounts for way in _TIES)  # fmt: skip

    def in_another_currency(self, printed: str, power: int, currency: str) -> bool:
        """Whether the sources write this amount only with other currencies than `currency`
        (KRW 3.2 billion where they say €3.2 billion); False where they name none for it."""
        value = _decimal(printed)
        codes = self.priced.get(abs(value.scaleb(power))) if value is not None else None
        return codes is not None and currency not in codes

    def holds(self, printed: str, bare: bool = False) -> bool:
        """Whether a printed number is one of the known values at its printed precision
        (`bare`: one the sources write without a scale after it)."""
        value = _decimal(printed)
        if value is None or value in self._values(bare):
            return True
        places = _places(printed)
        if places == 0 and abs(value) < 1000:
            return False  # a small whole number is a claim of its own, never a rounding
        return value in self._at(places, bare)

    def _at(self, places: int, bare: bool) -> frozenset[Decimal]:
        """The known values rounded to `places` decimals (computed once per precision)."""
        if (places, bare) not in self._rounded:
            quantum = Decimal(1).scaleb(-places)
            self._rounded[places, bare] = frozenset(
                _round(known, quantum, way) for known in self._values(bare) for way in _TIES
            )
        return self._rounded[places, bare]

    def _values(self, bare: bool) -> frozenset[Decimal]:
        """The known values; with `bare`, those written without a scale after them."""
        return self.bare if bare and self.bare is not None else self.values


def claims(markdown: str) -> list[tuple[str, str]]:
    """The numbers a text states as claims, each with a little of its line for context."""
    return [(number, context) for number, context, _, _ in _claims(markdown)]


def _claims(markdown: str) -> list[tuple[str, str, int | None, str | None]]:
    """The claims with the power of ten of the scale written after each (None: no scale) and
    the currency written at each (None: none)."""
    text = _blank(markdown)
    found = []
    for match in _NUMBER.finditer(text):
        start, end = match.span()
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", end)
        line = markdown[line_start : line_end if line_end != -1 else len(markdown)]
        scale = _scale(text, end)
        currency = _currency(text, start, scale[1] if scale else end)
        found.append((match.group(), " ".join(line.split())[:160], scale[0] if scale else None,
                      currency))  # fmt: skip
    return found


def writes_any(markdown: str, values: Iterable[float], percents: Iterable[float] = ()) -> bool:
    """Whether a text writes one of these numbers, at the precision it prints it (`9.7` of
    9.70, `29.90 %` of 29.8969…): one of `values` without a percent sign, one of `percents`
    with one ("+22,317.5 %" does not state a change of 22,317.5). A small whole number is not
    read as a rounding."""
    plain, percent = Known.exactly(values), Known.exactly(percents)
    text = _blank(markdown)
    for match in _NUMBER.finditer(text):
        number = match.group()
        if _decimal(number) is None:
            continue
        known = percent if _PERCENT.match(text, match.end()) else plain
        if known.holds(number):
            return True
    return False


def untraced(markdown: str, known: Known) -> list[Untraced]:
    """The numbers of a deliverable that no source and no computed fact holds, either as
    written or as the amount it means (with its scale: "120 billion" of "1,200억"; without
    one: "180,000" of "18만"), and the amounts written with a currency the sources give them
    only in others ("KRW 3.2 billion" of "€3.2 billion")."""
    return [
        Untraced(number=number, context=context)
        for number, context, power, currency in _claims(markdown)
        # A number written with a scale is its amount, or a value the sources write bare
        # (a table's 6.9 under "€ bn"); never the number of another scale ("18만" is not 18
        # million).
        if (not known.holds(number, bare=power is not None)
            and not known.holds_amount(number, power or 0))
        or (currency is not None and known.in_another_currency(number, power or 0, currency))
    ]  # fmt: skip


def with_untraced(
    markdown: str, known: Known, heading: str, intro: str, bold: bool = False
) -> tuple[str, list[Untraced]]:
    """The deliverable with a closing section listing each untraced number with its context
    (unchanged when every number is traced), and those numbers."""
    missing = untraced(markdown, known)
    if not missing:
        return markdown, []
    title = f"**{heading}**" if bold else f"## {heading}"
    lines = [title, "", intro, "", *(f"- **{item.number}** — {item.context}" for item in missing)]
    return markdown.rstrip() + "\n\n" + "\n".join(lines) + "\n", missing


def _blank(markdown: str) -> str:
    """The text with every span that is not a claim replaced by spaces (offsets kept)."""
    text = markdown
    for pattern in (_CODE, _LINK, _CITATION, _RUN_ID, _PATH):
        text = pattern.sub(lambda m: " " * len(m.group()), text)
    return _LIST_NUMBER.sub(lambda m: m.group(1) + " " * (len(m.group()) - len(m.group(1))), text)


def _decimal(printed: str) -> Decimal | None:
    cleaned = printed.replace(",", "").replace("−", "-").lstrip("+")
    try:
        return Decimal(cleaned)
    except InvalidOperation:
        return None


def _places(printed: str) -> int:
    _, _, decimals = printed.partition(".")
    return len(decimals)


# A value exactly halfway may print either way: 2.345 is a binary float a little above it
# (printed 2.35), 274877906944.5825 one a little below; both roundings are the value's.
_TIES = (ROUND_HALF_UP, ROUND_HALF_DOWN)


def _round(value: Decimal, quantum: Decimal, way: str = ROUND_HALF_UP) -> Decimal:
    try:
        return value.quantize(quantum, rounding=way)
    except InvalidOperation:
        return value


# -- names ---------------------------------------------------------------------------------
# A name as Latin-script text writes it mid-sentence: a capitalised word ("Acme", "TechNova",
# "O'Neil"); all-capital abbreviations (GDP, USD) and one-letter words are not read as names.
_CAPITALISED = re.compile(r"(?<![\w'’-])[A-Z][a-z][A-Za-z'’-]*")
_LETTERS = re.compile(r"[A-Za-z]+")
# Before a sentence's first word: the line's start, its list or quote marks, or a sentence end.
_OPENING = re.compile(r"(?:^|[.!?:;]\s*|[-*+>]\s+|\d+[.)]\s+|[*_]{1,2}|[\"“‘'(\[|]\s*)$")
_TABLE_RULE = re.compile(r"\s*\|?[\s:|-]+\|?\s*")  # a table's `|---|:--|` line
# Capitalised words, one after another; a word ending a sentence ("States. It") ends the run,
# initials ("U.S. Steel", "J. Smith") do not.
_NAME_RUN = re.compile(r"(?:(?:[A-Z](?:\.[A-Z])*\.|[A-Z][A-Za-z'’&-]*)\s)*[A-Z][A-Za-z'’&-]*")
# An abbreviation a known text writes ("US", "U.S.", "EU"): a name it stands for is known.
_ABBREVIATION = re.compile(r"\b(?:[A-Z]\.){2,}|\b[A-Z]{2,}\b")
_POSSESSIVE = re.compile(r"['’]s?$")
_CALENDAR = frozenset((
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday",
))  # fmt: skip


def unsourced_names(markdown: str, known: Iterable[str]) -> list[str]:
    """The names a text writes mid-sentence that no known text (the sources, the request, the
    computed facts) holds in any case, as written, in order: a model's invented company or
    place. A word the text itself also writes in lower case is a word, not a name; a name whose
    initials a known text writes as an abbreviation ("the United States" where the request says
    "US") is known; a sentence's first word, headings and a table's header are not judged."""
    texts = list(known)
    known_words = {word.lower() for text in texts for word in _LETTERS.findall(text)}
    abbreviations = {
        found.replace(".", "") for text in texts for found in _ABBREVIATION.findall(text)
    }
    text = _blank(markdown)
    own_lower = {word for word in _LETTERS.findall(text) if word.islower()}
    found: list[str] = []
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if line.lstrip().startswith("#") or _is_table_header(lines, n):
            continue
        for match in _CAPITALISED.finditer(line):
            if _OPENING.search(line[: match.start()]):
                continue
            word = _LETTERS.findall(match.group())[0].lower()  # "TechNova" of "TechNova's"
            if word in known_words or word in own_lower or word in _CALENDAR:
                continue
            name = _whole_name(line, match.start(), match.end())
            if name not in found and _initials(name) not in abbreviations:
                found.append(name)
    return found


def _is_table_header(lines: list[str], n: int) -> bool:
    """Whether line `n` is a markdown table's header (the line above its `|---|` rule)."""
    return (
        lines[n].lstrip().startswith("|")
        and n + 1 < len(lines)
        and _TABLE_RULE.fullmatch(lines[n + 1]) is not None
    )


def _initials(name: str) -> str:
    """The abbreviation a name's capitalised words would make ("US" of "the United States")."""
    words = [word for word in name.split() if word[:1].isupper() and word.lower() != "the"]
    return "".join(word[0] for word in words) if len(words) > 1 else ""


def _whole_name(line: str, start: int, end: int) -> str:
    """The capitalised words around a flagged one ("Acme" of "Acme Corporation"), without a
    possessive ending ("Acme" of "Acme's", "the States" of "the States'")."""
    for match in _NAME_RUN.finditer(line):
        if match.start() <= start and end <= match.end():
            return _POSSESSIVE.sub("", match.group().rstrip("."))
    return _POSSESSIVE.sub("", line[start:end])
