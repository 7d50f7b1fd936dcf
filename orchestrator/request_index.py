"""The index the learning context ranks past requests with: BM25L, grown one request at a time.

The scores are rank_bm25's BM25L (k1 1.5, b 0.75, delta 0.5), operation for operation (a
property test holds them equal). rank_bm25 itself was used until the history grew: it keeps a
dict per document and builds from scratch, so 100,000 past requests cost ~10 s to index after
every new run and ~100 MB held. Here each term's postings are two arrays (documents, counts),
and a new past run adds only its own terms. The requests themselves are not held here (see
`past_requests.py`): a hash per run tells an edited request.
"""

from __future__ import annotations

import heapq
import math
import threading
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from orchestrator.past_requests import PastRequests, RequestBook

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
