"""What the offline engine reads in a request: deliverables, charts, outside information, language.

Keyword readings, English and Korean, deliberately simple and predictable: the builtin planner
uses them to shape its plans and proposal; a model-backed planner does not need them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from offline.asks import CHART_WORDS, chart_words, script_language

__all__ = ["CHART_WORDS", "chart_words", "script_language"]  # read here by older callers

# Deliverable keyword -> the label used in plans and proposals (first match wins the order).
DELIVERABLES = (
    ("memo", "memo"),
    ("report", "report"),
    ("presentation", "presentation"),
    ("slides", "presentation"),
    ("deck", "presentation"),
    ("strategy", "strategy"),
    ("plan", "plan"),
    ("analysis", "analysis"),
    ("summary", "summary"),
    ("보고서", "report"),
    ("리포트", "report"),
    ("메모", "memo"),
    ("발표", "presentation"),
    ("프레젠테이션", "presentation"),
    ("전략", "strategy"),
    ("기획", "plan"),
    ("분석", "analysis"),
    ("요약", "summary"),
)
PRIMARY_DELIVERABLES = ("memo", "report", "presentation")
OUTSIDE_WORDS = (
    "market",
    "competitor",
    "trend",
    "latest",
    "web",
    "industry",
    "news",
    "시장",
    "경쟁",
    "최신",
    "동향",
    "트렌드",
    "뉴스",
)
LANGUAGES = (
    ("english", "English"),
    ("영어", "English"),
    ("korean", "Korean"),
    ("한국어", "Korean"),
    ("한글", "Korean"),
    ("japanese", "Japanese"),
    ("일본어", "Japanese"),
    ("chinese", "Chinese"),
    ("중국어", "Chinese"),
)
FORMAT_WORDS = (
    "markdown",
    "table",
    "bullet",
    "html",
    "pdf",
    "docx",
    "표로",
    "목록으로",
    "마크다운",
)
_PAGES = re.compile(r"(\d+)\s*(?:-\s*)?(?:pages?\b|페이지|쪽|장\b)", re.IGNORECASE)
_WORDS = re.compile(r"(\d[\d,]*)\s*(?:-\s*)?(?:words?\b|단어|자\b)", re.IGNORECASE)


def _occurs(word: str, folded: str) -> bool:
    """English words match at a word start ("plans", not "explanation"), a trailing space asks
    for a whole word ("no " is not "now"); other scripts match anywhere."""
    if word.isascii():
        end = r"\b" if word.endswith(" ") else ""
        return re.search(r"(?<![a-z])" + re.escape(word.strip()) + end, folded) is not None
    return word in folded


def _found(text: str, words: tuple[str, ...]) -> list[str]:
    folded = text.casefold()
    return [word for word in words if _occurs(word, folded)]


def deliverables(text: str) -> list[str]:
    """The deliverables the text names, without repeats.

    English words count as whole singular words ("summarize the reports into a memo" asks for
    a memo). A memo, report or presentation is the deliverable; strategy, plan, analysis and
    summary count only without one ("market analysis report" asks for a report).
    """
    folded = text.casefold()
    labels: list[str] = []
    for word, label in DELIVERABLES:
        found = (
            re.search(rf"(?<![a-z]){re.escape(word)}(?![a-z])", folded) is not None
            if word.isascii()
            else word in folded
        )
        if found and label not in labels:
            labels.append(label)
    primary = [label for label in labels if label in PRIMARY_DELIVERABLES]
    return primary or labels


def outside_words(text: str) -> list[str]:
    """The words asking for outside (market, web, recent) information."""
    return _found(text, OUTSIDE_WORDS)


def named_language(text: str) -> str | None:
    """A language the text asks for ("in English", "한국어로"), else any language it names."""
    folded = text.casefold()
    for word, label in LANGUAGES:
        asked = rf"(?:\bin(?:to)? {word}\b|{word}\s*(?:로|으로))"
        if re.search(asked, folded):
            return label
    return next((label for word, label in LANGUAGES if _occurs(word, folded)), None)


def length_limit(text: str) -> str | None:
    """A length limit the text states ("2-page", "500 words", "3페이지"), else None."""
    pages = _PAGES.search(text)
    if pages:
        count = int(pages.group(1))
        return f"at most {count} page{'s' if count != 1 else ''}"
    words = _WORDS.search(text)
    if words:
        return f"at most {words.group(1)} words"
    return None


def format_words(text: str) -> list[str]:
    """Format words the text uses (markdown, table, bullet, …)."""
    return _found(text, FORMAT_WORDS)


@dataclass(frozen=True)
class Reading:
    """Everything the offline engine reads in one request."""

    deliverables: list[str]
    charts: list[str]
    outside: list[str]
    language: str
    length: str | None
    formats: list[str]


def read_request(text: str) -> Reading:
    """Read a request (English or Korean) into its deliverables, visuals, language and format."""
    return Reading(
        deliverables=deliverables(text) or ["report"],
        charts=chart_words(text),
        outside=outside_words(text),
        language=named_language(text) or script_language(text),
        length=length_limit(text),
        formats=format_words(text),
    )


def first_line(text: str, limit: int = 160) -> str:
    """The first non-empty line of a text, shortened to `limit` characters."""
    line = next((row.strip() for row in text.splitlines() if row.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
