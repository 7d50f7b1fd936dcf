"""The past runs the learning context ranks: run ids and requests, held compactly.

At 100,000 past runs a request per run as a Python object (a row, or a str per cell) held
~25 MB, and a list merging the live rows with the archived ones was built again for every new
request. A `RequestBook` keeps one shard's (or the live table's) requests as one UTF-8 blob,
with each request's hash beside its run id, so the ranking index can tell what changed without
decoding any request; `PastRequests` reads several books as one sequence, without copying.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol


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
