"""The learning context (SPEC §5): past runs ranked by how similar their requests are to a new one.

Ranking is BM25 from the `rank_bm25` library over tokens that work for English and Korean alike
(see `tokenize`). The ranking, with its scores, is kept in runs/<run_id>/learning_context.md as a
markdown table a person can read, and read back from there by later steps.
"""

from __future__ import annotations

import math
import re
import sys
import unicodedata
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np
import structlog
from rank_bm25 import BM25L

from multiverse.atomic import atomic_write_text
from multiverse.contracts import LearningContext, Mode, PastRun
from multiverse.errors import TableError
from multiverse.home import RunPaths
from multiverse.tablefile import parse_table_text, render_table

log = structlog.get_logger(__name__)

LEARNING_CONTEXT_FILE = "learning_context.md"
COLUMNS = ("rank", "run_id", "score", "user_request")
TITLE = "Learning context"
NO_PAST_RUNS = "No past runs: this is an initial run."
NO_SIMILAR_RUNS = "No past run has a request similar to this one."

_HANGUL = "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"
_CJK = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
# Three kinds of runs: Hangul, other CJK (ideographs and kana), and every other letter/digit word.
_TOKEN = re.compile(rf"([{_HANGUL}]+)|([{_CJK}]+)|([^\W_{_HANGUL}{_CJK}]+)")
# A packed string keeps the list readable; one element per line would take 56 lines.
_STOP_WORDS = frozenset(
    """a an and are as at be been but by can could do for from has have i if in into is it its
    me my of on or our please should so than that the their them then there these they this
    those to was we were what when which will with would you your""".split()  # noqa: SIM905
)


def _bigrams(run: str) -> list[str]:
    return [run[index : index + 2] for index in range(len(run) - 1)]


def tokenize(text: str) -> list[str]:
    """Index terms of a text, for English and Korean alike.

    Latin (and other alphabetic) words and numbers are lower-cased, minus a few English stop
    words. Korean has no reliable word boundary for a ranker (particles stick to nouns:
    시장을, and compounds may or may not be spaced: 시장분석 / 시장 분석), so a Hangul run gives
    itself plus its character bigrams, which makes all three share 시장. Chinese and Japanese
    runs give their bigrams.
    """
    tokens: list[str] = []
    for hangul, cjk, word in _TOKEN.findall(unicodedata.normalize("NFKC", text).lower()):
        if word:
            if word not in _STOP_WORDS:
                tokens.append(word)
        elif hangul:
            tokens.append(hangul)
            if len(hangul) > 2:  # a two-syllable run is its own only bigram
                tokens += _bigrams(hangul)
        else:
            tokens += _bigrams(cjk) if len(cjk) > 1 else [cjk]
    return tokens


class Requested(Protocol):
    """A past run as ranking reads it: a live row, or an archived run's request."""

    @property
    def run_id(self) -> str: ...

    @property
    def user_request(self) -> str: ...


def rank_past_runs(request: str, past: Sequence[Requested], limit: int = 5) -> LearningContext:
    """The past runs whose requests share terms with `request`, best first, at most `limit`.

    Scored with rank_bm25's BM25L, chosen over the other two variants of the library:
    BM25Okapi's idf log((N-n+0.5)/(n+0.5)) is negative for a term in more than half the runs, and
    its epsilon floor (a fraction of the average idf) is itself negative when there are only one
    or two past runs, so a genuinely similar request could score below zero and be dropped;
    rank_bm25's BM25Plus adds its delta for every query term even to runs that lack the term,
    so every run would score above zero. BM25L's idf log((N+1)/(n+0.5)) is always positive and
    a term a run lacks adds exactly 0: a run scores above zero if and only if it shares a term.
    Query terms are counted once; ties go to the newer run (higher run_id).
    """
    query = list(dict.fromkeys(tokenize(request)))
    if not past or not query or limit <= 0:
        return LearningContext()
    index = bm25_index(tuple(run.user_request for run in past))
    if index is None:
        return LearningContext()
    # Only runs sharing a term can score above zero; scoring just those keeps 10,000 runs fast.
    candidates = index.candidates(query)
    if not candidates:
        return LearningContext()
    scores = np.round(np.asarray(index.bm25.get_batch_scores(query, candidates)), 3)
    kept = np.flatnonzero(scores > 0)
    matching = len(kept)
    if matching > limit:  # only the best `limit` scores, with their ties, need sorting
        cutoff = np.partition(scores[kept], -limit)[-limit]
        kept = kept[scores[kept] >= cutoff]
    best = sorted(
        ((float(scores[j]), past[candidates[j]].run_id, candidates[j]) for j in kept),
        reverse=True,
    )[:limit]
    log.debug("learning_ranked", past_runs=len(past), matching=matching)
    return LearningContext(
        past_runs=[
            PastRun(run_id=run_id, score=score, user_request=past[i].user_request)
            for score, run_id, i in best
        ]
    )


@dataclass(frozen=True)
class PastRequestIndex:
    """rank_bm25's BM25L over past requests, with the runs each term occurs in."""

    bm25: BM25L
    postings: dict[str, array[int]]  # compact: 4 bytes a posting, not a list's 8 + an int

    def candidates(self, query: list[str]) -> list[int]:
        """The positions of the past requests that share a term with `query`, in order."""
        found: set[int] = set()
        for term in query:
            found.update(self.postings.get(term, ()))
        return sorted(found)


@lru_cache(maxsize=1)
def bm25_index(requests: tuple[str, ...]) -> PastRequestIndex | None:
    """The index of these past requests (None if none has a term).

    Building it is most of the cost of ranking (~0.1 s for 10,000 runs), so the last index is
    kept, and the daemon builds the next one while it waits (`warm_index`): the past runs a
    new request is ranked against are the runs the daemon already knew.
    """
    corpus = [_terms(request) for request in requests]
    if not any(corpus):
        return None
    postings: dict[str, array[int]] = {}
    for position, terms in enumerate(corpus):
        for term in set(terms):
            found = postings.get(term)
            if found is None:
                found = postings[term] = array("I")
            found.append(position)
    return PastRequestIndex(BM25L(corpus), postings)


def warm_index(past: Sequence[Requested]) -> None:
    """Build the index a request arriving now would be ranked with."""
    bm25_index(tuple(run.user_request for run in past))


@lru_cache(maxsize=100_000)
def _terms(request: str) -> tuple[str, ...]:
    # Cached: a past request is tokenized once per process, not once per new request. Terms
    # are interned: 100,000 requests share one string per distinct term (their index's
    # largest part was a new string per occurrence).
    return tuple(sys.intern(term) for term in tokenize(request))


def learning_context_path(run: RunPaths) -> Path:
    """Where a run keeps its learning context: runs/<run_id>/learning_context.md."""
    return run.root / LEARNING_CONTEXT_FILE


def render_learning_context(context: LearningContext, mode: Mode) -> str:
    """Markdown for learning_context.md: title, mode, then the ranking table or a sentence."""
    lines = [f"# {TITLE}\n", "\n", f"Mode: {mode.value}\n", "\n"]
    if not context.past_runs:
        sentence = NO_PAST_RUNS if mode is Mode.INITIAL_RUN else NO_SIMILAR_RUNS
        lines.append(sentence + "\n")
        return "".join(lines)
    lines += [
        "Past runs whose requests are most similar to this one, best first "
        "(BM25 score: higher is more similar).\n",
        "\n",
    ]
    rows = [
        [str(rank), run.run_id, f"{run.score:.3f}", run.user_request]
        for rank, run in enumerate(context.past_runs, 1)
    ]
    lines += render_table(COLUMNS, rows)
    return "".join(lines)


def write_learning_context(run: RunPaths, context: LearningContext, mode: Mode) -> Path:
    """Write the run's learning_context.md atomically; returns its path."""
    path = learning_context_path(run)
    atomic_write_text(path, render_learning_context(context, mode))
    log.info("learning_context_written", run_id=run.run_id, past_runs=len(context.past_runs))
    return path


def read_learning_context(path: Path) -> LearningContext:
    """Parse learning_context.md back; a missing file is an empty context, a broken one raises."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return LearningContext()
    lines = [line.strip() for line in text.splitlines()]
    has_table = any(line.startswith("|") for line in lines)
    if not has_table and (NO_PAST_RUNS in lines or NO_SIMILAR_RUNS in lines):
        return LearningContext()
    table = parse_table_text(text, path, COLUMNS)
    past: list[PastRun] = []
    for number, (rank, run_id, score, request) in enumerate(table.rows):
        line = table.row_line_number(number)
        if not rank.isdigit():
            raise TableError(path, line, f"rank {rank!r} is not a whole number")
        try:
            value = float(score)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise TableError(path, line, f"score {score!r} is not a number")
        if not run_id:
            raise TableError(path, line, "run_id is empty")
        past.append(PastRun(run_id=run_id, score=value, user_request=request))
    return LearningContext(past_runs=past)
