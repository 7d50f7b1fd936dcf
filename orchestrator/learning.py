"""The learning context (SPEC §5): past runs ranked by how similar their requests are to a new one.

Ranking is BM25L as the `rank_bm25` library scores it (`orchestrator.request_index`, an index
that grows with each past run) over tokens that work for English and Korean alike (see
`tokenize`). The ranking, with its scores, is kept in runs/<run_id>/learning_context.md as a
markdown table a person can read, and read back from there by later steps.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import structlog

from multiverse.atomic import atomic_write_text
from multiverse.contracts import LearningContext, Mode, PastRun
from multiverse.errors import TableError
from multiverse.home import RunPaths
from multiverse.tablefile import parse_table_text, render_table
from orchestrator.past_requests import PastRequests, Requested
from orchestrator.request_index import SharedIndex

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


def rank_past_runs(
    request: str, past: PastRequests | Sequence[Requested], limit: int = 5
) -> LearningContext:
    """The past runs whose requests share terms with `request`, best first, at most `limit`.

    Scored with BM25L as rank_bm25 defines it (`orchestrator.request_index`), chosen over the
    library's other two variants: BM25Okapi's idf log((N-n+0.5)/(n+0.5)) is negative for a term
    in more than half the runs, and its epsilon floor (a fraction of the average idf) is itself
    negative when there are only one or two past runs, so a genuinely similar request could
    score below zero and be dropped; BM25Plus adds its delta for every query term even to runs
    that lack the term, so every run would score above zero. BM25L's idf log((N+1)/(n+0.5)) is
    always positive and a term a run lacks adds exactly 0: a run scores above zero if and only
    if it shares a term. Query terms are counted once; ties go to the newer run (higher run_id).
    """
    query = list(dict.fromkeys(tokenize(request)))
    past = PastRequests.of(past)
    if not past or not query or limit <= 0:
        return LearningContext()
    # Only runs sharing a term can score above zero; scoring just those keeps 100,000 runs fast.
    best, matching = _INDEX.best(past, query, limit)
    log.debug("learning_ranked", matching=matching)
    asked = past.requests_of(run_id for _score, run_id in best)
    return LearningContext(
        past_runs=[
            PastRun(run_id=run_id, score=score, user_request=asked[run_id])
            for score, run_id in best
        ]
    )


def warm_index(past: PastRequests) -> None:
    """Bring the ranking index up to date with `past`, so a request arriving now need not."""
    _INDEX.warm(past)


# The process's one index of past requests: each is tokenized once, when it joins the index.
_INDEX = SharedIndex(tokenize)


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
