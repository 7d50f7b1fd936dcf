"""The strategy document (STRATEGIZING): themes, largest figures, opportunities, risks, direction.

Built from the evidence the analysis documents cite; every point keeps its source.
"""

from __future__ import annotations

import re
from collections import Counter

from executor.builtin.document import DocContext, bullet_list, opening
from executor.builtin.evidence import (
    Digest,
    Point,
    dedupe_points,
    figures_table,
    largest_figures,
    point_line,
    ranked_points,
    source_heading,
)
from executor.builtin.extract import Frozen
from executor.builtin.tabular import markdown_table
from executor.builtin.text import matches_any, terms

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


def direction(digests: list[Digest], limit: int) -> list[Point]:
    """The recommended moves: the leading opportunities, the leading risk, then the best points."""
    points = all_points(digests)
    opportunities, risks = classify(points)
    return dedupe_points([*opportunities[:2], *risks[:1], *points])[:limit]


def direction_intro(found: list[Theme], source_count: int) -> str:
    """The sentence that frames the recommended direction."""
    if not found:
        return "The sources give too little recurring material to name priorities."
    names = ", ".join(f"**{t.term}**" for t in found[:3])
    return (
        f"Concentrate on {names}: these themes recur most across the {source_count} source(s). "
        "Act on the leading opportunities first, and set a mitigation against each risk before "
        "committing budget."
    )


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
    lines += ["## Largest figures", ""]
    lines += [figures_table(largest), ""] if largest else ["_No figures found._", ""]
    lines += ["## Opportunities", ""]
    lines += bullet_list([point_line(p) for p in opportunities[:6]], "No growth signals found.")
    lines += ["## Risks", ""]
    lines += bullet_list([point_line(p) for p in risks[:6]], "No risk signals found.")
    lines += ["## Recommended direction", "", direction_intro(found, len(digests)), ""]
    moves = direction(digests, 5)
    lines += [point_line(p, f"{n}.") for n, p in enumerate(moves, 1)]
    lines += ["", "## Sources", "", *(source_heading(0, d) for d in digests)]
    return "\n".join(lines).rstrip() + "\n"
