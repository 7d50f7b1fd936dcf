"""Digests of raw sources: a text's key sentences and figures, a table's column facts.

Pure functions from already-read content to evidence.
"""

from __future__ import annotations

import re

from executor.builtin.evidence import Digest, Figure, Point
from executor.builtin.extract import extract_text, key_sentences
from executor.builtin.figures import FigureKind
from executor.builtin.tabular import (
    ColumnStats,
    RawTable,
    format_number,
    is_time_column,
    numeric_columns,
    parse_markdown_table,
    parse_number,
    table_facts,
)
from executor.builtin.text import shorten

KEY_SENTENCES = 8
MAX_FIGURES = 40
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
    facts = table_facts(table)
    labels = _label_columns(table)
    points: list[Point] = []
    figures: list[Figure] = []
    for stats in facts.numeric:
        sentence = _column_sentence(table, stats, labels)
        points.append(Point(text=sentence, source=source))
        figures.append(_column_figure(stats, sentence, source))
    lines = [
        f"{facts.row_count:,} rows × {len(facts.columns)} columns",
        "columns: " + ", ".join(facts.columns),
    ]
    return Digest(
        source=source,
        kind="csv",
        title=title,
        facts=lines,
        points=points,
        figures=figures,
        table=facts,
    )


def _label_columns(table: RawTable) -> list[int]:
    numeric = numeric_columns(table)
    return [i for i in range(len(table.header)) if i not in numeric or is_time_column(table, i)]


def _column_sentence(table: RawTable, stats: ColumnStats, labels: list[int]) -> str:
    low, high = format_number(stats.minimum), format_number(stats.maximum)
    sentence = f"Column {stats.name} ranges from {low} to {high} over {stats.count} rows"
    if not _PERCENT_COLUMN.search(stats.name):
        sentence += f" (sum {format_number(stats.total)})"
    if labels:
        index = table.header.index(stats.name)
        top = next((row for row in table.rows if _cell_equals(row[index], stats.maximum)), None)
        if top is not None:
            where = ", ".join(f"{table.header[i]} {top[i]}" for i in labels)
            sentence += f"; the highest is in the row with {where}"
    return sentence + "."


def _cell_equals(cell: str, value: float) -> bool:
    return parse_number(cell) == value


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


def digest_note(source: str, kind: str, title: str, note: str) -> Digest:
    """A source the engine can only describe (binary, unreadable, data or markup)."""
    return Digest(source=source, kind=kind, title=title, facts=[note], note=note)
