"""Another writer's save never costs a row (SPEC §3.1): the journal's three-way merge, the
store's exchange that catches a save landing mid-write, and reads that wait for a writer."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from multiverse.atomic import exchange
from multiverse.models import ProcessRun, Status
from multiverse.store import PROCESS_RUNS, TableStore
from multiverse.store.journal import Restoration, RowJournal, add_tombstone, superseded_edits
from multiverse.store.tablefile import read_settled

RUN = "run-20261123-100000-{:03d}"


def _run(n: int, request: str = "a request", status: Status = Status.PENDING) -> ProcessRun:
    return ProcessRun(run_id=RUN.format(n), user_request=request, status=status)


def _index(rows: list[ProcessRun]) -> dict[str, int]:
    return {row.key: position for position, row in enumerate(rows)}


# -- the merge, pure --------------------------------------------------------------------------


def test_a_save_superseded_by_one_made_from_our_instant_counts_its_missing_edits() -> None:
    """Two saves land while we write, the second made from our version of that instant: the
    edits of the first the second lacks (a cell changed, a row added) are counted; a second
    save that holds them all, or a first that edited nothing, counts none."""
    base = [_run(1), _run(2)]
    first = [_run(1, request="edited"), _run(2), _run(4)]  # an edit and a row of theirs
    second = [_run(1), _run(2, request="later edit")]  # made from ours: lacks both
    assert superseded_edits(base, first, second) == 2
    assert superseded_edits(base, first, [*first[:2], _run(4), _run(5)]) == 0
    assert superseded_edits(base, base, second) == 0


def test_a_kept_aside_save_is_said_with_where_it_is(tmp_path: Path) -> None:
    """The notice names the table and the kept file, in the run's messages."""
    from multiverse.home import Home
    from orchestrator.crew import restoration_messages

    home = Home(tmp_path)
    table = tmp_path / "runs" / RUN.format(1) / "db" / "tasks.md"
    kept = table.parent / ".tasks.kept-20261127T130000.md"
    (message,) = restoration_messages(home, Restoration(table, kept_aside=kept))
    assert message.run_id == RUN.format(1)
    assert f"`runs/{RUN.format(1)}/db/.tasks.kept-20261127T130000.md`" in message.facts["text"]


def test_a_stale_copy_gets_our_rows_and_cells_back_and_keeps_the_persons_edit(
    tmp_path: Path,
) -> None:
    """Rows we added come back in place; a cell we changed is ours again; an edit stays."""
    path = tmp_path / "t.md"
    journal = RowJournal()
    base = [_run(1), _run(2)]
    written = [_run(1, status=Status.COMPLETED), _run(2), _run(3)]
    journal.record(path, base, _index(base), written, None)
    # The person's editor loaded `base`, edited run 2's request, and saved.
    theirs = [_run(1), _run(2, "their words")]
    merge = journal.reconcile(path, theirs, _index(theirs))
    assert [row.key for row in merge.rows] == [RUN.format(n) for n in (1, 2, 3)]
    assert merge.rows[0].status is Status.COMPLETED  # our change of a cell, put back
    assert merge.rows[1].user_request == "their words"  # their edit of a cell we never touched
    assert [row.key for row in merge.restoration.rows] == [RUN.format(3)]
    assert [(row.key, cells) for row, cells in merge.restoration.cells] == [
        (RUN.format(1), {"status": Status.COMPLETED})
    ]


def test_the_persons_edit_of_our_cell_wins_and_is_then_kept_against_stale_copies(
    tmp_path: Path,
) -> None:
    """A new value where ours was is an edit; a later stale copy showing ours again is not."""
    path = tmp_path / "t.md"
    journal = RowJournal()
    journal.record(path, [], {}, [_run(1, "ours")], None)
    edited = [_run(1, "theirs")]
    merge = journal.reconcile(path, edited, _index(edited))
    assert merge.rows == edited and not merge.restoration
    journal.adopt(path, merge)
    stale = [_run(1, "ours")]  # another editor still held the copy before the edit
    again = journal.reconcile(path, stale, _index(stale))
    assert again.rows[0].user_request == "theirs"


def test_a_row_deleted_on_purpose_is_not_restored(tmp_path: Path) -> None:
    """`multiverse delete-row` leaves a tombstone; the row stays deleted."""
    path = tmp_path / "t.md"
    tombstones = tmp_path / "deleted_rows.jsonl"
    journal = RowJournal(tombstones)
    journal.record(path, [], {}, [_run(1), _run(2)], None)
    add_tombstone(tombstones, path, RUN.format(2))
    theirs = [_run(1)]
    merge = journal.reconcile(path, theirs, _index(theirs))
    assert merge.rows == theirs and merge.forgotten == [RUN.format(2)]


# -- the store: saves between our read and our write -----------------------------------------


def _save_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(".person-save")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def _save_in_place(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def test_a_save_landing_between_our_read_and_our_write_is_merged(tmp_path: Path) -> None:
    """Their save is not replaced by ours: both their edit and our change are in the file, and
    a file without their edit is never put in place (an editor reloading it would lose it)."""
    for save in (_save_atomically, _save_in_place):
        path = tmp_path / f"{save.__name__}.md"
        said: list[Restoration] = []
        store = TableStore(on_restore=said.append)
        table = store.table(PROCESS_RUNS, path)
        table.insert(_run(1), _run(2))
        person_view = path.read_text(encoding="utf-8")

        def change(
            rows: list[ProcessRun], save=save, path=path, person_view=person_view
        ) -> list[ProcessRun]:
            # The person saves right now, from the copy loaded before our first write landed.
            save(path, person_view.replace("a request", "edited by a person", 1))
            return [*rows, _run(3)]

        store.modify(PROCESS_RUNS, path, change)
        table.update(RUN.format(2), status=Status.COMPLETED)
        on_disk = TableStore().table(PROCESS_RUNS, path).rows()
        assert [row.key for row in on_disk] == [RUN.format(n) for n in (1, 2, 3)], save
        assert on_disk[0].user_request == "edited by a person", save
        assert on_disk[1].status is Status.COMPLETED, save
        # Seen before ours was ever in place: our change went onto their rows, nothing of ours
        # was erased, so nothing is reported as put back.
        assert said == [], save


def test_a_stale_save_seen_on_a_later_read_is_repaired_on_disk(tmp_path: Path) -> None:
    """A read after someone erased our row puts it back in the file and reports it."""
    path = tmp_path / "runs.md"
    said: list[Restoration] = []
    store = TableStore(on_restore=said.append)
    table = store.table(PROCESS_RUNS, path)
    table.insert(_run(1))
    old = path.read_text(encoding="utf-8")
    table.insert(_run(2))
    _save_atomically(path, old.replace("a request", "my edit"))  # a stale copy with an edit
    assert [row.key for row in table.rows()] == [RUN.format(1), RUN.format(2)]
    on_disk = TableStore().table(PROCESS_RUNS, path).rows()
    assert [row.user_request for row in on_disk] == ["my edit", "a request"]
    assert [row.key for row in said[0].rows] == [RUN.format(2)]


def test_a_deleted_table_gets_back_the_rows_this_process_wrote(tmp_path: Path) -> None:
    """A table deleted by hand is written again with what this process wrote into it."""
    path = tmp_path / "runs.md"
    store = TableStore()
    table = store.table(PROCESS_RUNS, path)
    table.insert(_run(1), _run(2))
    path.unlink()
    assert [row.key for row in table.rows()] == [RUN.format(1), RUN.format(2)]
    assert path.exists()


# -- reads that wait, and the exchange ---------------------------------------------------------

WRITER = """
import sys, time
with open(sys.argv[1], "w") as handle:
    handle.write("first half|")
    handle.flush()
    open(sys.argv[2], "w").close()  # tell the test the file is half-written
    time.sleep(0.4)
    handle.write("second half")
"""


def test_a_file_open_for_writing_is_read_only_once_its_writer_closed_it(tmp_path: Path) -> None:
    """A truncate-then-write save in two chunks is never read half-way."""
    path, ready = tmp_path / "table.md", tmp_path / "ready"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(ready)])
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert time.monotonic() < deadline and writer.poll() is None
        time.sleep(0.005)
    data, _ = read_settled(path, lambda raw: raw)
    writer.wait(timeout=30)
    assert data == b"first half|second half"


def test_exchange_swaps_two_files_atomically(tmp_path: Path) -> None:
    """renameat2(RENAME_EXCHANGE): each name holds the other's content afterwards."""
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_text("A")
    second.write_text("B")
    if not exchange(first, second):
        pytest.skip("this file system has no RENAME_EXCHANGE (the store checks instead)")
    assert (first.read_text(), second.read_text()) == ("B", "A")
