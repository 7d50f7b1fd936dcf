"""The working documents of the offline engine, phase by phase: the analysis report, the strategy,
the refined content and the assembly plan, and what they all share.
"""

from __future__ import annotations

import re
from collections import Counter

from executor.builtin.evidence import (
    BANNER,
    Digest,
    Figure,
    Passage,
    Point,
    dedupe_points,
    figures_table,
    is_conclusion,
    key_figures,
    largest_figures,
    point_line,
    ranked_points,
    source_heading,
)
from executor.builtin.extract import Frozen
from executor.builtin.relevance import purpose_focus, rank
from executor.builtin.tables import TableFacts, format_number, markdown_table
from executor.builtin.text import matches_any, shorten, terms


class DocContext(Frozen):
    """The task a document answers, as the document tells it."""

    run_id: str
    task_id: str
    task_name: str
    task_purpose: str
    phase_name: str
    request: str
    instructions: list[str]
    inputs: list[str]


def opening(context: DocContext, kind: str) -> list[str]:
    """The banner, the title and the task's identity lines of a workspace document."""
    inputs = ", ".join(f"`{path}`" for path in context.inputs) or "none"
    lines = [
        BANNER,
        "",
        f"# {kind}: {context.task_name}",
        "",
        f"- **Run:** `{context.run_id}` · **Task:** `{context.task_id}` ({context.phase_name})",
    ]
    if context.task_purpose:
        lines.append(f"- **Purpose:** {' '.join(context.task_purpose.split())}")
    lines += [
        f"- **Request:** {shorten(context.request, 300) or '(empty)'}",
        f"- **Inputs:** {inputs}",
        "",
    ]
    return lines


def sources_overview(digests: list[Digest]) -> list[str]:
    """A table of every source: kind, title and its basic facts."""
    rows = [[f"`{d.source}`", d.kind, d.title, "; ".join(d.facts)] for d in digests]
    return [markdown_table(["Source", "Kind", "Title", "Facts"], rows), ""]


def bullet_list(items: list[str], empty: str) -> list[str]:
    """Lines of a bullet list, or one line saying there is nothing to list."""
    return [*items, ""] if items else [f"_{empty}_", ""]


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


_OPPORTUNITY = re.compile(
    r"\b(?:grow|increas|opportunit|expan|ris(?:e|es|ing)\b|gain|improv|strong|potential|"
    r"advantage|outperform|accelerat|boost|record|lead)\w*",
    re.IGNORECASE,
)
_KOREAN_OPPORTUNITY = ("성장", "증가", "기회", "확대", "상승", "개선", "호조", "유망", "수요")
_RISK = re.compile(
    r"\b(?:risk|declin|decreas|cost|threat|competi|loss|lost|fall|drop|weak|uncertain|"
    r"challeng|pressure|delay|regulat|inflation|shortage|recall|overhang|squeez|burn|discount)\w*",
    re.IGNORECASE,
)
_KOREAN_RISK = (
    "위험",
    "감소",
    "하락",
    "비용",
    "손실",
    "경쟁",
    "위협",
    "부진",
    "규제",
    "불확실",
    "둔화",
)
# Words of the engine's own column sentences, which are not themes of the material.
_META = frozenset(
    (
        "column", "ranges", "rows", "row", "sum", "highest", "values", "value", "thousand",
        "million", "billion", "trillion", "percent", "grew", "rose", "fell", "reached", "quarter",
    )
)  # fmt: skip


class Theme(Frozen):
    """A term that recurs across the evidence, and where."""

    term: str
    mentions: int
    sources: list[str]


def themes(digests: list[Digest], limit: int) -> list[Theme]:
    """The most frequent meaningful terms of the points and figure contexts."""
    mentions: Counter[str] = Counter()
    where: dict[str, list[str]] = {}
    for digest in digests:
        texts = dict.fromkeys(
            [*(p.text for p in digest.points), *(f.context for f in digest.figures)]
        )
        for text in texts:
            for term in set(terms(text)) - _META:
                mentions[term] += 1
                where.setdefault(term, [])
                if digest.source not in where[term]:
                    where[term].append(digest.source)
    ranked = sorted(mentions, key=lambda t: (-mentions[t], -len(where[t]), t))
    return [Theme(term=t, mentions=mentions[t], sources=where[t]) for t in ranked[:limit]]


def classify(points: list[Point]) -> tuple[list[Point], list[Point]]:
    """Opportunities and risks among the points, by their cue words (ties count as risks)."""
    opportunities: list[Point] = []
    risks: list[Point] = []
    for point in points:
        up = matches_any(point.text, _OPPORTUNITY, _KOREAN_OPPORTUNITY)
        down = matches_any(point.text, _RISK, _KOREAN_RISK)
        if down and down >= up:
            risks.append(point)
        elif up:
            opportunities.append(point)
    return opportunities, risks


def all_points(digests: list[Digest]) -> list[Point]:
    """Every point, best first across sources."""
    return ranked_points(digests, sum(len(d.points) for d in digests))


def sources_conclude(digests: list[Digest], limit: int) -> list[Point]:
    """The points that are the sources' own conclusions or advice, in order."""
    return [
        p for p in all_points(digests)
        if is_conclusion(Passage(text=p.text, source=p.source, section="", line=0))
    ][:limit]


def render_strategy(context: DocContext, digests: list[Digest]) -> str:
    """The strategy document."""
    found = themes(digests, 8)
    opportunities, risks = classify(all_points(digests))
    lines = opening(context, "Strategy")
    if context.instructions:
        lines += ["## Instructions followed", "", *(f"- {i}" for i in context.instructions), ""]
    lines += ["## Themes", ""]
    rows = [[t.term, str(t.mentions), ", ".join(f"`{s}`" for s in t.sources)] for t in found]
    lines += [markdown_table(["Theme", "Mentions", "Sources"], rows), ""] if rows else []
    largest = largest_figures(digests, 8)
    lines += ["## Figures (each unit ranked on its own)", ""]
    lines += [figures_table(largest), ""] if largest else ["_No figures found._", ""]
    lines += ["## Statements using growth words (matched by keyword, not judged)", ""]
    lines += bullet_list([point_line(p) for p in opportunities[:6]], "None found.")
    lines += ["## Statements using risk words (matched by keyword, not judged)", ""]
    lines += bullet_list([point_line(p) for p in risks[:6]], "None found.")
    lines += ["## What the sources conclude (quoted as theirs)", ""]
    lines += bullet_list(
        [point_line(p) for p in sources_conclude(digests, 6)],
        "The sources state no conclusion of their own; the offline engine draws none.",
    )
    lines += ["", "## Sources", "", *(source_heading(0, d) for d in digests)]
    return "\n".join(lines).rstrip() + "\n"


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
