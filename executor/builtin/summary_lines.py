"""Catalog lines that say what a file holds: a table by its profile (its columns with their
units, the period it covers, its row count; never a sum of codes), a document by its first
meaningful lines as the file writes them (no front matter, no bare link, no rule or fence).
"""

from __future__ import annotations

import re
from pathlib import Path

import structlog

from multiverse.documents import source_text
from multiverse.tabular import profile

log = structlog.get_logger(__name__)

DESCRIPTION_SUFFIXES = (".md", ".markdown", ".txt")
DESCRIPTION_LIMIT = 60_000  # characters of a description read for the table's units
_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\n.*?\n---[ \t]*(?:\n|\Z)", re.DOTALL)
_BARE_LINK = re.compile(
    r"^(?:[-*+]\s+)?(?:<?(?:https?|ftp)://\S+>?|\[[^\]]*\]\((?:https?|ftp)://[^)]+\)|www\.\S+)$",
    re.IGNORECASE,
)
_MARKUP_ONLY = re.compile(r"^(?:[-=_*~`#|:+\s]+|<!--.*-->|\|?[\s:|-]+\|?)$")
_HEADING = re.compile(r"^#{1,6}\s+")


def table_line(path: Path) -> str | None:
    """The profile summary of a table (the documents beside it that describe it read for its
    units); None when it cannot be profiled."""
    path = path.absolute()
    try:
        found = profile(path, root=path.parent, descriptions=_descriptions(path))
    except Exception as error:  # not a table after all: the caller describes it otherwise
        log.info("table_not_profiled", path=str(path), error=str(error)[:200])
        return None
    return found.summary()


def _stem(path: Path) -> str:
    return re.sub(r"[^0-9a-z가-힣]+", "", path.stem.lower())


def _descriptions(table: Path) -> list[str]:
    """The texts of the documents beside a table with its name (`tips.md` for `tips.csv`)."""
    stem = _stem(table)
    texts = []
    try:
        siblings = sorted(table.parent.iterdir())
    except OSError:
        return []
    for sibling in siblings:
        other = _stem(sibling)
        if (
            sibling == table
            or sibling.suffix.lower() not in DESCRIPTION_SUFFIXES
            or not stem
            or not other
            or not (other == stem or other.startswith(stem) or stem.startswith(other))
        ):
            continue
        text, _note = source_text(table.parent, sibling)
        if text:
            texts.append(text[:DESCRIPTION_LIMIT])
    return texts


_LOCATION = re.compile(r"^#{1,6}\s+(?:Page \d+|Slide \d+)(?::\s*|$)", re.MULTILINE)


def document_lines(markdown: str, limit: int) -> str:
    """The first meaningful lines of a converted document: the location headings the
    conversion adds (`## Page 2`, `## Slide 3: `) are not the file's words."""
    return first_lines(_LOCATION.sub("", markdown), limit)


def meaningful_lines(text: str) -> list[str]:
    """A document's lines that say something, in order, as the file writes them: without
    front matter, empty lines, bare links, rules, fences and table separators (a heading's
    `#` marks are markup, not words)."""
    body = _FRONT_MATTER.sub("", text, count=1)
    found = []
    for raw in body.splitlines():
        line = " ".join(raw.split())
        if not line or _BARE_LINK.match(line) or _MARKUP_ONLY.match(line):
            continue
        found.append(_HEADING.sub("", line))
    return found


def first_lines(text: str, limit: int) -> str:
    """The first meaningful lines of a text that fit in `limit` characters (the first one cut
    with "…" when it alone is longer); "" when it has none."""
    lines = meaningful_lines(text)
    if not lines:
        return ""
    kept = [lines[0]]
    for line in lines[1:]:
        if len(" ".join([*kept, line])) > limit:
            break
        kept.append(line)
    joined = " ".join(kept)
    return joined if len(joined) <= limit else joined[: limit - 1].rstrip() + "…"
