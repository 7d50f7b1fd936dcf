"""A document summarised for a person who asked for it: longer than the catalog's one line.

The title, the outline of sections, the most central sentences (in the order the document has
them) and the key figures, each cited to its file, read the way a run reads its references.
"""

from __future__ import annotations

from pathlib import Path

from executor.builtin.evidence import Digest, Point, figures_table, key_figures, point_line
from executor.builtin.paths import TaskError, relative
from executor.builtin.sources import MAX_BYTES, decode, read_references
from multiverse.unread import open_regular

KEY_POINTS = 6
KEY_FIGURES = 6


def in_document_order(points: list[Point], text: str) -> list[Point]:
    """The points ordered by where they stand in `text` (not found: last; pure)."""

    def where(point: Point) -> int:
        at = text.find(point.text[:40])
        return at if at >= 0 else len(text)

    return sorted(points, key=where)


def render_summary(digest: Digest, text: str) -> str:
    """The summary of one source's digest; `text` is its content, for the sentences' order."""
    lines = [f"## Summary of `{digest.source}` — {digest.title}", ""]
    facts = [fact for fact in digest.facts if not fact.startswith("sections: ")]
    if facts:
        lines.append(f"_{'; '.join(facts)}._")
        lines.append("")
    sections = [h.text for h in digest.headings if h.level == 2]
    if sections:
        lines += ["### Sections", "", *(f"- {section}" for section in sections), ""]
    points = in_document_order(digest.points[:KEY_POINTS], text)
    if points:
        lines += ["### Key sentences", "", *(point_line(point) for point in points), ""]
    figures = key_figures([digest], KEY_FIGURES)
    if figures:
        lines += ["### Key figures", "", figures_table(figures), ""]
    if digest.note:
        lines += [digest.note, ""]
    return "\n".join(lines).rstrip()


def summarize_document(home: Path, path: Path) -> str:
    """The summary of one file of the home, its sentences and figures cited to it."""
    files, digests = read_references(home, [relative(home, path)])
    own = [digest for digest in digests if digest.source in files] or digests
    if not own:
        raise TaskError(f"`{relative(home, path)}` holds nothing to summarise")
    text = _text(path)
    return "\n\n".join(render_summary(digest, text) for digest in own)


def _text(path: Path) -> str:
    try:
        with open_regular(path) as handle:  # never blocks on a named pipe
            return decode(handle.read(MAX_BYTES)) or ""
    except OSError:
        return ""
