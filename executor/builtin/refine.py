"""Refined content (REFINING_CONTENT) and the assembly plan (GENERATING_OUTPUT, in workspace)."""

from __future__ import annotations

from executor.builtin.document import DocContext, bullet_list, opening
from executor.builtin.evidence import (
    Digest,
    Figure,
    Point,
    figures_table,
    key_figures,
    point_line,
    ranked_points,
    source_heading,
)
from executor.builtin.strategy import Theme, all_points, classify, themes
from executor.builtin.text import terms

SECTIONS = 5
POINTS_PER_SECTION = 5
FIGURES_PER_SECTION = 6


def _mentions(text: str, theme: Theme) -> bool:
    return theme.term in terms(text)


def _theme_section(theme: Theme, points: list[Point], figures: list[Figure]) -> list[str]:
    lines = [f"## {theme.term.capitalize()}", "", "### Key points", ""]
    lines += [point_line(p) for p in points] + [""]
    if figures:
        lines += ["### Supporting figures", "", figures_table(figures), ""]
    return lines


def render_refined(context: DocContext, digests: list[Digest]) -> str:
    """Sections by theme, each with its key points and supporting figures, nothing twice."""
    points = all_points(digests)
    figures = [f for d in digests for f in d.figures if f.kind != "year"]
    lines = opening(context, "Refined content")
    lines += ["## Summary", ""]
    lines += bullet_list([point_line(p) for p in ranked_points(digests, 5)], "No key points.")
    used: set[str] = set()
    used_figures: set[tuple[str, str]] = set()
    for theme in themes(digests, SECTIONS):
        own = [p for p in points if p.text not in used and _mentions(p.text, theme)]
        own = own[:POINTS_PER_SECTION]
        if not own:
            continue
        support = [
            f
            for f in figures
            if (f.value, f.source) not in used_figures and _mentions(f.context, theme)
        ][:FIGURES_PER_SECTION]
        used.update(p.text for p in own)
        used_figures.update((f.value, f.source) for f in support)
        lines += _theme_section(theme, own, support)
    opportunities, risks = classify(points)
    lines += ["## Statements by cue words (matched by keyword, not judged)", ""]
    lines += ["### Using growth words", ""]
    lines += bullet_list([point_line(p) for p in opportunities[:5]], "None found.")
    lines += ["### Using risk words", ""]
    lines += bullet_list([point_line(p) for p in risks[:5]], "None found.")
    rest = [p for p in points if p.text not in used]
    if rest:
        lines += ["## Further points", "", *(point_line(p) for p in rest[:12]), ""]
    lines += ["## Sources", "", *(source_heading(0, d) for d in digests)]
    return "\n".join(lines).rstrip() + "\n"


def render_assembly_plan(context: DocContext, digests: list[Digest], charts: list[str]) -> str:
    """The plan of the final deliverables: files, outline, and the material to carry into them."""
    found = themes(digests, 5)
    figures = key_figures(digests, 12)
    opportunities, risks = classify(all_points(digests))
    outputs = f"outputs/{context.run_id}"
    chart_text = ", ".join(f"`{c}`" for c in charts) if charts else "none found yet"
    lines = opening(context, "Assembly plan")
    lines += [
        "## Deliverables",
        "",
        f"- `{outputs}/report.md`: the report in markdown",
        f"- `{outputs}/report.html`: the same report, self-contained, charts inline",
        "",
        "## Outline",
        "",
        "1. Title: an evidence brief for the request; who it is for and the length asked",
        f"2. The question: the request, with {len(context.instructions)} active instruction(s)",
        "3. What the sources conclude, quoted as theirs",
        f"4. Facts ranked by relevance to the request, each with its source and location "
        f"({len(figures)} figure(s) among {len(digests)} source(s))",
        f"5. The charts asked for, over whole tables: {chart_text}",
        "6. Sources: what each gave; what was left out at the user's request",
        "7. What a model would add; the length kept",
        "",
        "Themes the sources share (by word counts): " + (", ".join(t.term for t in found) or "none")
        + f"; {len(opportunities)} statement(s) use growth words, {len(risks)} risk words.",
        "",
        "## Material to carry",
        "",
    ]
    for digest in digests:
        lines += [source_heading(3, digest), ""]
        lines += bullet_list([point_line(p) for p in digest.points[:6]], "No key points.")
        own = [f for f in digest.figures if f.kind != "year"][:8]
        lines += [figures_table(own), ""] if own else []
    return "\n".join(lines).rstrip() + "\n"
