"""Digests of raw sources: a text's key sentences and figures, a table's column facts.

Pure functions from already-read content to evidence.
"""

from __future__ import annotations

import re

from executor.builtin.evidence import Digest, Figure, Point
from executor.builtin.extract import extract_text, key_sentences
from executor.builtin.tables import (
    MAX_LABELS,
    ColumnStats,
    RawTable,
    TableScan,
    format_number,
    parse_markdown_table,
    scan_rows,
)
from executor.builtin.text import FigureKind, shorten
from multiverse.documents import Converted

KEY_SENTENCES = 8
MAX_FIGURES = 40
MAX_DOC_TABLES = 5  # a document's tables whose numeric columns are summarised
_MONEY_COLUMN = re.compile(
    r"revenue|sales|income|profit|cost|price|usd|eur|krw|\$|원|매출|이익|비용|금액", re.I
)
_PERCENT_COLUMN = re.compile(r"%|share|rate|margin|ratio|pct|percent|비율|점유|률|율", re.I)


def digest_text(source: str, text: str, kind: str, fallback_title: str) -> Digest:
    """A text's title, structure, key sentences and figures with their sentences."""
    facts = extract_text(text, fallback_title)
    # A text without headings takes its first line as title; that line is not a finding.
    body = [s for s in facts.sentences if s.text != facts.title]
    points = [Point(text=s.text, source=source) for s in key_sentences(body, KEY_SENTENCES)]
    figures = [
        Figure(
            value=found.value,
            magnitude=found.magnitude,
            kind=found.kind,
            context=shorten(sentence.text, 240),
            source=source,
        )
        for sentence in facts.sentences
        for found in sentence.figures
    ][:MAX_FIGURES]
    tables = [t for t in (parse_markdown_table(lines) for lines in facts.table_lines) if t]
    sections = [h.text for h in facts.headings if h.level == 2]
    lines = [f"{facts.word_count:,} words", f"{len(facts.headings)} headings"]
    if sections:
        lines.append("sections: " + "; ".join(sections[:12]))
    lines.extend(
        f"table with columns {', '.join(t.header)} ({len(t.rows)} rows)" for t in tables[:5]
    )
    return Digest(
        source=source,
        kind=kind,
        title=facts.title,
        facts=lines,
        headings=facts.headings,
        points=points,
        figures=figures,
    )


def digest_table(source: str, table: RawTable, title: str) -> Digest:
    """A table's size, columns, numeric statistics, and a sentence per numeric column."""
    return digest_scan(source, scan_rows(table.header, table.rows), title)


def digest_scan(source: str, scan: TableScan, title: str) -> Digest:
    """The digest of a scanned table (a whole CSV file, read row by row)."""
    facts = scan.facts
    points: list[Point] = []
    figures: list[Figure] = []
    for stats in facts.numeric:
        sentence = _column_sentence(scan, stats)
        points.append(Point(text=sentence, source=source))
        figures.append(_column_figure(stats, sentence, source))
    lines = [
        f"{facts.row_count:,} rows × {len(facts.columns)} columns",
        "columns: " + ", ".join(facts.columns),
    ]
    labels = [_label_fact(name, n, scan.examples[name]) for name, n in scan.distinct.items()]
    if labels:
        lines.append("labels: " + "; ".join(labels[:8]))
    note = ""
    if scan.scanned < scan.total:
        note = f"statistics over the first {scan.scanned:,} rows of {scan.total:,}"
        lines.append(note)
    return Digest(
        source=source,
        kind="csv",
        title=title,
        facts=lines,
        points=points,
        figures=figures,
        table=facts,
        note=note,
    )


def _label_fact(name: str, count: int, examples: list[str]) -> str:
    if count > MAX_LABELS:
        return f"{name} (more than {MAX_LABELS:,} distinct)"
    shown = ", ".join(shorten(example, 30) for example in examples)
    more = ", …" if count > len(examples) else ""
    return f"{name} ({count:,} distinct: {shown}{more})"


def _column_sentence(scan: TableScan, stats: ColumnStats) -> str:
    low, high = format_number(stats.minimum), format_number(stats.maximum)
    sentence = f"Column {stats.name} ranges from {low} to {high} over {stats.count:,} rows"
    if not _PERCENT_COLUMN.search(stats.name):
        sentence += f" (sum {format_number(stats.total)})"
    header = scan.facts.columns
    top = scan.top_rows[header.index(stats.name)]
    if scan.labels and top is not None:
        where = ", ".join(f"{header[i]} {top[i]}" for i in scan.labels)
        sentence += f"; the highest is in the row with {where}"
    return sentence + "."


def _column_figure(stats: ColumnStats, sentence: str, source: str) -> Figure:
    kind: FigureKind
    if _PERCENT_COLUMN.search(stats.name):
        value, magnitude, kind = f"{format_number(stats.maximum)}%", stats.maximum, "percent"
    else:
        value, magnitude = format_number(stats.total), stats.total
        kind = "money" if _MONEY_COLUMN.search(stats.name) else "count"
    return Figure(
        value=f"{value} ({stats.name})",
        magnitude=magnitude,
        kind=kind,
        context=sentence,
        source=source,
    )


def digest_document(source: str, converted: Converted, fallback_title: str) -> Digest:
    """A converted document (PDF, Word, Excel…) digested like a markdown file, its tables'
    numeric columns summarised like a CSV's; an unreadable one is a note saying why."""
    if converted.markdown is None:
        return digest_note(source, "unreadable", source.rsplit("/", 1)[-1], converted.note)
    digest = digest_text(source, converted.markdown, converted.kind, fallback_title)
    tables = [t for t in map(parse_markdown_table, _table_blocks(converted.markdown)) if t]
    extra = [digest_table(source, table, fallback_title) for table in tables[:MAX_DOC_TABLES]]
    facts = [converted.label, *digest.facts, *([converted.note] if converted.note else [])]
    return digest.model_copy(
        update={
            # A document's own title; else its name, not a location heading ("Page 1").
            "title": converted.title or fallback_title,
            "facts": facts,
            "points": [*digest.points, *(p for d in extra for p in d.points)],
            "figures": [*digest.figures, *(f for d in extra for f in d.figures)][:MAX_FIGURES],
            "note": converted.note,
        }
    )


def _table_blocks(markdown: str) -> list[list[str]]:
    """The runs of consecutive pipe-table lines of a markdown text."""
    blocks: list[list[str]] = []
    previous = False
    for line in markdown.splitlines():
        is_row = line.startswith("|")
        if is_row and not previous:
            blocks.append([])
        if is_row:
            blocks[-1].append(line)
        previous = is_row
    return blocks


def digest_note(source: str, kind: str, title: str, note: str) -> Digest:
    """A source the engine can only describe (binary, unreadable, data or markup)."""
    return Digest(source=source, kind=kind, title=title, facts=[note], note=note)
