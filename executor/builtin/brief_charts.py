"""The charts a brief was asked for, computed over whole tables, with their units and period.

A chart asked as "<measure> by <dimension>" is drawn from a table of the references (CSV or TSV,
read whole) holding a number column named like the measure and a label column named like the
dimension: the measure summed per label over every row. The unit comes from the column's name
(`revenue_eur` → EUR, `share_pct` → %), the period from a time column when there is one. A chart
no table can draw is reported as such, never replaced by another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from executor.builtin.brief_spec import ChartWanted
from executor.builtin.chart import render_svg
from executor.builtin.report import ChartImage
from executor.builtin.requested_chart import asked_chart
from executor.builtin.series import ChartSpec, SeriesLine
from executor.builtin.sources import decode
from executor.builtin.tabular import RawTable, format_number, is_time_column, parse_csv
from multiverse.unread import open_regular

TABLE_SUFFIXES = (".csv", ".tsv")
MAX_TABLE_BYTES = 256 * 1024 * 1024  # a table larger than this is not charted whole: said so
_CURRENCIES = {
    "eur": "EUR", "euro": "EUR", "euros": "EUR", "€": "EUR", "usd": "USD", "$": "USD",
    "dollar": "USD", "dollars": "USD", "krw": "KRW", "won": "KRW", "원": "KRW", "₩": "KRW",
    "gbp": "GBP", "£": "GBP", "jpy": "JPY", "yen": "JPY", "¥": "JPY", "nok": "NOK",
    "sek": "SEK", "dkk": "DKK", "cny": "CNY",
}  # fmt: skip
_SCALES = {"k": "thousand", "thousand": "thousand", "m": "million", "mn": "million",
           "million": "million", "bn": "billion", "b": "billion", "billion": "billion",
           "억": "억", "만": "만", "천": "천"}  # fmt: skip
_PERCENT = frozenset({"pct", "percent", "%", "share", "rate"})


@dataclass(frozen=True)
class DrawnChart:
    """A chart asked for: its image (None when no table could draw it) and its exact totals."""

    said: str
    image: ChartImage | None
    spec: ChartSpec | None
    unit: str
    rows: int
    period: str
    source: str
    why_not: str = ""


def unit_of(header: str) -> str:
    """The unit a column's name states: a currency with its scale, a percent, else ""."""
    parts = [p for p in re.split(r"[\s_()\[\]/,-]+", header.casefold()) if p]
    symbols = [ch for ch in header if ch in "€$£¥₩%"]
    currency = next((_CURRENCIES[p] for p in [*parts, *symbols] if p in _CURRENCIES), "")
    scale = next((_SCALES[p] for p in parts[1:] if p in _SCALES), "")
    if currency:
        return f"{currency} {scale}".strip()
    if "%" in symbols or any(p in _PERCENT for p in parts):
        return "%"
    return scale


def _read_table(home: Path, source: str) -> tuple[RawTable | None, str]:
    path = home / source
    try:
        with open_regular(path) as handle:
            data = handle.read(MAX_TABLE_BYTES + 1)
    except OSError as error:
        return None, f"`{source}` cannot be read ({error.strerror or error})"
    if len(data) > MAX_TABLE_BYTES:
        return None, f"`{source}` is larger than {MAX_TABLE_BYTES // (1 << 20)} MiB"
    text = decode(data)
    if text is None:
        return None, f"`{source}` is not a text table"
    return parse_csv(text, limit=10**9), ""


def _period(table: RawTable) -> str:
    for index in range(len(table.header)):
        if is_time_column(table, index):
            cells = sorted({row[index] for row in table.rows if row[index]})
            if cells:
                return f"{cells[0]} to {cells[-1]}" if len(cells) > 1 else cells[0]
    return ""


def draw(home: Path, wanted: ChartWanted, tables: list[str], slug: str, number: int) -> DrawnChart:
    """One chart asked for, from the first table that carries it (the one named first)."""
    said = f"{wanted.ask.measure} by {wanted.ask.dimension}"
    order = [wanted.source] if wanted.source else []
    order += [t for t in tables if t not in order]
    problems = []
    for source in order:
        if not source.lower().endswith(TABLE_SUFFIXES) or not (home / source).is_file():
            continue
        table, problem = _read_table(home, source)
        if table is None:
            problems.append(problem)
            continue
        spec = asked_chart(wanted.ask, table, source)
        if spec is None:
            continue
        value_column = spec.lines[0].name
        unit = unit_of(value_column)
        pairs = sorted(
            zip(spec.labels, spec.lines[0].values, strict=True), key=lambda p: -(p[1] or 0)
        )
        period = _period(table)
        counted = f"sum of all {len(table.rows):,} rows" + (f", {period}" if period else "")
        group = spec.title.split(" by ", 1)[1].split(" (", 1)[0]
        title = f"{value_column}{f' ({unit})' if unit else ''} by {group}: {counted}"
        spec = ChartSpec(
            title=title,
            kind="bar",
            labels=[p[0] for p in pairs],
            lines=[SeriesLine(name=value_column, values=[p[1] for p in pairs])],
            source=source,
        )
        image = ChartImage(
            file_name=f"{slug}-chart-{number}.svg",
            caption=f"{title}. Source: {source}",
            svg=render_svg(spec, f"{slug}-{number}"),
        )
        return DrawnChart(said, image, spec, unit, len(table.rows), period, source)
    why = "; ".join(problems) or (
        f"no table among the references has a number column named like '{wanted.ask.measure}' "
        f"and a label column named like '{wanted.ask.dimension}'"
    )
    return DrawnChart(said, None, None, "", 0, "", "", why_not=why)


def totals_table(chart: DrawnChart) -> list[str]:
    """The chart's exact totals as a markdown table, largest first."""
    if chart.spec is None:
        return []
    column = chart.spec.lines[0].name + (f" ({chart.unit})" if chart.unit else "")
    group = chart.spec.title.split(" by ", 1)[1].split(":", 1)[0]
    rows = [
        f"| {label} | {format_number(value) if value is not None else '—'} |"
        for label, value in zip(chart.spec.labels, chart.spec.lines[0].values, strict=True)
    ]
    return [f"| {group} | {column}, sum |", "| --- | ---: |", *rows]
