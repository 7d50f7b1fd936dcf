"""The past runs ranking reads: compact books of requests, and the index kept exactly in step
with them (a run added, edited, removed, listed twice, or live and archived at once)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.past_runs import PastRequests, RequestBook, SharedIndex, tokenize

_WORDS = ["market", "revenue", "chart", "시장", "분석", "보고서", "plan", "memo"]


def _id(number: int) -> str:
    return f"run-20260101-000000-{number:03d}"


def _ranked(index: SharedIndex, past: PastRequests, query: str, limit: int = 5) -> list[str]:
    best, _matching = index.best(past, list(dict.fromkeys(tokenize(query))), limit)
    return [run_id for _score, run_id in best]


def test_a_book_gives_back_each_request_as_written() -> None:
    """Requests with Korean, pipes, newlines and nothing at all come back unchanged."""
    pairs = [(_id(1), "시장 분석 | 보고서"), (_id(2), ""), (_id(3), "a\nb <br> `c`")]
    book = RequestBook(pairs)
    assert len(book) == 3
    assert [(book.run_ids[n], book.request(n)) for n in range(3)] == pairs
    assert PastRequests([book]).requests_of([_id(3), _id(9)]) == {_id(3): "a\nb <br> `c`"}


@settings(max_examples=40, deadline=None)
@given(
    requests=st.lists(
        st.lists(st.sampled_from(_WORDS), min_size=0, max_size=4).map(" ".join), max_size=40
    ),
    query=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3).map(" ".join),
    limit=st.integers(min_value=1, max_value=4),
    chunk=st.integers(min_value=1, max_value=7),
)
def test_scoring_a_chunk_at_a_time_ranks_as_scoring_all(
    requests: list[str], query: str, limit: int, chunk: int
) -> None:
    """Runs scored a few at a time, with many ties, rank as when all are scored at once."""
    past = PastRequests([RequestBook((_id(n), text) for n, text in enumerate(requests))])
    whole, chunked = SharedIndex(tokenize, chunk=1 << 20), SharedIndex(tokenize, chunk=chunk)
    assert _ranked(chunked, past, query, limit) == _ranked(whole, past, query, limit)


def test_a_live_row_is_read_before_its_archived_copy() -> None:
    """A run both live and in a shard (an archive in progress) is ranked once, as it is live."""
    index = SharedIndex(tokenize)
    live = RequestBook([(_id(1), "office party plan")])
    shard = RequestBook([(_id(1), "heat pump memo"), (_id(2), "heat pump survey")])
    assert _ranked(index, PastRequests([live, shard]), "heat pump") == [_id(2)]
    assert _ranked(index, PastRequests([live, shard]), "office party") == [_id(1)]


def test_a_run_listed_twice_is_indexed_once_and_kept() -> None:
    """A row copied by hand into a second shard counts once; the index is not rebuilt for it."""
    index = SharedIndex(tokenize)
    first = RequestBook([(_id(1), "heat pump memo")])
    copy = RequestBook([(_id(1), "heat pump memo, copied"), (_id(2), "heat pump survey")])
    past = PastRequests([RequestBook([]), first, copy])
    assert _ranked(index, past, "heat pump") == [_id(2), _id(1)]
    assert _ranked(index, past, "copied") == []
    assert index.builds == 1  # built once, never again for the copy


def test_an_archived_request_edited_or_removed_leaves_the_index() -> None:
    """The index follows a shard whose request was edited, and one whose row was removed."""
    index = SharedIndex(tokenize)
    shard = RequestBook([(_id(1), "heat pump memo"), (_id(2), "office move plan")])
    assert _ranked(index, PastRequests([RequestBook([]), shard]), "heat pump") == [_id(1)]
    edited = RequestBook([(_id(1), "office party"), (_id(2), "office move plan")])
    assert _ranked(index, PastRequests([RequestBook([]), edited]), "heat pump") == []
    removed = RequestBook([(_id(2), "office move plan")])
    assert _ranked(index, PastRequests([RequestBook([]), removed]), "party") == []
    grown = RequestBook([(_id(2), "office move plan"), (_id(3), "party plan")])
    assert _ranked(index, PastRequests([RequestBook([]), grown]), "party") == [_id(3)]
    assert index.builds == 3  # the edit and the removal rebuilt it; a new run was only added
