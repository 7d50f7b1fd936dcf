"""History reads go through an index of the archive shards, rebuilt when a shard changes and
never the source of truth: a fresh process builds it from the files, an edit is seen."""

from __future__ import annotations

from past_runs import make_history

from multiverse.home import Home
from multiverse.models import Status
from multiverse.runs import shard_of
from multiverse.store import PROCESS_RUNS, USER_INSTRUCTIONS, TableStore
from orchestrator.archiving import Archiver
from orchestrator.past_runs import HistoryIndex, PastRequests, RequestBook


def _requests(index: HistoryIndex) -> set[tuple[str, str]]:
    """(run_id, request) of every archived run the index reads."""
    return {
        (book.run_ids[position], book.request(position))
        for book, position in PastRequests([RequestBook.of([]), *index.requests()])
    }


def test_the_index_is_built_from_the_shards_and_follows_an_edit(home: Home) -> None:
    run_ids = make_history(home, [Status.COMPLETED, Status.COMPLETED, Status.FAILED])
    Archiver(home, TableStore()).archive(run_ids)
    index = HistoryIndex(home)
    assert _requests(index) == {
        (run_id, f"Request {n} about heat pumps") for n, run_id in enumerate(run_ids)
    }
    assert index.highest_instruction() == 3
    # A person edits a request in its shard (the source of truth): the index follows.
    shard = home.archive_db / shard_of(run_ids[0]) / PROCESS_RUNS.filename
    text = shard.read_text(encoding="utf-8")
    shard.write_text(text.replace("Request 0 about", "Request 0, edited, about"), "utf-8")
    assert (run_ids[0], "Request 0, edited, about heat pumps") in _requests(index)
    # A shard's table removed by hand leaves the index too; the other shard is still read.
    assert shard_of(run_ids[0]) == shard_of(run_ids[2]) != shard_of(run_ids[1])
    (home.archive_db / shard_of(run_ids[2]) / USER_INSTRUCTIONS.filename).unlink()
    assert index.highest_instruction() == 2
