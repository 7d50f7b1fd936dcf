"""Relevance: passages ranked by how well they match a request (BM25 over their terms).

Pure. The query is the request with its MODIFY texts and the task's purpose; the words that
only say what to produce ("write", "memo", "two-page", "chart") are dropped, since they say
nothing about which facts matter. A passage that shares no term with the query scores 0: it
is not presented as bearing on the request.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rank_bm25 import BM25Okapi

from executor.builtin.evidence import Passage
from executor.builtin.text import terms
from multiverse.spec import RequestSpec

# Words of a request that name the work, not its subject.
WORK_WORDS = frozenset(
    [
        "analyse",
        "analyze",
        "analysis",
        "write",
        "written",
        "make",
        "create",
        "prepare",
        "produce",
        "draft",
        "give",
        "provide",
        "summarise",
        "summarize",
        "summary",
        "memo",
        "memos",
        "report",
        "reports",
        "brief",
        "briefing",
        "note",
        "notes",
        "document",
        "documents",
        "page",
        "pages",
        "pager",
        "chart",
        "charts",
        "graph",
        "graphs",
        "plot",
        "table",
        "tables",
        "figure",
        "figures",
        "asset",
        "assets",
        "file",
        "files",
        "folder",
        "based",
        "short",
        "long",
        "word",
        "words",
        "markdown",
        "please",
        "want",
        "need",
        "help",
        "show",
        "including",
        "include",
        "detailed",
        "deck",
        "slides",
        "presentation",
        "작성",
        "작성해",
        "정리",
        "정리해",
        "요약",
        "요약해",
        "보고서",
        "메모",
        "문서",
        "자료",
        "차트",
        "그래프",
        "페이지",
        "바탕",
        "바탕으로",
        "주세요",
        "해주세요",
    ]
)


# Words the Planner's task purposes use to say what a task does; a purpose is read for its
# subject (a person may write "only what concerns Finland"), so these carry no weight.
PURPOSE_WORDS = WORK_WORDS | frozenset(
    [
        "publish",
        "publishing",
        "evidence",
        "request",
        "requested",
        "asked",
        "fact",
        "facts",
        "rank",
        "ranked",
        "ranking",
        "relevance",
        "source",
        "sources",
        "conclusion",
        "conclusions",
        "quote",
        "quoted",
        "extract",
        "extracting",
        "headings",
        "heading",
        "context",
        "key",
        "sentence",
        "sentences",
        "section",
        "sections",
        "noting",
        "bear",
        "bears",
        "consolidate",
        "recurring",
        "theme",
        "themes",
        "compared",
        "across",
        "gap",
        "gaps",
        "open",
        "question",
        "questions",
        "assess",
        "strength",
        "strengths",
        "weakness",
        "weaknesses",
        "opportunity",
        "opportunities",
        "threat",
        "threats",
        "swot",
        "style",
        "option",
        "options",
        "direction",
        "fuse",
        "refined",
        "refine",
        "claim",
        "supporting",
        "implication",
        "assembly",
        "outline",
        "block",
        "feeds",
        "workspace",
        "runs",
        "run",
        "analyzing",
        "strategizing",
        "refining",
        "generating",
        "output",
        "outputs",
        "past",
        "similar",
        "deliverable",
        "deliverables",
        "read",
        "cite",
        "cites",
        "english",
        "korean",
        "language",
        "per",
        "one",
        "each",
        "wrote",
        "written",
        "plan",
        "planned",
        "task",
        "tasks",
        "stage",
        "stages",
        "phase",
        "phases",
        "leave",
        "add",
        "remove",
        "drop",
        "instead",
        "change",
        "make",
        "keep",
        "web",
        "search",
        "searching",
        "internet",
        "page",
        "pages",
        "word",
        "words",
    ]
)
_PATHLIKE = re.compile(r"`[^`]*`|\S+/\S+|\S+\.(?:md|csv|tsv|pdf|docx|xlsx|pptx|html|txt)\b")


def purpose_focus(purpose: str) -> str:
    """The subject words of a task's purpose (paths and the Planner's own vocabulary dropped)."""
    kept = [t for t in _words(_PATHLIKE.sub(" ", purpose)) if t not in PURPOSE_WORDS]
    return " ".join(kept)


# The reason given after a file is left out ("…, it's unrelated") is part of the clause.
_WHY = re.compile(r"\s*,?\s*(?:it'?s|it is|they'?re|they are|as|because|since|that'?s)\b[^.!?\n]*")


def without_left_out(spec: RequestSpec, text: str) -> str:
    """A text of the request without the clauses that leave files out and the names of those
    files (their words choose nothing, rank nothing and title nothing)."""
    cut = [group.reading.phrase for group in spec.left_out]
    for path in spec.excluded():
        name = path.rsplit("/", 1)[-1]
        cut += [path, name, name.rsplit(".", 1)[0]]
    for phrase in sorted((p for p in cut if len(p.strip()) > 2), key=len, reverse=True):
        # a Korean phrase goes on into its word's ending ("제외" + "해 주세요"): no end boundary
        end = r"[가-힣]*" if re.search(r"[가-힣]$", phrase) else r"(?!\w)"
        pattern = rf"(?<!\w){re.escape(phrase)}{end}(?:{_WHY.pattern})?"
        text = re.sub(pattern, " ", text, flags=re.IGNORECASE)
    return text


def spec_query(spec: RequestSpec, purpose: str = "") -> str:
    """What a spec's brief ranks passages by: the request and its applied MODIFY texts, without
    the clauses that leave files out, without the audience, and without any file name or path;
    and the subject words of the task's purpose (a person may edit it: "only what concerns…")."""
    texts = [spec.request, *(change.text for change in spec.changes if change.applied)]
    text = without_left_out(spec, "\n".join(texts))
    audience = spec.audience_reading.phrase
    if audience:
        text = text.replace(audience, " ")
    focus = purpose_focus(without_left_out(spec, purpose))
    return _PATHLIKE.sub(" ", f"{text}\n{focus}" if focus else text)


def _stem(term: str) -> str:
    """A crude English stem (plural and -ing/-ed endings) so "markets" meets "market"."""
    if not term.isascii() or len(term) <= 4:
        return term
    for suffix in ("ing", "ed", "es", "s"):
        if term.endswith(suffix) and len(term) - len(suffix) >= 4:
            return term[: -len(suffix)]
    return term


_POSSESSIVE = re.compile(r"['’]s\b")


def _words(text: str) -> list[str]:
    """The terms of a text with hyphens and possessives undone ("Finland's" meets "Finland")."""
    return terms(_POSSESSIVE.sub("", text).replace("-", " "))


def subject_words(text: str) -> list[str]:
    """The words of a query that say what it is about, as written (lower-cased), once each."""
    return list(dict.fromkeys(t for t in _words(text) if t not in WORK_WORDS))


def query_terms(text: str) -> list[str]:
    """The terms of a query that say what it is about, stemmed as passages are."""
    return [_stem(t) for t in subject_words(text)]


def passage_terms(passage: Passage) -> list[str]:
    """The terms a passage is matched on: its text and its section heading (not the document's
    title, which every passage under it would share)."""
    section = passage.section if passage.depth > 1 else ""
    return [_stem(t) for t in _words(f"{passage.text} {section}")]


def rank(passages: Sequence[Passage], query: str) -> list[tuple[Passage, float]]:
    """Every passage with its BM25 score for the query, best first (ties: document order)."""
    if not passages:
        return []
    corpus = [passage_terms(p) or ["∅"] for p in passages]
    scored = list(zip(passages, _scores(corpus, query_terms(query)), strict=True))
    order = sorted(range(len(scored)), key=lambda i: (-scored[i][1], i))
    return [scored[i] for i in order]


def text_scores(texts: Sequence[str], query: str) -> list[float]:
    """Each text's BM25 score for the query, as `rank` scores passages (0: no query term)."""
    corpus = [[_stem(t) for t in _words(text)] or ["∅"] for text in texts]
    return _scores(corpus, query_terms(query))


def _scores(corpus: Sequence[list[str]], wanted: list[str]) -> list[float]:
    """BM25 scores of term lists for the wanted terms; 0 for one holding none of them."""
    if not corpus or not wanted:
        return [0.0] * len(corpus)
    scores = BM25Okapi(corpus).get_scores(wanted)
    # BM25's idf goes to zero or below for a term in most passages; a passage still holding
    # a query term bears on the request, so it keeps a small positive score.
    return [
        max(float(score), 0.001) if set(wanted) & set(terms_) else 0.0
        for score, terms_ in zip(scores, corpus, strict=True)
    ]
