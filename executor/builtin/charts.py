"""Charts of the offline engine: numeric series found in material, the chart a request asks for by
name, charts drawn with pygal as inline SVG, and the report's self-contained HTML.
"""

from __future__ import annotations

import html
import re
from typing import Literal

import pygal
from pygal.style import Style

from executor.builtin.evidence import (
    BANNER,
    BANNER_MARK,
    Digest,
    Figure,
    largest_figures,
)
from executor.builtin.extract import Frozen, extract_text
from executor.builtin.tables import (
    RawTable,
    format_number,
    is_time_column,
    numeric_columns,
    parse_csv,
    parse_markdown_table,
    parse_number,
)
from executor.builtin.text import shorten, unit_family
from multiverse.documents import markdown_to_html
from offline.asks import SYNONYMS, ChartAsk, chart_asks, column_matches

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


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_SVG = re.compile(r"<svg\b.*?</svg>", re.DOTALL)
_FONTS = "system-ui, 'Segoe UI', 'Noto Sans KR', 'Malgun Gothic', 'Apple SD Gothic Neo', sans-serif"
_STYLE = Style(
    font_family=_FONTS,
    background="white",
    plot_background="white",
    colors=("#1f6feb", "#d1495b", "#2a9d8f", "#e9c46a", "#6a4c93", "#f4a261", "#264653", "#8d99ae"),
)
PAGE_CSS = """
body { font-family: system-ui, 'Segoe UI', 'Noto Sans KR', 'Malgun Gothic', sans-serif;
       max-width: 960px; margin: 2rem auto; padding: 0 1rem; color: #1b1f24; line-height: 1.55; }
.offline { background: #fff8e1; border-left: 4px solid #f0b400; padding: .6rem 1rem; }
figure { margin: 1.5rem 0; } figcaption { color: #57606a; font-size: .9rem; }
svg.pygal-chart { width: 100%; height: auto; }
table { border-collapse: collapse; margin: 1rem 0; } th, td { border: 1px solid #d0d7de;
       padding: .35rem .6rem; vertical-align: top; } th { background: #f6f8fa; }
blockquote { color: #57606a; border-left: 4px solid #d0d7de; margin: 0; padding: 0 1rem; }
code { background: #f6f8fa; padding: 0 .25rem; border-radius: 4px; }
"""


LABELLED_POINTS = 24  # a longer series labels only some of its points, and draws no dots


def render_svg(spec: ChartSpec, chart_id: str, x_title: str = "", y_title: str = "") -> str:
    """The chart as an inline SVG element, with a stable id and no external resources; a series
    of any length is drawn whole (a long one labels some points only)."""
    long = len(spec.labels) > LABELLED_POINTS
    options = {
        "title": spec.title,
        "style": _STYLE,
        "js": [],
        "disable_xml_declaration": True,
        "x_label_rotation": 30 if max((len(label) for label in spec.labels), default=0) > 8 else 0,
        "show_legend": len(spec.lines) > 1,
        "print_values": len(spec.labels) <= 12 and len(spec.lines) == 1,
        "truncate_label": 40,
        "height": 480,
        # 148,954,000 as a person reads it, on the bars and the axis alike.
        "value_formatter": format_number,
        "x_title": x_title or None,
        "y_title": y_title or None,
        "show_dots": not long,
        "show_minor_x_labels": not long,
        "x_labels_major_count": 12 if long else None,
    }
    chart = pygal.Line(**options) if spec.kind == "line" else pygal.Bar(**options)
    chart.x_labels = spec.labels
    for line in spec.lines:
        chart.add(line.name, line.values)
    svg = str(chart.render(is_unicode=True))
    # pygal names each chart by a random uuid and dates it; stable ids keep output deterministic.
    svg = _UUID.sub(chart_id, svg)
    return _COMMENT.sub("", svg)


def svgs_in(text: str) -> list[str]:
    """The inline SVG elements of an HTML page."""
    return _SVG.findall(text)


def figure_block(svg: str, caption: str) -> str:
    """An SVG inside a captioned HTML figure."""
    return f"<figure>{svg}<figcaption>{html.escape(caption)}</figcaption></figure>"


def page(title: str, body: str, notice: str = "", lang: str = "en") -> str:
    """A complete, self-contained HTML page (inline CSS, no external resources); `notice`: the
    offline notice in the page's language (the English one by default)."""
    said = html.escape(notice or f"{BANNER_MARK} (no language model was used).")
    return (
        "<!DOCTYPE html>\n"
        f"<!-- {said} -->\n"
        f'<html lang="{html.escape(lang)}"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{PAGE_CSS}</style></head>\n<body>\n"
        f'<p class="offline">{said}</p>\n'
        f"{body}\n</body></html>\n"
    )


def chart_page(title: str, intro: str, specs: list[ChartSpec], slug: str) -> str:
    """The HTML page of a data_visualization task: its charts, or a note that none were found."""
    if not specs:
        body = (
            f"<h1>{html.escape(title)}</h1>\n<p>{html.escape(intro)}</p>\n"
            "<p><strong>No figures were found</strong> in the task's material, so no chart was "
            "drawn. Add a table, a CSV file or figures with units to the references.</p>"
        )
        return page(title, body)
    blocks = [
        figure_block(render_svg(spec, f"{slug}-{n}"), f"{spec.title}. Source: {spec.source}")
        for n, spec in enumerate(specs, 1)
    ]
    body = f"<h1>{html.escape(title)}</h1>\n<p>{html.escape(intro)}</p>\n" + "\n".join(blocks)
    return page(title, body)


__all__ = ["SYNONYMS", "ChartAsk", "asked_chart", "chart_asks", "requested_charts"]


def _column(table: RawTable, word: str, candidates: list[int]) -> int | None:
    return next((i for i in candidates if column_matches(word, table.header[i])), None)


def asked_chart(ask: ChartAsk, table: RawTable, source: str) -> ChartSpec | None:
    """The bar chart of `ask` from `table`: the measure summed per dimension label, or None."""
    if not table.header or not table.rows:
        return None
    numeric = numeric_columns(table)
    labels = [i for i in range(len(table.header)) if i not in numeric]
    value = _column(table, ask.measure, list(numeric))
    group = _column(table, ask.dimension, labels)
    if value is None or group is None:
        return None
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    for row in table.rows:
        number = parse_number(row[value]) if row[value] else None
        if number is None or not row[group]:
            continue
        totals[row[group]] = totals.get(row[group], 0.0) + number
        counts[row[group]] = counts.get(row[group], 0) + 1
    if len(totals) < 2 or len(totals) > MAX_POINTS:
        return None
    names = list(totals)
    summed = any(count > 1 for count in counts.values())
    how = f"sum of {max(counts.values())} rows each" if summed else "one row each"
    title = f"{table.header[value]} by {table.header[group]} ({how})"
    line = SeriesLine(name=table.header[value], values=[round(totals[n], 6) for n in names])
    return ChartSpec(title=title, kind="bar", labels=names, lines=[line], source=source)


def requested_charts(
    asked_in: str, tables: list[tuple[RawTable, str]], per_ask: int = 2
) -> list[ChartSpec]:
    """The charts the text asks for that the tables (with their sources) can draw exactly.

    Each ask is drawn from up to `per_ask` tables, in the order given (the sources first), and a
    table saying the same as one already drawn (same labels and values) is skipped.
    """
    charts: list[ChartSpec] = []
    seen: set[tuple[tuple[str, ...], tuple[float | None, ...]]] = set()
    for ask in chart_asks(asked_in):
        drawn = 0
        for table, source in tables:
            chart = asked_chart(ask, table, source)
            if chart is None or drawn >= per_ask:
                continue
            key = (tuple(chart.labels), tuple(chart.lines[0].values))
            if key not in seen:
                seen.add(key)
                charts.append(chart)
                drawn += 1
    return charts


_IMAGE_LINE = re.compile(r"^!\[(?P<alt>[^\]]*)\]\((?P<target>[^)]+)\)$", re.MULTILINE)


class ChartImage(Frozen):
    """A chart of the report: the SVG file beside it, its caption, its SVG markup."""

    file_name: str
    caption: str
    svg: str


def report_title(request: str) -> str:
    """A title from the request: its first heading, else its first sentence."""
    facts = extract_text(request, "Report")
    if facts.headings:
        return shorten(facts.headings[0].text, 100)
    if facts.sentences:
        return shorten(facts.sentences[0].text, 100).rstrip(".")
    return "Report"


def report_html(
    markdown: str, title: str, charts: list[ChartImage], notice: str = "", lang: str = "en"
) -> str:
    """The report as one self-contained HTML page; each chart image becomes its inline SVG
    (`notice`: the offline notice the markdown opens with, when not the English one)."""
    by_file = {c.file_name: c for c in charts}
    placeholders: dict[str, str] = {}

    def hold(match: re.Match[str]) -> str:
        chart = by_file.get(match["target"])
        if chart is None:
            return match.group(0)
        key = f"MVCHART{len(placeholders)}"
        placeholders[key] = figure_block(chart.svg, chart.caption)
        return key

    # The page states the offline banner itself; the markdown's copy would say it twice.
    banner = f"> {notice}" if notice else BANNER
    body = markdown_to_html(_IMAGE_LINE.sub(hold, markdown.replace(banner + "\n", "", 1)))
    for key, block in placeholders.items():
        body = body.replace(f"<p>{key}</p>", block)
    return page(html.unescape(title), body, notice, lang)
