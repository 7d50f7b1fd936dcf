"""The passages of a page worth quoting for a query: paragraphs ranked by BM25 (pure).

rank_bm25's BM25L, as the learning context uses it: its idf is always positive and a passage
that lacks every query term scores exactly 0, so "relevant" means "shares a term". Terms are the
offline engine's (English and Korean alike). Deterministic: ties keep the page's order.
"""

from __future__ import annotations

import re

from rank_bm25 import BM25L

from executor.builtin.text import clean_inline, split_sentences, terms, unique

MIN_CHARS = 40
MAX_CHARS = 600
_BLOCKS = re.compile(r"\n\s*\n")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def paragraphs(markdown: str, max_chars: int = MAX_CHARS) -> list[str]:
    """The page's prose paragraphs as plain text, long ones cut at sentence ends."""
    found: list[str] = []
    for block in _BLOCKS.split(markdown):
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines or all(line.lstrip().startswith(("#", "|", "---")) for line in lines):
            continue  # headings, tables and rules are not passages to quote
        text = clean_inline(" ".join(_LIST_MARK.sub("", line) for line in lines))
        if len(text) >= MIN_CHARS:
            found.extend(_cut(text, max_chars))
    return found


def _cut(text: str, max_chars: int) -> list[str]:
    pieces: list[str] = []
    current = ""
    for sentence in split_sentences(text):
        if current and len(current) + 1 + len(sentence) > max_chars:
            pieces.append(current)
            current = ""
        current = f"{current} {sentence}".strip()
    if current:
        pieces.append(current)
    return [piece if len(piece) <= max_chars else piece[: max_chars - 1] + "…" for piece in pieces]


def best_passages(markdown: str, query: str, limit: int = 2) -> list[str]:
    """At most `limit` paragraphs sharing a term with `query`, best first (none if none does)."""
    candidates = paragraphs(markdown)
    wanted = unique(terms(query))
    corpus = [terms(text) for text in candidates]
    if not wanted or not any(corpus) or limit < 1:
        return []
    # BM25L divides by the average length: a passage without terms gets a placeholder token.
    scores = BM25L([tokens or ["\x00"] for tokens in corpus]).get_scores(wanted)
    ranked = sorted(range(len(candidates)), key=lambda i: (-float(scores[i]), i))
    return [candidates[i] for i in ranked if float(scores[i]) > 0][:limit]
