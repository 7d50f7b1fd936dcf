"""Charts drawn with pygal as inline SVG, and the self-contained HTML page that holds them."""

from __future__ import annotations

import html
import re

import pygal
from pygal.style import Style

from executor.builtin.evidence import BANNER_MARK
from executor.builtin.series import ChartSpec
from executor.builtin.tabular import format_number

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


def render_svg(spec: ChartSpec, chart_id: str) -> str:
    """The chart as an inline SVG element, with a stable id and no external resources."""
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


def page(title: str, body: str) -> str:
    """A complete, self-contained HTML page (inline CSS, no external resources)."""
    return (
        "<!DOCTYPE html>\n"
        f"<!-- {BANNER_MARK} (no language model was used). -->\n"
        '<html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{PAGE_CSS}</style></head>\n<body>\n"
        f'<p class="offline">{BANNER_MARK} (no language model was used).</p>\n'
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
