"""Extraction from markdown or plain text: headings, sections, sentences, figures, key sentences.

Pure functions over text. Key sentences are scored extractively (term frequency, position, cue
words, figures), which works the same for Korean and English.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from executor.builtin.text import (
    FoundFigure,
    clean_inline,
    ends_sentence,
    find_figures,
    shorten,
    split_sentences,
    terms,
)
from executor.builtin.text import word_count as count_words

_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^(=+|-+)\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_FENCE = re.compile(r"^\s*(```|~~~)")
_TABLE_LINE = re.compile(r"^\s*\|")
_CUES = re.compile(
    r"\b(?:in summary|overall|key|main|significant|important|conclu\w*|therefore|expect\w*|"
    r"forecast\w*|recommend\w*|should|strateg\w*|total|largest|record)\b",
    re.IGNORECASE,
)
_SUMMARY_HEADING = re.compile(
    r"summary|overview|conclusion|highlights|key findings|요약|개요|결론|핵심", re.IGNORECASE
)
_KOREAN_CUES = ("요약", "결론", "핵심", "중요", "따라서", "전망", "예상", "필요", "전략", "최대")


class Frozen(BaseModel):
    """Base of extraction results: plain, immutable data."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Heading(Frozen):
    """A heading and its level (1 for `#`)."""

    level: int
    text: str


class Sentence(Frozen):
    """A sentence of prose, where it sits, and the figures it holds."""

    text: str
    position: int
    section: int
    first_in_section: bool
    in_summary: bool
    figures: list[FoundFigure]


class ScoredSentence(Frozen):
    """A key sentence and its extractive score."""

    text: str
    score: float
    position: int


class TextFacts(Frozen):
    """Everything extracted from one text file."""

    title: str
    word_count: int
    headings: list[Heading]
    sentences: list[Sentence]
    table_lines: list[list[str]]


@dataclass
class _Scan:
    headings: list[Heading] = field(default_factory=list)
    paragraphs: list[tuple[int, str]] = field(default_factory=list)
    tables: list[list[str]] = field(default_factory=list)
    current: list[str] = field(default_factory=list)
    in_table: bool = False
    skip_next: bool = False

    def flush(self) -> None:
        """End the paragraph being collected."""
        if self.current:
            self.paragraphs.append((len(self.headings), " ".join(self.current)))
            self.current = []

    def heading(self, level: int, text: str) -> None:
        """Record a heading; it ends the paragraph before it."""
        self.flush()
        self.headings.append(Heading(level=level, text=clean_inline(text)))


def _strip_front_matter(lines: list[str]) -> list[str]:
    if lines and lines[0].strip() == "---":
        for index in range(1, min(len(lines), 60)):
            if lines[index].strip() in ("---", "..."):
                return lines[index + 1 :]
    return lines


def strip_front_matter(text: str) -> str:
    """The text without a leading `---` front-matter block (e.g. `mode: simple`)."""
    return "\n".join(_strip_front_matter(text.splitlines()))


def _scan(text: str) -> _Scan:
    scan = _Scan()
    fenced = False
    lines = _strip_front_matter(text.splitlines())
    for index, raw in enumerate(lines):
        line = raw.strip()
        if _FENCE.match(raw):
            fenced = not fenced
            scan.flush()
        elif fenced or scan.skip_next:
            scan.skip_next = False
        elif _TABLE_LINE.match(raw):
            scan.flush()
            if not scan.in_table:
                scan.tables.append([])
            scan.in_table = True
            scan.tables[-1].append(line)
            continue
        elif atx := _ATX.match(line):
            scan.heading(len(atx.group(1)), atx.group(2))
        elif _is_setext(line, lines[index + 1] if index + 1 < len(lines) else "", scan):
            scan.heading(1 if lines[index + 1].strip().startswith("=") else 2, line)
            scan.skip_next = True
        else:
            _body_line(scan, line)
        scan.in_table = False
    scan.flush()
    return scan


def _is_setext(line: str, following: str, scan: _Scan) -> bool:
    return bool(line) and not scan.current and bool(_SETEXT.match(following.strip()))


def _body_line(scan: _Scan, line: str) -> None:
    if not line or line.startswith("<!--"):
        scan.flush()
        return
    body = line.lstrip(">").strip()
    if _LIST_ITEM.match(body) or (scan.current and ends_sentence(scan.current[-1])):
        scan.flush()
        body = _LIST_ITEM.sub("", body)
    if body:
        scan.current.append(body)


def extract_text(text: str, fallback_title: str) -> TextFacts:
    """Headings, sentences with their figures, table lines, title and word count of a text."""
    scan = _scan(text)
    sentences: list[Sentence] = []
    seen_sections: set[int] = set()
    summaries = {i + 1 for i, h in enumerate(scan.headings) if _SUMMARY_HEADING.search(h.text)}
    for section, paragraph in scan.paragraphs:
        for piece in split_sentences(clean_inline(paragraph)):
            first = section not in seen_sections
            seen_sections.add(section)
            sentences.append(
                Sentence(
                    text=piece,
                    position=len(sentences),
                    section=section,
                    first_in_section=first,
                    in_summary=section in summaries,
                    figures=find_figures(piece),
                )
            )
    title = _title(scan.headings, sentences, fallback_title)
    return TextFacts(
        title=title,
        word_count=count_words(text),
        headings=scan.headings,
        sentences=sentences,
        table_lines=scan.tables,
    )


def _title(headings: list[Heading], sentences: list[Sentence], fallback: str) -> str:
    top = [h for h in headings if h.level == 1] or headings
    if top:
        return shorten(top[0].text, 120)
    if sentences:
        return shorten(sentences[0].text, 80)
    return fallback


def key_sentences(sentences: list[Sentence], limit: int) -> list[ScoredSentence]:
    """The `limit` best sentences, best first (ties keep document order)."""
    bags = [terms(sentence.text) for sentence in sentences]
    frequency = Counter(term for bag in bags for term in set(bag))
    top = max(frequency.values(), default=1)
    scored: list[ScoredSentence] = []
    for sentence, bag in zip(sentences, bags, strict=True):
        if len(sentence.text) < 15 or len(bag) < 2:
            continue
        distinct = set(bag)
        score = sum(frequency[t] for t in distinct) / top / math.sqrt(len(distinct))
        score += _position_bonus(sentence) + _cue_bonus(sentence.text)
        if any(f.kind != "year" for f in sentence.figures):
            score += 0.25
        if len(bag) > 45:
            score *= 0.6
        scored.append(
            ScoredSentence(text=sentence.text, score=round(score, 6), position=sentence.position)
        )
    scored.sort(key=lambda s: (-s.score, s.position))
    return scored[:limit]


def _position_bonus(sentence: Sentence) -> float:
    bonus = 0.3 if sentence.in_summary else 0.0
    if sentence.position == 0:
        return bonus + 0.3
    return bonus + (0.15 if sentence.first_in_section else 0.0)


def _cue_bonus(text: str) -> float:
    hits = len(_CUES.findall(text)) + sum(text.count(word) for word in _KOREAN_CUES)
    return min(hits, 2) * 0.2
