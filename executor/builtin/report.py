"""The final report's HTML rendering (self-contained, charts inline) and its chart images."""

from __future__ import annotations

import html
import re

from mistletoe import block_token, span_token
from mistletoe.block_token import Document
from mistletoe.html_renderer import HtmlRenderer

from executor.builtin.chart import figure_block, page
from executor.builtin.evidence import (
    BANNER,
)
from executor.builtin.extract import Frozen, extract_text
from executor.builtin.text import shorten
from multiverse.tablelocate import MISTLETOE_LOCK

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


def markdown_to_html(markdown: str) -> str:
    """Markdown rendered to HTML; raw HTML in it (a hostile asset) is shown as text, never run."""
    # mistletoe's token lists are module state shared with the table reader: hold its lock,
    # and start from (and leave) the default token set.
    with MISTLETOE_LOCK:
        block_token.reset_tokens()  # type: ignore[no-untyped-call]
        span_token.reset_tokens()  # type: ignore[no-untyped-call]
        renderer = HtmlRenderer(process_html_tokens=False)  # type: ignore[no-untyped-call]
        with renderer:
            return str(renderer.render(Document(markdown)))  # type: ignore[no-untyped-call]


def report_html(markdown: str, title: str, charts: list[ChartImage]) -> str:
    """The report as one self-contained HTML page; each chart image becomes its inline SVG."""
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
    body = markdown_to_html(_IMAGE_LINE.sub(hold, markdown.replace(BANNER + "\n", "", 1)))
    for key, block in placeholders.items():
        body = body.replace(f"<p>{key}</p>", block)
    return page(html.unescape(title), body)
