"""Publishing the evidence brief into outputs/<run_id>/: report.md, report.html, chart SVGs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from executor.builtin.brief import BriefInput, render_brief
from executor.builtin.brief_charts import draw
from executor.builtin.brief_material import gather
from executor.builtin.brief_spec import brief_spec
from executor.builtin.report import report_html
from multiverse.asks import sources_in
from multiverse.atomic import atomic_write_text
from multiverse.contracts import TaskAssignment
from multiverse.models import AssetType

_SVG_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)


@dataclass(frozen=True)
class Written:
    """A file the engine wrote, and what kind of asset it is."""

    path: Path
    asset_type: AssetType


def publish_brief(home: Path, assignment: TaskAssignment, markdown_path: Path) -> list[Written]:
    """Write the evidence brief (markdown and self-contained HTML) and its chart files."""
    task = assignment.task
    spec = brief_spec(assignment.request, assignment.instructions, assignment.run_id,
                      purpose=task.task_purpose)  # fmt: skip
    material = gather(home, task.related_references)
    stem = markdown_path.stem
    drawn = [
        draw(home, wanted, material.tables, stem, number)
        for number, wanted in enumerate(spec.charts, start=1)
    ]
    own = {i.instruction_type: i.content for i in assignment.instructions
           if i.run_id == assignment.run_id}  # fmt: skip
    left_out = sources_in(own.get("SOURCES", ""))[1]
    markdown = render_brief(
        BriefInput(
            spec=spec,
            passages=material.passages,
            charts=drawn,
            sources=material.sources,
            left_out=left_out,
            run_id=assignment.run_id,
        )
    )
    folder = markdown_path.parent
    images = [chart.image for chart in drawn if chart.image is not None]
    written: list[Written] = []
    for image in images:
        atomic_write_text(folder / image.file_name, image.svg + "\n")
        written.append(Written(folder / image.file_name, AssetType.TOOL_OUTPUT))
    atomic_write_text(markdown_path, markdown)
    html_path = folder / f"{stem}.html"
    title = markdown.split("\n# ", 1)[1].split("\n", 1)[0] if "\n# " in markdown else stem
    atomic_write_text(html_path, report_html(markdown, title, images))
    return [
        Written(markdown_path, AssetType.FINAL_OUTPUT),
        Written(html_path, AssetType.FINAL_OUTPUT),
        *written,
    ]
