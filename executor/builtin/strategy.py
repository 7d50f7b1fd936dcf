"""The strategy document (STRATEGIZING): themes, figures, statements by cue words, the sources'
own conclusions.

Built from the evidence the analysis documents cite; every point keeps its source. An offline
engine cannot judge: statements are sorted by the words they use (growth words, risk words), and
said to be, and the only advice in it is the sources' own, quoted. No direction of its own.
"""

from __future__ import annotations

import re
from collections import Counter

from executor.builtin.conclusions import is_conclusion
from executor.builtin.document import DocContext, bullet_list, opening
from executor.builtin.evidence import (
    Digest,
    Point,
    figures_table,
    largest_figures,
    point_line,
    ranked_points,
    source_heading,
)
from executor.builtin.extract import Frozen
from executor.builtin.passages import Passage
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
