"""The index the learning context ranks past requests with: BM25L, grown one request at a time.

The scores are rank_bm25's BM25L (k1 1.5, b 0.75, delta 0.5), operation for operation (a
property test holds them equal). rank_bm25 itself was used until the history grew: it keeps a
dict per document and builds from scratch, so 100,000 past requests cost ~10 s to index after
every new run and ~100 MB held. Here each term's postings are two arrays (documents, counts),
and a new past run adds only its own terms.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

K1, B, DELTA = 1.5, 0.75, 0.5


class Requested(Protocol):
    """A past run as ranking reads it: a live row, or an archived run's request."""

    @property
    def run_id(self) -> str: ...

    @property
    def user_request(self) -> str: ...


class RequestIndex:
    """BM25L postings of past requests, with the run each document is."""

    def __init__(self) -> None:
        self.run_ids: list[str] = []
        self._requests: dict[str, str] = {}  # run_id → the request indexed (to see an edit)
        self._lengths = array("I")
        self._total = 0
        self._postings: dict[str, tuple[array[int], array[int]]] = {}

    def __len__(self) -> int:
        return len(self.run_ids)

    def add(self, run_id: str, request: str, terms: Sequence[str]) -> None:
        """Index one past request under its run."""
        position = len(self.run_ids)
        self.run_ids.append(run_id)
        self._requests[run_id] = request
        self._lengths.append(len(terms))
        self._total += len(terms)
        counts: dict[str, int] = {}
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
        for term, count in counts.items():
            found = self._postings.get(term)
            if found is None:
                found = self._postings[term] = (array("I"), array("H"))
            found[0].append(position)
            found[1].append(min(count, 65535))

    def holds_exactly(self, past: Sequence[Requested]) -> bool:
        """Whether every indexed run is still in `past` with the same request."""
        if len(self._requests) > len(past):
            return False
        now = {run.run_id: run.user_request for run in past}
        return all(now.get(run_id) == request for run_id, request in self._requests.items())

    def missing(self, past: Iterable[Requested]) -> list[Requested]:
        """The past runs not indexed yet."""
        return [run for run in past if run.run_id not in self._requests]

    def candidates(self, query: Sequence[str]) -> npt.NDArray[np.int64]:
        """The documents sharing a term with `query`, in order."""
        postings = [self._postings[term][0] for term in query if term in self._postings]
        found = [np.frombuffer(documents, dtype=np.uint32) for documents in postings]
        if not found:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate(found)).astype(np.int64)

    def scores(self, query: Sequence[str], documents: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        """BM25L scores of `documents` for `query`, as rank_bm25's `get_batch_scores`."""
        size = len(self.run_ids)
        score = np.zeros(len(documents))
        if not size or not self._total:
            return score
        avgdl = self._total / size
        lengths = np.frombuffer(self._lengths, dtype=np.uint32)[documents].astype(np.int64)
        for term in query:
            found = self._postings.get(term)
            q_freq = np.zeros(len(documents), dtype=np.int64)
            if found is not None:
                docs = np.frombuffer(found[0], dtype=np.uint32)
                where = np.searchsorted(docs, documents)
                hit = (where < len(docs)) & (docs[np.minimum(where, len(docs) - 1)] == documents)
                q_freq[hit] = np.frombuffer(found[1], dtype=np.uint16)[where[hit]]
            idf = math.log(size + 1) - math.log(len(found[0]) + 0.5) if found else 0
            ctd = q_freq / (1 - B + B * lengths / avgdl)
            score += idf * q_freq * (K1 + 1) * (ctd + DELTA) / (K1 + ctd + DELTA)
        return score


class SharedIndex:
    """The one index of a process, brought up to date with the past runs it is asked about."""

    def __init__(self, terms: Callable[[str], Sequence[str]]) -> None:
        self._terms = terms
        self._index = RequestIndex()
        self._guard = threading.Lock()

    def warm(self, past: Sequence[Requested]) -> None:
        """Bring the index up to date with `past` (the daemon does it while it waits)."""
        with self._guard:
            self._current(past)

    def best(
        self, past: Sequence[Requested], query: Sequence[str], limit: int
    ) -> tuple[list[tuple[float, str]], int]:
        """The `limit` best (score, run_id) above zero, best first, ties to the newer run; and
        how many runs scored above zero. Scores are rounded to 3 places, as shown."""
        with self._guard:
            index = self._current(past)
            documents = index.candidates(query)
            if not len(documents):
                return [], 0
            scores = np.round(index.scores(query, documents), 3)
            kept = np.flatnonzero(scores > 0)
            matching = len(kept)
            if matching > limit:  # only the best `limit` scores, with their ties, need sorting
                cutoff = np.partition(scores[kept], -limit)[-limit]
                kept = kept[scores[kept] >= cutoff]
            ranked = [(float(scores[j]), index.run_ids[documents[j]]) for j in kept]
        return sorted(ranked, reverse=True)[:limit], matching

    def _current(self, past: Sequence[Requested]) -> RequestIndex:
        """The index of exactly `past`: new runs added; rebuilt if one was removed or edited."""
        index = self._index
        if not index.holds_exactly(past):
            index = self._index = RequestIndex()
        for run in index.missing(past):
            index.add(run.run_id, run.user_request, self._terms(run.user_request))
        return index
