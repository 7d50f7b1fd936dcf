"""Numeric series found in material: tables, CSV, `label: number` lines, figures in text.

Pure functions; each result is a chart specification (kind, labels, one or more lines of values).
"""

from __future__ import annotations

import re
from typing import Literal

from executor.builtin.evidence import Digest, Figure, largest_figures
from executor.builtin.extract import Frozen, extract_text
from executor.builtin.figures import unit_family
from executor.builtin.tabular import (
    RawTable,
    is_time_column,
    numeric_columns,
    parse_csv,
    parse_markdown_table,
    parse_number,
)
from executor.builtin.text import shorten

ChartKind = Literal["bar", "line"]
MAX_POINTS = 40
MAX_GROUPS = 8
_LABEL_LINE = re.compile(
    r"^\s*(?:[-*+]\s+)?(?P<label>[^:|#]{1,60}?)\s*[:：]\s*(?P<value>\S.{0,30})$"
)
_YEARLIKE = re.compile(r"^(?:FY ?)?(?:19|20)\d{2}|^Q[1-4]\b|^\d{1,2}월$")
# Tables this engine writes about its own material (sources, themes, column statistics).
_META_TABLES = frozenset({"Value", "Source", "Theme", "Column"})
_SCALES = ((1e12, "trillions"), (1e9, "billions"), (1e6, "millions"), (1e3, "thousands"))


class SeriesLine(Frozen):
    """One named line (or bar group) of values, aligned with the chart's labels."""

    name: str
    values: list[float | None]


class ChartSpec(Frozen):
    """A chart to draw: what it shows, how, and from where."""

    title: str
    kind: ChartKind
    labels: list[str]
    lines: list[SeriesLine]
    source: str

    @property
    def size(self) -> int:
        """How many values it shows."""
        return sum(1 for line in self.lines for v in line.values if v is not None)


def _kind_for(labels: list[str]) -> ChartKind:
    timelike = labels and all(_YEARLIKE.match(label) for label in labels)
    return "line" if timelike else "bar"


def table_charts(table: RawTable, source: str, name: str) -> list[ChartSpec]:
    """One chart per numeric column; a time column × a small category column becomes lines."""
    if not table.header or table.header[0] in _META_TABLES or not table.rows:
        return []
    numeric = numeric_columns(table)
    labels = [i for i in range(len(table.header)) if i not in numeric]
    times = [i for i in labels if is_time_column(table, i)]
    groups = [i for i in labels if i not in times]
    charts = []
    for index, values in numeric.items():
        title = f"{table.header[index]} ({name})"
        if len(times) == 1 and len(groups) == 1:
            chart = _pivot(table, times[0], groups[0], index, title, source)
            if chart is not None:
                charts.append(chart)
                continue
        row_labels = [
            " · ".join(row[i] for i in labels) or str(n + 1) for n, row in enumerate(table.rows)
        ]
        line = SeriesLine(name=table.header[index], values=values[:MAX_POINTS])
        charts.append(
            ChartSpec(title=title, kind=_kind_for(row_labels), labels=row_labels[:MAX_POINTS],
                      lines=[line], source=source)
        )  # fmt: skip
    return charts


def _pivot(
    table: RawTable, time: int, group: int, value: int, title: str, source: str
) -> ChartSpec | None:
    steps = list(dict.fromkeys(row[time] for row in table.rows))
    names = list(dict.fromkeys(row[group] for row in table.rows))
    if len(names) > MAX_GROUPS or len(steps) > MAX_POINTS:
        return None
    cells = {(row[time], row[group]): parse_number(row[value]) for row in table.rows}
    lines = [SeriesLine(name=n, values=[cells.get((s, n)) for s in steps]) for n in names]
    return ChartSpec(title=title, kind="line", labels=steps, lines=lines, source=source)


def label_line_charts(text: str, source: str) -> list[ChartSpec]:
    """Runs of two or more consecutive `label: number` lines, one chart each."""
    charts: list[ChartSpec] = []
    run: list[tuple[str, float]] = []
    for line in [*text.splitlines(), ""]:
        match = _LABEL_LINE.match(line)
        number = parse_number(match["value"]) if match else None
        if match and number is not None:
            run.append((match["label"].strip(), number))
            continue
        if len(run) >= 2:
            labels = [label for label, _ in run][:MAX_POINTS]
            values: list[float | None] = []
            values += [value for _, value in run[:MAX_POINTS]]
            charts.append(
                ChartSpec(title=f"Values ({source.rsplit('/', 1)[-1]})", kind=_kind_for(labels),
                          labels=labels, lines=[SeriesLine(name="value", values=values)],
                          source=source)
            )  # fmt: skip
        run = []
    return charts


def text_charts(text: str, source: str, suffix: str) -> list[ChartSpec]:
    """Every chart a file's text holds: CSV data, or markdown tables and `label: number` runs."""
    name = source.rsplit("/", 1)[-1]
    if suffix in (".csv", ".tsv"):
        return table_charts(parse_csv(text), source, name)
    facts = extract_text(text, name)
    tables = [parse_markdown_table(lines) for lines in facts.table_lines]
    charts = [c for t in tables if t is not None for c in table_charts(t, source, name)]
    return charts + label_line_charts(text, source)


def _scaled(figures: list[Figure]) -> tuple[list[float | None], str]:
    top = max(f.magnitude for f in figures)
    if any("억" in f.value or "조" in f.value for f in figures):
        return [f.magnitude / 1e8 for f in figures], "억"
    for divisor, word in _SCALES:
        if top >= divisor:
            return [round(f.magnitude / divisor, 3) for f in figures], word
    return [f.magnitude for f in figures], ""


def figure_chart(figures: list[Figure], title: str, by_source: bool) -> ChartSpec | None:
    """A bar chart of the figures counted like the first, labelled by context or by source."""
    if not figures:
        return None
    family = unit_family(figures[0].value, figures[0].kind)
    same = [f for f in figures if unit_family(f.value, f.kind) == family][:MAX_POINTS]
    if len(same) < 2:
        return None
    values, scale = _scaled(same)
    labels = [
        f"{f.value} · {f.source.rsplit('/', 1)[-1]}" if by_source else shorten(f.context, 40)
        for f in same
    ]
    name = f"{family} ({scale})" if scale else family
    return ChartSpec(title=title, kind="bar", labels=labels,
                     lines=[SeriesLine(name=name, values=values)],
                     source=", ".join(dict.fromkeys(f.source for f in same)))  # fmt: skip


def comparison_chart(digests: list[Digest]) -> ChartSpec | None:
    """The largest values across sources, as one bar chart of the most widely shared unit."""
    families: dict[str, list[Figure]] = {}
    for figure in largest_figures(digests, 500):
        families.setdefault(unit_family(figure.value, figure.kind), []).append(figure)
    if not families:
        return None
    best = max(families.values(), key=lambda group: (len({f.source for f in group}), len(group)))
    return figure_chart(best[:12], "Largest values across sources", True)


def choose(charts: list[ChartSpec], limit: int) -> list[ChartSpec]:
    """The richest distinct charts (most values first; same labels and values only once)."""
    seen: set[tuple[tuple[str, ...], tuple[float | None, ...]]] = set()
    chosen: list[ChartSpec] = []
    for chart in sorted(charts, key=lambda c: -c.size):
        key = (tuple(chart.labels), tuple(v for line in chart.lines for v in line.values))
        if chart.size >= 2 and key not in seen:
            seen.add(key)
            chosen.append(chart)
    return chosen[:limit]
