"""What the evidence brief must be, read from the run's confirmed instructions, and the charts it
was asked for, computed over whole tables with their units and period.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from executor.builtin.charts import ChartImage, ChartSpec, SeriesLine, asked_chart, render_svg
from executor.builtin.relevance import purpose_focus
from executor.builtin.sources import decode
from executor.builtin.tables import RawTable, format_number, is_time_column, parse_csv
from multiverse.documents import open_regular
from multiverse.models import InstructionStatus, UserInstruction
from offline import asks


@dataclass(frozen=True)
class ChartWanted:
    """A chart the instructions ask for, and the table file they name for it (if any)."""

    ask: asks.ChartAsk
    source: str | None


@dataclass(frozen=True)
class BriefSpec:
    """The brief's question, reader, length, language, charts and ranking words."""

    question: str
    asked_kind: str | None
    audience: str | None
    length: asks.Length
    length_stated: bool
    language: str
    charts: list[ChartWanted] = field(default_factory=list)
    focus: str = ""  # MODIFY texts and the task's purpose: more words to rank facts by

    @property
    def query(self) -> str:
        """All the words the facts are ranked against."""
        # Not the audience: "for the board" says who reads, not which facts matter.
        question = self.question.replace(self.audience, " ") if self.audience else self.question
        return " ".join(part for part in (question, self.focus) if part)


def modification_focus(text: str) -> str:
    """The subject words of the MODIFY texts: what they leave out, the lengths and the charts
    they ask for are constraints, not subjects (the Korean report left out ranks nothing)."""
    for phrase in asks.leave_outs(text):
        text = text.replace(phrase, " ")
    return purpose_focus(text)


def _by_type(instructions: list[UserInstruction], run_id: str) -> dict[str, str]:
    own = [i for i in instructions if i.run_id == run_id and i.status is InstructionStatus.ACTIVE]
    return {i.instruction_type: i.content for i in own}


def charts_in(content: str) -> list[ChartWanted]:
    """The charts of a CHART instruction: each "; "-separated item's ask before its colon."""
    wanted = []
    for item in content.split(";"):
        head, _, rest = item.partition(":")
        named = [p for p in asks.paths_named(rest) if "/" in p]
        wanted += [ChartWanted(ask, named[0] if named else None) for ask in asks.chart_asks(head)]
    return wanted


def brief_spec(
    request: str, instructions: list[UserInstruction], run_id: str, purpose: str = ""
) -> BriefSpec:
    """The brief asked for by this run's ACTIVE instructions (the request where one is missing)."""
    found = _by_type(instructions, run_id)
    question = found.get("GOAL", request).strip()
    length = asks.length_asked(found.get("LENGTH", ""), pages_first=True)
    # A length the Planner filled in by default may be kept shorter; one asked for is kept.
    stated = length is not None and "default" not in found.get("LENGTH", "").casefold()
    if length is None:
        length = asks.length_asked(question) or asks.default_length(
            asks.deliverable_asked(question)
        )
        stated = asks.length_asked(question) is not None
    language = asks.language_asked(found.get("LANGUAGE", "")) or asks.script_language(question)
    audience = found.get("AUDIENCE", "").strip().rstrip(".") or asks.audience_asked(question)
    kind = asks.deliverable_asked(question)
    charts = charts_in(found["CHART"]) if "CHART" in found else []
    if "CHART" not in found and "GOAL" not in found:
        charts = [ChartWanted(ask, None) for ask in asks.chart_asks(question)]
    focus = " ".join(
        part
        for part in (modification_focus(found.get("USER_MODIFICATION", "")), purpose_focus(purpose))
        if part
    )
    return BriefSpec(
        question=question,
        asked_kind=kind[0] if kind else None,
        audience=audience or None,
        length=length,
        length_stated=stated,
        language=language,
        charts=charts,
        focus=focus,
    )


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
