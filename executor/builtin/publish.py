"""Publishing the final report into outputs/<run_id>/: report.md, report.html, chart SVGs."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path

from executor.builtin.chart import render_svg, svgs_in
from executor.builtin.document import DocContext
from executor.builtin.evidence import Digest
from executor.builtin.report import ChartImage, render_report, report_html, report_title
from executor.builtin.series import choose, comparison_chart, text_charts
from executor.builtin.sources import MAX_BYTES, decode
from multiverse.atomic import atomic_write_text
from multiverse.home import Home
from multiverse.models import AssetType

_SVG_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)


@dataclass(frozen=True)
class Written:
    """A file the engine wrote, and what kind of asset it is."""

    path: Path
    asset_type: AssetType


def _read_text(path: Path) -> str:
    with path.open("rb") as handle:
        return decode(handle.read(MAX_BYTES)) or ""


def find_charts(home: Path, run_id: str, files: list[str], stem: str) -> list[ChartImage]:
    """Charts among the references and in the run's workspace and outputs, as SVG images."""
    run = Home(home).run(run_id)
    candidates = [home / f for f in files if f.endswith((".html", ".htm", ".svg"))]
    candidates += sorted(run.workspace.rglob("*.html")) if run.workspace.is_dir() else []
    candidates += sorted(run.outputs.glob("*.html")) if run.outputs.is_dir() else []
    images: list[ChartImage] = []
    for path in dict.fromkeys(p.resolve() for p in candidates):
        if path.name == f"{stem}.html" or not path.is_file():
            continue
        for svg in svgs_in(_read_text(path)):
            title = _SVG_TITLE.search(svg)
            caption = html.unescape(title.group(1)) if title else path.stem
            number = len(images) + 1
            images.append(
                ChartImage(file_name=f"{stem}-chart-{number}.svg", caption=caption, svg=svg)
            )
    return images


def drawn_charts(
    home: Path, files: list[str], digests: list[Digest], slug: str
) -> list[ChartImage]:
    """Charts drawn from the references' own tables and figures, when no chart was made before."""
    specs = []
    for name in files:
        path = home / name
        specs += text_charts(_read_text(path), name, path.suffix.lower())
    comparison = comparison_chart(digests)
    chosen = choose(specs, 2) + ([comparison] if comparison is not None else [])
    return [
        ChartImage(
            file_name=f"{slug}-chart-{n}.svg",
            caption=f"{spec.title}. Source: {spec.source}",
            svg=render_svg(spec, f"{slug}-{n}"),
        )
        for n, spec in enumerate(chosen, 1)
    ]


def publish(
    home: Path, context: DocContext, digests: list[Digest], markdown_path: Path
) -> list[Written]:
    """Write the report (markdown and self-contained HTML) and its chart files side by side."""
    stem = markdown_path.stem
    charts = find_charts(home, context.run_id, context.inputs, stem)
    if not charts:
        charts = drawn_charts(home, context.inputs, digests, stem)
    folder = markdown_path.parent
    written: list[Written] = []
    for chart in charts:
        atomic_write_text(folder / chart.file_name, chart.svg + "\n")
        written.append(Written(folder / chart.file_name, AssetType.TOOL_OUTPUT))
    markdown = render_report(context, digests, charts)
    atomic_write_text(markdown_path, markdown)
    html_path = folder / f"{stem}.html"
    atomic_write_text(html_path, report_html(markdown, report_title(context.request), charts))
    return [
        Written(markdown_path, AssetType.FINAL_OUTPUT),
        Written(html_path, AssetType.FINAL_OUTPUT),
        *written,
    ]
