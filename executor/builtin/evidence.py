"""Evidence: what each source says (points, figures), how documents cite it, how it is read back;
the passages of a source text with where each stands; and the sources' own conclusions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import Field

from executor.builtin.extract import Frozen, Heading, strip_front_matter
from executor.builtin.tables import TableFacts, markdown_table, parse_markdown_table, parse_number
from executor.builtin.text import (
    FigureKind,
    clean_inline,
    normalized,
    parse_figure,
    rank_key,
    similar,
    split_sentences,
    unit_family,
)

BANNER_MARK = "Produced offline by the multiverse builtin engine"
BANNER = f"> {BANNER_MARK} (no language model was used)."
FIGURE_HEADER = ["Value", "Context", "Source"]
_POINT = re.compile(
    r"^\s*(?:[-*+]|\d+[.)])\s+(?P<text>.+?)\s+_\(source: `(?P<source>[^`]+)`\)_\s*$"
)
_SOURCE_HEADING = re.compile(r"^(?:#{2,4}|[-*]) Source: `(?P<source>[^`]+)`(?: — (?P<title>.+))?$")


class Point(Frozen):
    """A statement taken from a source."""

    text: str
    source: str


class Figure(Frozen):
    """A figure, the sentence it sits in, and its source."""

    value: str
    magnitude: float
    kind: FigureKind
    context: str
    source: str


class Digest(Frozen):
    """What one source file holds, as far as the engine can tell."""

    source: str
    kind: str
    title: str
    facts: list[str] = Field(default_factory=list)
    headings: list[Heading] = Field(default_factory=list)
    points: list[Point] = Field(default_factory=list)
    figures: list[Figure] = Field(default_factory=list)
    table: TableFacts | None = None
    note: str = ""


def cite(source: str) -> str:
    """The citation suffix of a point."""
    return f" _(source: `{source}`)_"


def point_line(point: Point, marker: str = "-") -> str:
    """A point as a cited bullet (or numbered item)."""
    return f"{marker} {' '.join(point.text.split())}{cite(point.source)}"


def figures_table(figures: Iterable[Figure]) -> str:
    """The figures as a `Value | Context | Source` table."""
    rows = [[f.value, f.context, f"`{f.source}`"] for f in figures]
    return markdown_table(FIGURE_HEADER, rows)


def source_heading(level: int, digest: Digest) -> str:
    """The heading that opens a source's section (level 0: a bullet naming the source)."""
    marker = "#" * level if level else "-"
    return f"{marker} Source: `{digest.source}` — {digest.title}"


def is_builtin_document(text: str) -> bool:
    """Whether a text was written by this engine (its banner is near the top)."""
    return BANNER_MARK in text[:600]


def read_document(text: str) -> list[Digest]:
    """The evidence a builtin document cites, one digest per original source, in order."""
    titles: dict[str, str] = {}
    points: dict[str, list[Point]] = {}
    figures: dict[str, list[Figure]] = {}
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if heading := _SOURCE_HEADING.match(line):
            titles.setdefault(heading["source"], heading["title"] or heading["source"])
        elif point := _POINT.match(line):
            found = Point(text=point["text"], source=point["source"])
            points.setdefault(found.source, []).append(found)
        elif _is_figure_header(line):
            for figure in _figure_rows(lines[index:]):
                figures.setdefault(figure.source, []).append(figure)
    order = list(dict.fromkeys([*titles, *points, *figures]))
    return [
        Digest(
            source=source,
            kind="cited",
            title=titles.get(source, _basename(source)),
            points=points.get(source, []),
            figures=figures.get(source, []),
        )
        for source in order
    ]


def _is_figure_header(line: str) -> bool:
    return (
        line.startswith("|") and [c.strip() for c in line.strip("| ").split("|")] == FIGURE_HEADER
    )


def _basename(source: str) -> str:
    return source.rsplit("/", 1)[-1]


def _figure_rows(lines: list[str]) -> list[Figure]:
    block: list[str] = []
    for line in lines:
        if not line.startswith("|"):
            break
        block.append(line)
    table = parse_markdown_table(block)
    if table is None:
        return []
    return [make_figure(row[0], row[1], row[2].strip("`")) for row in table.rows if row[0]]


def make_figure(value: str, context: str, source: str) -> Figure:
    """A figure from its written value, re-reading its kind and magnitude."""
    found = parse_figure(value)
    if found is not None:
        return Figure(
            value=value, magnitude=found.magnitude, kind=found.kind, context=context, source=source
        )
    number = parse_number(value) or 0.0
    return Figure(value=value, magnitude=number, kind="count", context=context, source=source)


def merge(digests: Iterable[Digest]) -> list[Digest]:
    """Digests of the same source combined (points and figures de-duplicated), in first order."""
    merged: dict[str, Digest] = {}
    for digest in digests:
        known = merged.get(digest.source)
        if known is None:
            merged[digest.source] = digest.model_copy(
                update={"points": dedupe_points(digest.points), "figures": _dedupe(digest.figures)}
            )
            continue
        merged[digest.source] = known.model_copy(
            update={
                "points": dedupe_points([*known.points, *digest.points]),
                "figures": _dedupe([*known.figures, *digest.figures]),
                "title": known.title if known.title != _basename(known.source) else digest.title,
            }
        )
    return list(merged.values())


def dedupe_points(points: Iterable[Point]) -> list[Point]:
    """Points without near-duplicates (the first wording wins)."""
    kept: list[Point] = []
    for point in points:
        if not any(similar(point.text, other.text) for other in kept):
            kept.append(point)
    return kept


def _dedupe(figures: Iterable[Figure]) -> list[Figure]:
    seen: dict[tuple[str, str], Figure] = {}
    for figure in figures:
        seen.setdefault((figure.value, normalized(figure.context)), figure)
    return list(seen.values())


def ranked_points(digests: list[Digest], limit: int) -> list[Point]:
    """The best points across sources, taken in turn from each source (each lists best first)."""
    chosen: list[Point] = []
    depth = max((len(d.points) for d in digests), default=0)
    for rank in range(depth):
        for digest in digests:
            if rank < len(digest.points):
                point = digest.points[rank]
                if not any(similar(point.text, other.text) for other in chosen):
                    chosen.append(point)
            if len(chosen) >= limit:
                return chosen
    return chosen


def key_figures(digests: list[Digest], limit: int) -> list[Figure]:
    """Figures that are not bare years, taken in turn from each source in document order."""
    pools = [[f for f in d.figures if f.kind != "year"] for d in digests]
    chosen: list[Figure] = []
    for rank in range(max((len(p) for p in pools), default=0)):
        chosen = _dedupe([*chosen, *(pool[rank] for pool in pools if rank < len(pool))])
        if len(chosen) >= limit:
            break
    return chosen[:limit]


def largest_figures(digests: list[Digest], limit: int) -> list[Figure]:
    """The largest amounts, then percents and counts (no years); currencies take turns, since
    an amount in won and one in euros cannot be ranked against each other."""
    every = [f for d in digests for f in d.figures if f.kind != "year"]
    every.sort(key=lambda f: rank_key(f.kind, f.magnitude))
    groups: dict[tuple[str, str], list[Figure]] = {}
    seen: set[str] = set()
    for figure in every:
        if figure.value not in seen:
            seen.add(figure.value)
            groups.setdefault((figure.kind, unit_family(figure.value, figure.kind)), []).append(
                figure
            )
    ordered: list[Figure] = []
    for kind in ("money", "percent", "count"):
        pools = [pool for (k, _), pool in groups.items() if k == kind]
        for rank in range(max((len(p) for p in pools), default=0)):
            ordered += [pool[rank] for pool in pools if rank < len(pool)]
    return ordered[:limit]


_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_RULE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,})\s*$")
MIN_CHARS = 12  # shorter pieces are labels, not statements
MAX_CHARS = 600  # a longer "sentence" is a run-on block; it is cut at a word boundary


class Passage(Frozen):
    """One statement of a source: its text, file, section heading and first line (1-based)."""

    text: str
    source: str
    section: str
    line: int
    depth: int = 0  # the level of the section's heading (1: the document's title)

    @property
    def location(self) -> str:
        """Where the passage stands, as a person finds it: the section, else the line."""
        return f"§ {self.section}, line {self.line}" if self.section else f"line {self.line}"


def _table_passages(block: list[str], start: int, source: str, section: str) -> list[Passage]:
    table = parse_markdown_table(block)
    if table is None:
        return []
    found = []
    for offset, row in enumerate(table.rows):
        pairs = [f"{name}: {cell}" for name, cell in zip(table.header, row, strict=True) if cell]
        if pairs:
            found.append(Passage(text="; ".join(pairs), source=source, section=section,
                                 line=start + 2 + offset))  # fmt: skip
    return found


def _cut(text: str) -> str:
    if len(text) <= MAX_CHARS:
        return text
    cut = text[:MAX_CHARS]
    return cut[: cut.rfind(" ")] + "…" if " " in cut else cut + "…"


def split_passages(source: str, text: str) -> list[Passage]:
    """The passages of a markdown or plain text, in order, with their section and line."""
    lines = strip_front_matter(text).splitlines()
    offset = len(text.splitlines()) - len(lines)  # front matter lines keep the numbering true
    found: list[Passage] = []
    section = ""
    depth = 0
    paragraph: list[str] = []
    paragraph_start = 0
    table: list[str] = []
    table_start = 0

    def flush() -> None:
        if not paragraph:
            return
        # Each sentence keeps the line it starts on: the offsets of the joined lines map back.
        pieces = [clean_inline(piece) for piece in paragraph]
        starts, position = [], 0
        for piece in pieces:
            starts.append(position)
            position += len(piece) + 1
        joined = " ".join(pieces)
        cursor = 0
        for sentence in split_sentences(joined):
            at = joined.find(sentence, cursor)
            cursor = max(at, cursor)
            row = max((i for i, start in enumerate(starts) if start <= cursor), default=0)
            if len(sentence) >= MIN_CHARS:
                found.append(Passage(text=_cut(sentence), source=source, section=section,
                                     line=paragraph_start + row, depth=depth))  # fmt: skip
        paragraph.clear()

    for index, raw in enumerate(lines, start=offset + 1):
        line = raw.rstrip()
        if line.lstrip().startswith("|"):
            flush()
            if not table:
                table_start = index
            table.append(line)
            continue
        if table:
            found += _table_passages(table, table_start, source, section)
            table = []
        heading = _HEADING.match(line)
        if heading:
            flush()
            section = clean_inline(heading.group(2))
            depth = len(heading.group(1))
            continue
        item = _ITEM.match(line)
        if not line.strip() or _RULE.match(line) or line.lstrip().startswith("<!--"):
            flush()
            continue
        if item:
            flush()
            paragraph_start = index
            paragraph.append(item.group(1))
            continue
        if raw.startswith(("  ", "\t")) and paragraph:
            paragraph.append(line.strip())  # a list item's continuation line
            continue
        if not paragraph:
            paragraph_start = index
        paragraph.append(line.strip().lstrip("> "))
    flush()
    if table:
        found += _table_passages(table, table_start, source, section)
    return found


_SECTION = re.compile(
    r"recommend|conclu|outlook|implication|next step|way forward|verdict|takeaway|advice|"
    r"결론|제언|시사점|권고|제안|전망|요약 및",
    re.IGNORECASE,
)
_SAYS = re.compile(
    r"\b(?:we|i|the (?:board|authors?|office|team)) (?:recommend|advise|suggest|propose|expect)|"
    r"\b(?:our|the) recommendation\b|\bis recommended\b|\bshould\b|\bmust\b|\bought to\b|"
    r"\bwe expect\b|"
    r"^(?:enter|focus|prioriti[sz]e|avoid|invest|build|start|follow with|treat|budget)\b|"
    r"적절하다|바람직하다|필요하다|해야 한다|권고한다|제안한다|추천한다|전망한다|것이다\.?$",
    re.IGNORECASE,
)


# Any statement that speaks of recommending is the source's, so it is only ever quoted as such.
_RECOMMENDS = re.compile(r"recommend|권고|추천", re.IGNORECASE)


def is_conclusion(passage: Passage) -> bool:
    """Whether the passage is the source's own conclusion or advice."""
    text = passage.text.strip()
    return bool(_SECTION.search(passage.section) or _SAYS.search(text) or _RECOMMENDS.search(text))


def conclusions(passages: list[Passage]) -> list[Passage]:
    """The conclusions and recommendations among the passages, in document order."""
    return [p for p in passages if is_conclusion(p)]
