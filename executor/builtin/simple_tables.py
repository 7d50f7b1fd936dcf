"""Simple requests about tables: a CSV as a markdown table, or a measure summed per label.

"Show revenue by country as a table" (Korean "국가별 매출을 표로 보여줘") is the table a chart
asked for by name would draw (`requested_chart`): the measure's column summed per label over
the whole CSV, shown with its total, how many rows were summed and the file they came from.
"""

from __future__ import annotations

import re
from pathlib import Path

from executor.builtin.paths import TaskError, relative
from executor.builtin.requested_chart import asked_chart, chart_asks
from executor.builtin.series import ChartSpec
from executor.builtin.sources import MAX_BYTES, decode
from executor.builtin.tabular import (
    RawTable,
    format_number,
    markdown_table,
    numeric_columns,
    parse_csv,
    parse_number,
)
from multiverse.unread import open_regular

MAX_TABLE_ROWS = 1000
TABLE_SUFFIXES = frozenset({".csv", ".tsv"})
# Korean particles a `<dimension>별 <measure>` phrase may carry ("매출을", "매출은").
_PARTICLE = re.compile(r"(?<=[가-힣]{2})(?:을|를|은|는|이|가|의|으로|로)(?=\s|$|[?.!,])")


def read_text(path: Path) -> str:
    """A file's text; a binary or unreadable file is a TaskError saying so."""
    try:
        handle = open_regular(path)  # never blocks on a named pipe
    except OSError as error:
        raise TaskError(f"`{path.name}` cannot be read: {error.strerror or error}") from None
    with handle:
        text = decode(handle.read(MAX_BYTES))
    if text is None:
        raise TaskError(f"`{path.name}` is a binary file; it holds no text to work on")
    return text


def convert_csv(home: Path, path: Path) -> str:
    """A CSV file as a markdown table, its source named."""
    if path.suffix.lower() not in TABLE_SUFFIXES:
        raise TaskError(f"`{path.name}` is not a CSV file; only CSV converts to a markdown table")
    table = parse_csv(read_text(path))
    source = relative(home, path)
    if not table.header:
        return f"`{source}` is empty."
    shown = table.rows[:MAX_TABLE_ROWS]
    note = (
        f" (the first {len(shown)} of {len(table.rows)} rows)"
        if len(shown) < len(table.rows)
        else ""
    )
    return f"`{source}` as a table{note}:\n\n{markdown_table(table.header, shown)}"


def without_particles(text: str) -> str:
    """Korean particles cut from the words they end, so "매출을" reads as "매출" (pure)."""
    return _PARTICLE.sub("", text)


def _columns(spec: ChartSpec, table: RawTable) -> tuple[int, int]:
    """The measure's column and the label column `spec` was drawn from (pure)."""
    value = table.header.index(spec.lines[0].name)
    numeric = numeric_columns(table)
    labels = set(spec.labels)
    group = next(
        i
        for i in range(len(table.header))
        if i not in numeric and labels <= {row[i] for row in table.rows}
    )
    return value, group


def render_sums(spec: ChartSpec, table: RawTable) -> str:
    """The sums of `spec` as a markdown table with their total, row count and source (pure)."""
    value, group = _columns(spec, table)
    summed = sum(
        1
        for row in table.rows
        if row[group] in spec.labels and parse_number(row[value]) is not None
    )
    values = [v or 0.0 for v in spec.lines[0].values]
    rows = [[label, format_number(v)] for label, v in zip(spec.labels, values, strict=True)]
    rows.append(["**Total**", f"**{format_number(sum(values))}**"])
    header = [table.header[group], f"{table.header[value]} (sum)"]
    return (
        f"{spec.title}, from `{spec.source}`:\n\n{markdown_table(header, rows)}\n\n"
        f"_Summed over {summed} of the {len(table.rows)} rows of `{spec.source}`: every value "
        "is the file's own, added up; nothing is estimated._"
    )


def table_by(home: Path, request: str, files: list[Path]) -> str | None:
    """The `<measure> by <dimension>` table the request asks for, from the one CSV that can
    give it; None when no ask is found, no table can answer, or two tables answer differently."""
    asks = chart_asks(without_particles(request))
    if not asks:
        return None
    answers: dict[tuple[tuple[str, ...], tuple[float | None, ...]], str] = {}
    for path in files:
        try:
            table = parse_csv(read_text(path))
        except TaskError:
            continue
        spec = asked_chart(asks[0], table, relative(home, path))
        if spec is not None:
            key = (tuple(spec.labels), tuple(spec.lines[0].values))
            answers.setdefault(key, render_sums(spec, table))
    return next(iter(answers.values())) if len(answers) == 1 else None
