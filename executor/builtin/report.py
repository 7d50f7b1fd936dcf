"""The final report as markdown (GENERATING_OUTPUT into outputs/), and its HTML rendering."""

from __future__ import annotations

import html
import re

from mistletoe import block_token, span_token
from mistletoe.block_token import Document
from mistletoe.html_renderer import HtmlRenderer

from executor.builtin.chart import figure_block, page
from executor.builtin.document import DocContext, bullet_list
from executor.builtin.evidence import (
    BANNER,
    Digest,
    figures_table,
    key_figures,
    point_line,
    ranked_points,
    source_heading,
)
from executor.builtin.extract import Frozen, extract_text, strip_front_matter
from executor.builtin.strategy import all_points, classify, direction, direction_intro, themes
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


def _intro(context: DocContext, source_count: int) -> list[str]:
    request = strip_front_matter(context.request).strip()
    quoted = [f"> {line}" if line.strip() else ">" for line in request.splitlines()]
    lines = ["**The request**", "", *(quoted or ["> (empty)"]), "", "**Instructions followed**", ""]
    lines += bullet_list([f"- {i}" for i in context.instructions], "No active instructions.")
    lines += [
        f"_Run `{context.run_id}`, task `{context.task_id}`: built from {source_count} "
        "source(s) by extractive analysis._",
        "",
    ]
    return lines


def _strategy(digests: list[Digest]) -> list[str]:
    found = themes(digests, 6)
    opportunities, risks = classify(all_points(digests))
    lines = ["## Strategy and recommendations", "", "### Themes", ""]
    summary = ", ".join(f"**{t.term}** ({t.mentions} in {len(t.sources)} source(s))" for t in found)
    lines += [summary or "_No recurring themes._", "", "### Opportunities", ""]
    lines += bullet_list([point_line(p) for p in opportunities[:5]], "No growth signals found.")
    lines += ["### Risks", ""]
    lines += bullet_list([point_line(p) for p in risks[:5]], "No risk signals found.")
    lines += ["### Recommended direction", "", direction_intro(found, len(digests)), ""]
    lines += [point_line(p, f"{n}.") for n, p in enumerate(direction(digests, 5), 1)]
    return [*lines, ""]


def _how_made(inputs: list[str], digests: list[Digest], charts: list[ChartImage]) -> list[str]:
    lines = [
        "## How this was made",
        "",
        "- Produced offline by the multiverse builtin engine: sentences, figures and themes were "
        "extracted from the sources and ranked; no language model and no web search were used, "
        "so nothing here is invented, and nothing beyond the sources is known.",
        "- Stages whose documents fed this report: "
        + (", ".join(f"`{path}`" for path in inputs) or "none"),
        "- Original sources: " + (", ".join(f"`{d.source}`" for d in digests) or "none"),
    ]
    if charts:
        lines.append("- Charts: " + ", ".join(f"`{c.file_name}`" for c in charts))
    return [*lines, ""]


def _is_request_file(source: str) -> bool:
    parts = source.split("/")
    return len(parts) == 3 and parts[0] == "runs" and parts[2] == "request.md"


def render_report(context: DocContext, digests: list[Digest], charts: list[ChartImage]) -> str:
    """The final report in markdown."""
    # The request is quoted in the intro; as a "source" it would only echo itself back.
    digests = [d for d in digests if not _is_request_file(d.source)] or digests
    lines = [BANNER, "", f"# {report_title(context.request)}", "", *_intro(context, len(digests))]
    lines += ["## Executive summary", ""]
    lines += bullet_list([point_line(p) for p in ranked_points(digests, 5)], "No key points.")
    figures = key_figures(digests, 12)
    lines += ["## Key figures", ""]
    lines += [figures_table(figures), ""] if figures else ["_No figures found._", ""]
    if charts:
        lines += ["## Charts", ""]
        lines += [f"![{c.caption}]({c.file_name})\n" for c in charts]
    lines += ["## Findings by source", ""]
    for digest in digests:
        lines += [source_heading(3, digest), ""]
        lines += [f"- _{fact}_" for fact in digest.facts[:3]]
        lines += bullet_list([point_line(p) for p in digest.points[:5]], "No key sentences.")
    lines += _strategy(digests)
    lines += _how_made(context.inputs, digests, charts)
    return "\n".join(lines).rstrip() + "\n"


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
