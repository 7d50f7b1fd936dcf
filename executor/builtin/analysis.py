"""The analysis report (ANALYZING, and Phase 0's first analysis): facts of every reference."""

from __future__ import annotations

from executor.builtin.document import DocContext, bullet_list, opening, sources_overview
from executor.builtin.evidence import (
    Digest,
    Point,
    dedupe_points,
    figures_table,
    key_figures,
    point_line,
    ranked_points,
    source_heading,
)
from executor.builtin.passages import Passage
from executor.builtin.relevance import purpose_focus, rank
from executor.builtin.tabular import TableFacts, format_number, markdown_table

TOP_POINTS = 6
TOP_FIGURES = 12
FIGURES_PER_SOURCE = 15


def relevant_points(context: DocContext, digests: list[Digest], limit: int) -> list[Point]:
    """The key sentences that best match the request and the task's purpose (a purpose edited
    by hand steers them), then the best of each source for the rest."""
    points = ranked_points(digests, sum(len(d.points) for d in digests))
    query = f"{context.request} {purpose_focus(context.task_purpose)}"
    passages = [
        Passage(text=p.text, source=p.source, section="", line=n) for n, p in enumerate(points)
    ]
    ranked = [points[passage.line] for passage, score in rank(passages, query) if score > 0]
    return dedupe_points([*ranked, *points])[:limit]


def render_analysis(context: DocContext, digests: list[Digest]) -> str:
    """The analysis report: overview, cross-source key points and figures, one section a source."""
    lines = opening(context, "Analysis")
    lines += ["## Sources", "", *sources_overview(digests)]
    lines += ["## Key sentences across sources (best match to the request and purpose first)", ""]
    lines += bullet_list(
        [point_line(p) for p in relevant_points(context, digests, TOP_POINTS)],
        "No key sentences found.",
    )
    lines += ["## Key figures", ""]
    figures = key_figures(digests, TOP_FIGURES)
    lines += [figures_table(figures), ""] if figures else ["_No figures found._", ""]
    for digest in digests:
        lines += _source_section(digest)
    return "\n".join(lines).rstrip() + "\n"


def _source_section(digest: Digest) -> list[str]:
    lines = [source_heading(2, digest), "", f"- **Kind:** {digest.kind}"]
    lines += [f"- {fact}" for fact in digest.facts if fact != digest.note]
    if digest.note:
        lines.append(f"- **Note:** {digest.note}")
    lines.append("")
    if digest.headings:
        lines += ["### Structure", ""]
        lines += [f"{'  ' * (h.level - 1)}- {h.text}" for h in digest.headings[:30]]
        lines.append("")
    if digest.table is not None:
        lines += _table_section(digest.table)
    if digest.points:
        lines += ["### Key sentences", "", *(point_line(p) for p in digest.points), ""]
    figures = [f for f in digest.figures if f.kind != "year"][:FIGURES_PER_SOURCE]
    if figures:
        lines += ["### Figures", "", figures_table(figures), ""]
    return lines


def _table_section(table: TableFacts) -> list[str]:
    lines = ["### Columns", ""]
    if table.numeric:
        rows = [
            [s.name, str(s.count), format_number(s.minimum), format_number(s.maximum),
             format_number(s.total)]
            for s in table.numeric
        ]  # fmt: skip
        lines += [markdown_table(["Column", "Values", "Min", "Max", "Sum"], rows), ""]
    if table.preview:
        lines += ["### Preview", "", table.preview, ""]
    return lines
