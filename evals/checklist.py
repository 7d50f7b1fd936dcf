"""The deliverable checklist: pure functions from texts to verdicts (no files, no model).

(i) figures traceable to the assets, (ii) a chart with the CSV's countries and revenue,
(iii) length kept, (iv) a recommendation with reasons.
"""

from __future__ import annotations

import csv
import html
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

# A number not glued to an identifier: "P4-S02", "run-2026…-001", "facts_01" are not figures.
_NUMBER = re.compile(r"(?<![A-Za-z_\d.])(?<![A-Za-z0-9]-)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?!\d)")
_LIST_NUMBER = re.compile(r"^(\s*(?:#{1,6}\s+)?)\d+(?:\.\d+)*[.)]\s+", re.MULTILINE)
_FENCE = re.compile(r"```.*?```", re.DOTALL)
_CODE = re.compile(r"`[^`\n]*`")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_URL = re.compile(r"https?://\S+")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_STYLE = re.compile(r"<style\b.*?</style>", re.DOTALL | re.IGNORECASE)
_SCRIPT = re.compile(r"<script\b[^>]*>(.*?)</script>", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")
_SVG = re.compile(r"<svg\b.*?</svg>", re.DOTALL | re.IGNORECASE)
_HEADING = re.compile(r"^#{1,6}\s+(.*)$")

_REC = re.compile(r"recommend|권고|권장|추천|제언|제안", re.IGNORECASE)
_REASON = re.compile(
    r"\bbecause\b|\bsince\b|\bgiven\b|as a result|due to|\btherefore\b|thanks to"
    r"|때문|따라서|그러므로|이유",
    re.IGNORECASE,
)
# Words the request asks for: 450 a page (two pages ≈ 900), a short note ≈ 250.
_LENGTHS = (
    (re.compile(r"\b(three|3)[- ]pages?\b|세\s*페이지|3\s*페이지", re.I), 1350),
    (re.compile(r"\b(two|2)[- ]pages?\b|두\s*페이지|2\s*페이지|두\s*장|2\s*장", re.I), 900),
    (re.compile(r"\b(one|1|a single)[- ]page\b|한\s*페이지|1\s*페이지|한\s*장|1\s*장", re.I), 450),
    (re.compile(r"\b(short|brief) (note|summary|memo)\b|짧은|간단한", re.I), 250),
)
LENGTH_TOLERANCE = 0.5


def _value(whole: str, fraction: str | None) -> float:
    return float(whole.replace(",", "") + (fraction or ""))


def all_numbers(text: str) -> set[float]:
    """Every number written in a text, normalised (1,200 = 1200; 6.90 = 6.9)."""
    return {_value(m[1], m[2]) for m in _NUMBER.finditer(text)}


def _prose(markdown: str) -> str:
    """The markdown without code, link targets, URLs, comments and list numbering."""
    text = _COMMENT.sub(" ", _FENCE.sub(" ", markdown))
    text = _URL.sub(" ", _LINK_TARGET.sub("]", _CODE.sub(" ", text)))
    return _LIST_NUMBER.sub(r"\1", text)


def _is_figure(whole: str, fraction: str | None) -> bool:
    """At least two significant digits, and not a year."""
    if fraction is None and "," not in whole and 1900 <= int(whole) <= 2100:
        return False
    digits = (whole + (fraction or "")).replace(",", "").replace(".", "").lstrip("0")
    return len(digits) >= 2


def figures(markdown: str) -> list[str]:
    """The figures of a deliverable as written: ≥2 significant digits, no years or numbering."""
    return [m[0] for m in _figure_matches(_prose(markdown))]


def _figure_matches(prose: str) -> Iterator[re.Match[str]]:
    return (m for m in _NUMBER.finditer(prose) if _is_figure(m[1], m[2]))


@dataclass(frozen=True)
class FigureCheck:
    """How many of the deliverable's figures appear in the assets' text."""

    found: int
    total: int
    missing: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every figure was found (a deliverable with no figure passes trivially)."""
        return self.found == self.total


def asset_numbers(name: str, text: str) -> set[float]:
    """Every number of an asset; a CSV's commas separate cells, they are no thousands marks."""
    if not name.lower().endswith(".csv"):
        return all_numbers(text)
    cells = (cell for row in csv.reader(io.StringIO(text)) for cell in row)
    return set().union(*(all_numbers(cell) for cell in cells))


# A scale written after a number: English words, and the Korean units (천/백 only before
# 만/억/조: "2천억" is 2 × 10³ × 10⁸). The judge reads them itself rather than through the
# product's trace (multiverse.trace), so that a mistake there is not judged right here.
_SCALE = re.compile(r"\s?(?:(thousand|million|billion|trillion|bn|mn)\b|([천백])?\s?([만억조]))",
                    re.IGNORECASE)  # fmt: skip
_POWERS = {"thousand": 3, "million": 6, "mn": 6, "billion": 9, "bn": 9, "trillion": 12,
           "만": 4, "억": 8, "조": 12, "천": 3, "백": 2}  # fmt: skip


def _power(text: str, end: int) -> int | None:
    """The power of ten of a scale written right after a number that ends at `end`."""
    found = _SCALE.match(text, end)
    if found is None:
        return None
    if found[1]:
        return _POWERS[found[1].lower()]
    return _POWERS[found[3]] + (_POWERS[found[2]] if found[2] else 0)


def amounts(text: str) -> set[float]:
    """The amounts a text writes with a scale, as the whole numbers they mean (1,200억 =
    1.2e11, 612 million = 6.12e8), rounded to 6 significant digits."""
    return {_amount(_value(m[1], m[2]), power) for m in _NUMBER.finditer(text)
            if (power := _power(text, m.end())) is not None}  # fmt: skip


def _amount(value: float, power: int) -> float:
    return float(f"{value * 10**power:.6g}")


def check_figures(deliverable: str, assets: dict[str, str]) -> FigureCheck:
    """Look every figure of the deliverable up in the assets (values compared, not spellings):
    as written, or as the amount it means where the assets write that amount with a scale
    ("120 billion won" and "120,000,000,000 won" of "1,200억 원"; never "1.2 trillion")."""
    known: set[float] = set().union(*(asset_numbers(n, t) for n, t in assets.items()))
    meant: set[float] = set().union(*(amounts(text) for text in assets.values()))
    prose = _prose(deliverable)
    written, missing = [], []
    for match in _figure_matches(prose):
        value, power = _value(match[1], match[2]), _power(prose, match.end())
        written.append(match[0])
        if value not in known and _amount(value, power or 0) not in meant:
            missing.append(match[0])
    return FigureCheck(len(written) - len(missing), len(written), sorted(set(missing)))


def _split(raw: str) -> tuple[str, str | None]:
    whole, dot, fraction = raw.partition(".")
    return whole, (dot + fraction) if dot else None


def visible_text(markup: str) -> str:
    """The text of an SVG or HTML chart: no tags, styles or pygal's layout config."""
    text = _STYLE.sub(" ", _COMMENT.sub(" ", markup))
    # pygal's config script holds layout numbers (height 480…), not data; other chart
    # libraries keep their data in scripts, so those stay.
    text = _SCRIPT.sub(lambda m: " " if "window.pygal" in m[1] else f" {m[1]} ", text)
    return html.unescape(_TAG.sub(" ", text))


def chart_parts(name: str, markup: str) -> dict[str, str]:
    """The charts in a file: an SVG whole; in a page, its inline SVGs, else a scripted chart.

    A page's prose is never taken for a chart: a report that names the countries and their
    revenue in its text has not drawn them.
    """
    if name.lower().endswith(".svg"):
        return {name: markup}
    inline = _SVG.findall(markup)
    if inline:
        return {f"{name}#svg{i}": svg for i, svg in enumerate(inline, 1)}
    if re.search(r"<canvas\b|<script\b[^>]*>\s*\S", markup, re.IGNORECASE):
        return {name: markup}
    return {}


@dataclass(frozen=True)
class CsvSeries:
    """What a chart of the CSV's revenue by country must show."""

    countries: list[str]
    values: list[float]  # every revenue cell
    totals: dict[str, float]  # revenue summed per country


def revenue_by_country(csv_text: str) -> CsvSeries:
    """The countries and revenue values of a CSV (columns named like region/country, revenue)."""
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    header = list(rows[0]) if rows else []
    where = next((h for h in header if re.search(r"country|region|market", h, re.I)), None)
    money = next((h for h in header if re.search(r"revenue|sales", h, re.I)), None)
    if where is None or money is None:
        return CsvSeries([], [], {})
    countries: list[str] = []
    values: list[float] = []
    totals: dict[str, float] = {}
    for row in rows:
        country, value = row[where].strip(), float(row[money].replace(",", ""))
        if country not in countries:
            countries.append(country)
        values.append(value)
        totals[country] = round(totals.get(country, 0.0) + value, 6)
    return CsvSeries(countries, values, totals)


@dataclass(frozen=True)
class ChartCheck:
    """The best chart found and what of the CSV it shows."""

    passed: bool
    file: str | None = None
    charts: int = 0
    countries_found: list[str] = field(default_factory=list)
    values_found: int = 0
    values_total: int = 0


def check_chart(charts: dict[str, str], series: CsvSeries) -> ChartCheck:
    """Right chart: it names every country and shows half the revenue cells, or every total."""
    best = ChartCheck(False, charts=len(charts), values_total=len(series.values))
    for name, markup in sorted(charts.items()):
        text = visible_text(markup)
        shown = all_numbers(text)
        named = [c for c in series.countries if c.lower() in text.lower()]
        cells = sum(1 for value in series.values if value in shown)
        totals = bool(series.totals) and all(v in shown for v in series.totals.values())
        passed = (
            bool(series.countries)
            and len(named) == len(series.countries)
            and (2 * cells >= len(series.values) or totals)
        )
        found = ChartCheck(passed, name, len(charts), named, cells, len(series.values))
        score = (passed, len(named), cells)
        if score > (best.passed, len(best.countries_found), best.values_found):
            best = found
    return best


def target_words(request: str) -> int | None:
    """The words a request asks for (450 a page: two pages ≈ 900; short note ≈ 250), if it says."""
    return next((words for pattern, words in _LENGTHS if pattern.search(request)), None)


def word_count(markdown: str) -> int:
    """Words of the text (Korean words are space-separated eojeol), markup not counted."""
    return sum(1 for token in _prose(markdown).split() if re.search(r"\w", token))


@dataclass(frozen=True)
class LengthCheck:
    """Words written against words asked for."""

    words: int
    target: int | None
    passed: bool | None  # None: the request names no length


def check_length(deliverable: str, request: str) -> LengthCheck:
    """Within ±50% of the length the request asks for."""
    words, target = word_count(deliverable), target_words(request)
    if target is None:
        return LengthCheck(words, None, None)
    return LengthCheck(words, target, abs(words - target) <= LENGTH_TOLERANCE * target)


@dataclass(frozen=True)
class RecommendationCheck:
    """A recommendation, and a reason given with it."""

    recommendation: bool
    reason: bool
    evidence: str = ""

    @property
    def passed(self) -> bool:
        """Both a recommendation and a reason with it."""
        return self.recommendation and self.reason


def _blocks(markdown: str) -> list[tuple[str, str]]:
    """(heading, body) of each section with its sub-sections, and ("", paragraph) of each."""
    lines = markdown.splitlines()
    blocks: list[tuple[str, str]] = []
    for start, line in enumerate(lines):
        heading = _HEADING.match(line)
        if heading is None:
            continue
        level = _level(line)
        end = next(
            (i for i in range(start + 1, len(lines)) if _level(lines[i]) in range(1, level + 1)),
            len(lines),
        )
        blocks.append((heading[1], "\n".join(lines[start + 1 : end])))
    paragraphs = re.split(r"\n\s*\n", markdown)
    return blocks + [("", p) for p in paragraphs if not _HEADING.match(p.strip())]


def _level(line: str) -> int:
    """The level of a markdown heading line, 0 for any other line."""
    return len(line) - len(line.lstrip("#")) if _HEADING.match(line) else 0


def check_recommendation(deliverable: str) -> RecommendationCheck:
    """A recommendation heading (its section) or sentence (its paragraph) that gives a reason."""
    seen = False
    for title, body in _blocks(deliverable):
        # A section counts by its heading; its body is searched for the reason only.
        if _REC.search(title) or (not title and _REC.search(body)):
            seen = True
            if _REASON.search(body):
                where = f"{title}: {body}" if title else body
                return RecommendationCheck(True, True, _excerpt(where))
    return RecommendationCheck(seen, False)


def _excerpt(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
