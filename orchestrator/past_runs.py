"""Past runs as the learning context ranks them (SPEC §5): their run ids and requests held
live and archived (rebuilt from a shard when its file changes), and the BM25L index that ranks
them, grown one request at a time.
"""

from __future__ import annotations

import heapq
import math
import os
import re
import threading
import unicodedata
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt
import structlog

from multiverse.home import Home
from multiverse.roles import LearningContext, PastRun
from multiverse.runs import shard_dirs
from multiverse.store import (
    PROCESS_RUNS,
    USER_INSTRUCTIONS,
    Stamp,
    TableSpec,
    decode_cell,
    split_row,
    stamp_of,
)

log = structlog.get_logger(__name__)

class Requested(Protocol):
    """A past run as ranking reads it: a live row, or any object with these two attributes."""

    @property
    def run_id(self) -> str: ...

    @property
    def user_request(self) -> str: ...


class RequestBook:
    """Run ids with their requests: the requests as one blob, each with its hash."""

    __slots__ = ("_ends", "_texts", "digests", "run_ids")

    def __init__(self, pairs: Iterable[tuple[str, str]]) -> None:
        run_ids: list[str] = []
        self.digests = array("q")
        self._ends = array("Q")
        texts = bytearray()
        for run_id, request in pairs:
            run_ids.append(run_id)
            self.digests.append(hash(request))
            texts += request.encode("utf-8")
            self._ends.append(len(texts))
        self.run_ids = tuple(run_ids)
        self._texts = bytes(texts)

    @classmethod
    def of(cls, runs: Iterable[Requested]) -> RequestBook:
        """The book of rows (or any objects with a run id and a request)."""
        return cls((run.run_id, run.user_request) for run in runs)

    def __len__(self) -> int:
        return len(self.run_ids)

    def request(self, position: int) -> str:
        """The request at `position`."""
        start = self._ends[position - 1] if position else 0
        return self._texts[start : self._ends[position]].decode("utf-8")


@dataclass(frozen=True)
class PastRequests:
    """Books read as one sequence of past runs; a run in the first book (the live table) is
    read from there only. The others are archive shards, where a run has one place (its
    shard follows from its id)."""

    books: Sequence[RequestBook]

    @classmethod
    def of(cls, runs: Sequence[Requested] | PastRequests) -> PastRequests:
        """`runs` as past requests (a list of rows becomes one book)."""
        return runs if isinstance(runs, PastRequests) else cls([RequestBook.of(runs)])

    def __iter__(self) -> Iterator[tuple[RequestBook, int]]:
        """Each past run as (its book, its position in the book)."""
        if not self.books:
            return
        first = self.books[0]
        yield from ((first, position) for position in range(len(first)))
        live = set(first.run_ids)
        for book in self.books[1:]:
            for position, run_id in enumerate(book.run_ids):
                if run_id not in live:
                    yield book, position

    def __bool__(self) -> bool:
        return any(len(book) for book in self.books)

    def requests_of(self, run_ids: Iterable[str]) -> dict[str, str]:
        """The requests of the named runs (as this sequence reads them)."""
        wanted = set(run_ids)
        found: dict[str, str] = {}
        for book, position in self:
            if len(found) == len(wanted):
                break  # all found: the rest of the history need not be read
            run_id = book.run_ids[position]
            if run_id in wanted and run_id not in found:
                found[run_id] = book.request(position)
        return found


K1, B, DELTA = 1.5, 0.75, 0.5
# Documents scored at once: numpy's temporaries stay ~1 MB whatever the history (at 100,000
# past runs sharing a word with the request, scoring all at once took ~8 MB more at its peak).
CHUNK = 16_384


class RequestIndex:
    """BM25L postings of past requests, with the run each document is.

    A term found in one request only (most of a vocabulary: names, numbers) is kept as one
    int, not two arrays: at 100,000 past runs that is ~22 MB less held.
    """

    def __init__(self) -> None:
        self.run_ids: list[str] = []
        self._positions: dict[str, int] = {}  # run_id → its document
        self._digests = array("q")  # per document: the hash of the request indexed
        self._seen = array("I")  # per document: the last pass (`sweep`) that found its run
        self._pass = 0
        self._lengths = array("I")
        self._total = 0
        self._postings: dict[str, tuple[array[int], array[int]]] = {}
        self._single: dict[str, int] = {}  # a term of one document: document << 16 | count

    def __len__(self) -> int:
        return len(self.run_ids)

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._positions

    def add(self, run_id: str, digest: int, terms: Sequence[str]) -> None:
        """Index one past request (`digest`: its hash) under its run."""
        position = len(self.run_ids)
        self.run_ids.append(run_id)
        self._positions[run_id] = position
        self._digests.append(digest)
        self._seen.append(self._pass)
        self._lengths.append(len(terms))
        self._total += len(terms)
        counts: dict[str, int] = {}
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
        for term, count in counts.items():
            count = min(count, 65535)
            found = self._postings.get(term)
            if found is None:
                single = self._single.pop(term, None)
                if single is None:
                    self._single[term] = position << 16 | count
                    continue
                found = self._postings[term] = (array("I", [single >> 16]), array("H"))
                found[1].append(single & 0xFFFF)
            found[0].append(position)
            found[1].append(count)

    def sweep(self, past: PastRequests) -> list[tuple[RequestBook, int]] | None:
        """The past runs not indexed yet; None if an indexed run left `past` or changed."""
        self._pass += 1
        mark = self._pass
        missing: list[tuple[RequestBook, int]] = []
        for book, position in past:
            found = self._positions.get(book.run_ids[position])
            if found is None:
                missing.append((book, position))
            elif self._seen[found] != mark:  # a run listed twice counts where first read
                if self._digests[found] != book.digests[position]:
                    return None
                self._seen[found] = mark
        if len(self._seen) and np.any(np.frombuffer(self._seen, dtype=np.uint32) != mark):
            return None
        return missing

    def _posting(self, term: str) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint16]] | None:
        """The documents holding `term`, in order, and its count in each."""
        found = self._postings.get(term)
        if found is not None:
            documents = np.frombuffer(found[0], dtype=np.uint32)
            return documents, np.frombuffer(found[1], dtype=np.uint16)
        single = self._single.get(term)
        if single is None:
            return None
        return np.array([single >> 16], dtype=np.uint32), np.array([single & 0xFFFF], np.uint16)

    def candidates(
        self, query: Sequence[str], chunk: int = CHUNK
    ) -> Iterator[npt.NDArray[np.int64]]:
        """The documents sharing a term with `query`, in order, `chunk` documents at a time."""
        found = [posting[0] for term in query if (posting := self._posting(term)) is not None]
        for low in range(0, len(self.run_ids) if found else 0, chunk):
            parts = [
                documents[np.searchsorted(documents, low) : np.searchsorted(documents, low + chunk)]
                for documents in found
            ]
            sharing = np.unique(np.concatenate(parts))
            if len(sharing):
                yield sharing.astype(np.int64)

    def scores(self, query: Sequence[str], documents: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        """BM25L scores of `documents` for `query`, as rank_bm25's `get_batch_scores`."""
        size = len(self.run_ids)
        score = np.zeros(len(documents))
        if not size or not self._total:
            return score
        avgdl = self._total / size
        lengths = np.frombuffer(self._lengths, dtype=np.uint32)[documents].astype(np.int64)
        for term in query:
            found = self._posting(term)
            q_freq = np.zeros(len(documents), dtype=np.int64)
            if found is not None:
                docs, counts = found
                where = np.searchsorted(docs, documents)
                hit = (where < len(docs)) & (docs[np.minimum(where, len(docs) - 1)] == documents)
                q_freq[hit] = counts[where[hit]]
            idf = math.log(size + 1) - math.log(len(found[0]) + 0.5) if found else 0
            ctd = q_freq / (1 - B + B * lengths / avgdl)
            score += idf * q_freq * (K1 + 1) * (ctd + DELTA) / (K1 + ctd + DELTA)
        return score


class SharedIndex:
    """The one index of a process, brought up to date with the past runs it is asked about."""

    def __init__(self, terms: Callable[[str], Sequence[str]], chunk: int = CHUNK) -> None:
        self._terms = terms
        self._chunk = chunk
        self._index = RequestIndex()
        self._guard = threading.Lock()
        self.builds = 0  # times the index was built from nothing (a run left, or was edited)

    def warm(self, past: PastRequests) -> None:
        """Bring the index up to date with `past` (the daemon does it while it waits)."""
        with self._guard:
            self._current(past)

    def best(
        self, past: PastRequests, query: Sequence[str], limit: int
    ) -> tuple[list[tuple[float, str]], int]:
        """The `limit` best (score, run_id) above zero, best first, ties to the newer run; and
        how many runs scored above zero. Scores are rounded to 3 places, as shown."""
        ranked: list[tuple[float, str]] = []
        matching = 0
        with self._guard:
            index = self._current(past)
            for documents in index.candidates(query, self._chunk):
                scores = np.round(index.scores(query, documents), 3)
                kept = np.flatnonzero(scores > 0)
                matching += len(kept)
                ranked += _best_of(index, documents[kept], scores[kept], limit)
        return sorted(ranked, reverse=True)[:limit], matching

    def _current(self, past: PastRequests) -> RequestIndex:
        """The index of exactly `past`: new runs added; rebuilt if one was removed or edited."""
        index = self._index
        missing: Iterable[tuple[RequestBook, int]] | None = None
        if len(index):
            missing = index.sweep(past)
        if missing is None:
            index = self._index = RequestIndex()
            self.builds += 1
            missing = past  # read as it is indexed: no list of every past run at once
        for book, position in missing:
            run_id = book.run_ids[position]
            if run_id not in index:  # a run listed twice is indexed where first read
                request = book.request(position)
                index.add(run_id, book.digests[position], self._terms(request))
        return index


def _best_of(
    index: RequestIndex, documents: npt.NDArray[np.int64], scores: npt.NDArray[Any], limit: int
) -> list[tuple[float, str]]:
    """The `limit` best (score, run_id) of these documents, ties to the newer run.

    Among thousands of runs tied at the cut (requests written from one template), only the
    newest that fit are kept: the list stays `limit` long, whatever the history.
    """
    if len(documents) <= limit:
        return [(float(scores[j]), index.run_ids[d]) for j, d in enumerate(documents)]
    cutoff = np.partition(scores, -limit)[-limit]
    above = np.flatnonzero(scores > cutoff)
    best = [(float(scores[j]), index.run_ids[documents[j]]) for j in above]
    tied = (index.run_ids[d] for d in documents[scores == cutoff])
    return best + [(float(cutoff), run_id) for run_id in heapq.nlargest(limit - len(best), tied)]


S = TypeVar("S")


class HistoryIndex:
    """Summaries of the archive shards, each kept while its file is unchanged."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self._known: dict[Path, tuple[Stamp, Any]] = {}
        self._guard = threading.Lock()

    def requests(self) -> list[RequestBook]:
        """Every archived run's request: a book per shard, oldest shard first."""
        return self._summaries(PROCESS_RUNS, _requests, "run_id", "user_request")

    def highest_instruction(self) -> int:
        """The highest number of an archived instruction id (`I0042` → 42), 0 if none."""
        highest = self._summaries(USER_INSTRUCTIONS, _highest_number, "instruction_id")
        return max(highest, default=0)

    def _summaries(
        self, spec: TableSpec[Any], summarise: Callable[[Iterator[list[str]]], S], *names: str
    ) -> list[S]:
        found: list[S] = []
        for shard in shard_dirs(self.home):
            path = shard / spec.filename
            try:
                stamp = stamp_of(os.stat(path))
            except FileNotFoundError:
                continue
            with self._guard:
                known = self._known.get(path)
            if known is None or known[0] != stamp:
                try:
                    known = (stamp, summarise(column_values(path, spec.columns, names)))
                except (OSError, UnicodeDecodeError):  # unreadable now: it counts when readable
                    continue
                with self._guard:
                    self._known[path] = known
            found.append(known[1])
        return found


def column_values(path: Path, columns: Sequence[str], names: Sequence[str]) -> Iterator[list[str]]:
    """The decoded cells of the named columns, row by row, streamed from a table file.

    For summaries only: a row with the wrong number of cells is skipped, not reported (the
    table store reports it where the table is read as such).
    """
    positions = [list(columns).index(name) for name in names]
    with path.open(encoding="utf-8", newline="\n") as lines:
        for line in lines:  # the header: the first row naming every column
            cells = split_row(line.rstrip("\n").lstrip("\ufeff"))
            if [decode_cell(cell) for cell in cells] == list(columns):
                break
        else:
            return
        next(lines, None)  # the delimiter row
        for line in lines:
            if not line.strip():
                return  # a blank line ends a pipe table
            cells = split_row(line.rstrip("\n"))
            if len(cells) == len(columns):
                yield [decode_cell(cells[position]) for position in positions]


def _requests(rows: Iterator[list[str]]) -> RequestBook:
    return RequestBook((run_id, request) for run_id, request in rows)


def _highest_number(rows: Iterator[list[str]]) -> int:
    return max((int(key[1:]) for (key,) in rows if key[1:].isdigit()), default=0)


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

    Scored with BM25L as rank_bm25 defines it (`orchestrator.past_runs`), chosen over the
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
