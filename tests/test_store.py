"""Tests of the table store: lossless typed rows, hand edits, broken files, atomic writes (§3.1)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from multiverse.errors import RowNotFoundError, StaleRowError, TableError
from multiverse.models import AssetType, CatalogEntry, Phase, ProcessRun, Status, Task
from multiverse.store import KNOWLEDGE_CATALOG, PHASES, PROCESS_RUNS, TASKS, TableSpec, TableStore
from multiverse.store import store as store_module
from multiverse.store import tablefile as settled_module
from multiverse.store import tablefile as tablesnapshot_module
from multiverse.store.journal import RowJournal
from multiverse.store.tablefile import (
    new_file_lines,
    parse_table_text,
    render_row,
    render_table,
    widths_from_delimiter,
)

FIXTURES = Path(__file__).parent / "fixtures" / "tables"
NAMED_VALUES: list[str] = json.loads((FIXTURES / "named_values.json").read_text())
RUN = "run-20260105-093000-001"
HYPOTHESIS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _run(number: int, request: str = "a request", status: Status = Status.PENDING) -> ProcessRun:
    return ProcessRun(
        run_id=f"run-20260101-000000-{number:03d}", user_request=request, status=status
    )


def _phase(phase_id: str, name: str, purpose: str = "", status: str = "PENDING") -> Phase:
    return Phase(
        phase_id=phase_id, run_id=RUN, phase_name=name, phase_purpose=purpose, status=Status(status)
    )


def _leftovers(folder: Path) -> list[str]:
    """Names in `folder` other than tables and their lock files (temporary files, say)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith((".md", ".md.lock")))


def _outside_table(text: str, columns: tuple[str, ...]) -> tuple[str, str]:
    """The text before and after the table of a file."""
    parsed = parse_table_text(text, Path("x.md"), columns)
    return "".join(parsed.lines[: parsed.start]), "".join(parsed.lines[parsed.end :])


# -- lossless round trips through files -------------------------------------------------------


@HYPOTHESIS
@given(requests=st.lists(st.text(), min_size=1, max_size=4), last=st.text())
def test_any_request_round_trips_through_a_fresh_store(
    tmp_path: Path, requests: list[str], last: str
) -> None:
    """Any user_request, inserted then updated, reads back exactly in a new store."""
    with tempfile.TemporaryDirectory(dir=tmp_path) as folder:
        path = Path(folder) / PROCESS_RUNS.filename
        table = TableStore().table(PROCESS_RUNS, path)
        table.insert(*[_run(n, text) for n, text in enumerate(requests, 1)])
        table.update(_run(1).run_id, user_request=last)
        expected = [_run(1, last)] + [_run(n, t) for n, t in enumerate(requests[1:], 2)]
        assert TableStore().table(PROCESS_RUNS, path).rows() == expected
        assert table.rows() == expected


@HYPOTHESIS
@given(
    entries=st.lists(
        st.tuples(st.text(min_size=1), st.text(), st.none() | st.text()),
        min_size=1,
        max_size=4,
        unique_by=lambda entry: entry[0],
    )
)
def test_any_catalog_entry_round_trips_through_a_fresh_store(
    tmp_path: Path, entries: list[tuple[str, str, str | None]]
) -> None:
    """Any file_path key, summary and optional source reads back equal in a new store."""
    rows = [
        CatalogEntry(
            file_path=key, asset_type=AssetType.TOOL_OUTPUT, summary=summary, source_task_id=source
        )
        for key, summary, source in entries
    ]
    with tempfile.TemporaryDirectory(dir=tmp_path) as folder:
        path = Path(folder) / KNOWLEDGE_CATALOG.filename
        table = TableStore().table(KNOWLEDGE_CATALOG, path)
        table.insert(*rows)
        assert TableStore().table(KNOWLEDGE_CATALOG, path).rows() == table.rows() == rows


def test_named_values_round_trip_through_files(tmp_path: Path) -> None:
    """Every named tricky value survives as a request and as a summary, read by a new store."""
    runs, catalog = tmp_path / "runs.md", tmp_path / "catalog.md"
    TableStore().table(PROCESS_RUNS, runs).insert(
        *[_run(n, value) for n, value in enumerate(NAMED_VALUES, 1)]
    )
    entries = [
        CatalogEntry(file_path=f"a/{n}.md", asset_type=AssetType.FINAL_OUTPUT, summary=value)
        for n, value in enumerate(NAMED_VALUES)
    ]
    TableStore().table(KNOWLEDGE_CATALOG, catalog).insert(*entries)
    assert [r.user_request for r in TableStore().table(PROCESS_RUNS, runs).rows()] == NAMED_VALUES
    assert [
        r.summary for r in TableStore().table(KNOWLEDGE_CATALOG, catalog).rows()
    ] == NAMED_VALUES


# -- the fast row path writes what a full render would ---------------------------------------

OPERATIONS = st.lists(
    st.tuples(
        st.booleans(),
        st.integers(0, 20),
        st.text(max_size=14) | st.sampled_from(["한국어 요청", "👩\u200d💻", "a|b", "x" * 30]),
        st.sampled_from(list(Status)),
    ),
    min_size=1,
    max_size=12,
)


def _assert_table_is_aligned(path: Path, rows: list[ProcessRun], only_inserts: bool) -> None:
    """The table is aligned to its delimiter, never narrower than its content, and is a full
    render whenever its widths are the natural ones (always, when rows were only inserted)."""
    text = path.read_text(encoding="utf-8")
    prefix = "".join(new_file_lines(PROCESS_RUNS.title, PROCESS_RUNS.description))
    assert text.startswith(prefix)
    lines = [line + "\n" for line in text[len(prefix) :].split("\n")[:-1]]
    cells = [PROCESS_RUNS.to_cells(row) for row in rows]
    natural = render_table(PROCESS_RUNS.columns, cells)
    widths = widths_from_delimiter(lines[1])
    natural_widths = widths_from_delimiter(natural[1])
    assert all(have >= need for have, need in zip(widths, natural_widths, strict=True))
    assert lines[0] == render_row(PROCESS_RUNS.columns, widths)
    assert lines[2:] == [render_row(row, widths) for row in cells]
    if only_inserts or widths == natural_widths:
        assert lines == natural


@HYPOTHESIS
@given(operations=OPERATIONS)
def test_row_patches_equal_a_full_render(
    tmp_path: Path, operations: list[tuple[bool, int, str, Status]]
) -> None:
    """After any inserts and updates the file is what tabulate renders at the table's widths."""
    with tempfile.TemporaryDirectory(dir=tmp_path) as folder:
        path = Path(folder) / PROCESS_RUNS.filename
        table = TableStore().table(PROCESS_RUNS, path)
        rows: list[ProcessRun] = []
        only_inserts = True
        for is_insert, pick, request, status in operations:
            if is_insert or not rows:
                rows.append(_run(len(rows) + 1, request, status))
                table.insert(rows[-1])
            else:
                only_inserts = False
                position = pick % len(rows)
                rows[position] = table.update(
                    rows[position].key, user_request=request, status=status
                )
            _assert_table_is_aligned(path, rows, only_inserts)
            assert TableStore().table(PROCESS_RUNS, path).rows() == rows


def test_a_large_table_gets_a_ragged_row_instead_of_a_full_render(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above FULL_RENDER_LIMIT rows a widened row overflows its column; other lines stay."""
    monkeypatch.setattr(tablesnapshot_module, "FULL_RENDER_LIMIT", 2)
    path = tmp_path / PROCESS_RUNS.filename
    table = TableStore().table(PROCESS_RUNS, path)
    table.insert(_run(1), _run(2), _run(3))
    before = path.read_text().splitlines()
    table.update(_run(2).run_id, user_request="a much longer request than any column holds")
    after = path.read_text().splitlines()
    changed = [n for n, (old, new) in enumerate(zip(before, after, strict=True)) if old != new]
    assert changed == [len(before) - 2]
    assert TableStore().table(PROCESS_RUNS, path).get(_run(2).run_id) == _run(
        2, "a much longer request than any column holds"
    )


# -- hand-edited files ------------------------------------------------------------------------

P0 = _phase("P0", "Instruction amendment", "Agree on the request", "COMPLETED")
GOOD_PHASE_FIXTURES = {
    "no_outer_pipes.md": [P0, _phase("P1", "Analysis")],
    "alignment_kinds.md": [P0, _phase("P1", "Analysis", "Read the assets")],
    "extra_spaces.md": [
        _phase("P0", "Instruction amendment", "keeps  inner  spaces", "COMPLETED"),
        _phase("P1", "Analysis", "x"),
    ],
    "empty_table.md": [],
    "crlf.md": [P0, _phase("P1", "Analysis")],
    "bom.md": [P0],
    "bom_table_first.md": [P0],
    "prose_around.md": [P0, _phase("P1", "Analysis", "Read the assets")],
    "empty_cells.md": [_phase("P1", "Analysis"), _phase("P2", "Strategy")],
}


@pytest.mark.parametrize(("name", "expected"), GOOD_PHASE_FIXTURES.items())
def test_hand_edited_files_read_as_meant(name: str, expected: list[Phase]) -> None:
    """Each hand-edited fixture reads to the rows its author meant."""
    assert TableStore().table(PHASES, FIXTURES / name).rows() == expected


def test_hand_typed_escapes_read_as_meant() -> None:
    """Hand-typed escapes, <br> forms, CJK, emoji and markup read to the values a person means."""
    (task,) = TableStore().table(TASKS, FIXTURES / "hand_typed_escapes.md").rows()
    assert task == Task(
        task_id="P1-S01-T01",
        run_id=RUN,
        stage_id="P1-S01",
        task_name="요약 작성 👩\u200d💻",
        task_purpose="a | b, `a|b`, **bold**, &amp;, [x](y), A, *",
        related_references=["assets/a.md", "guidelines/b.md", "assets/c.md"],
        output_path="outputs/report.md",
        pre_tool_purpose="first line\nsecond line",
        post_tool_purpose="---",
        execution_order=2,
    )


@pytest.mark.parametrize("name", GOOD_PHASE_FIXTURES)
def test_writing_keeps_everything_outside_the_table(tmp_path: Path, name: str) -> None:
    """Row patches and full re-renders leave the text around the table byte-identical."""
    path = tmp_path / name
    shutil.copyfile(FIXTURES / name, path)
    original = path.read_bytes().decode("utf-8")
    outside = _outside_table(original, PHASES.columns)
    crlf = "\r\n" in original
    table = TableStore().table(PHASES, path)
    rows = [*GOOD_PHASE_FIXTURES[name], _phase("P3", "Assembly")]

    def check() -> None:
        text = path.read_bytes().decode("utf-8")
        assert _outside_table(text, PHASES.columns) == outside
        assert text.startswith("\ufeff") == original.startswith("\ufeff")
        table_text = text[len(outside[0]) : len(text) - len(outside[1])]
        assert {line.endswith("\r\n") for line in table_text.splitlines(keepends=True)} == {crlf}
        assert TableStore().table(PHASES, path).rows() == rows

    table.insert(rows[-1])
    check()
    rows[-1] = table.update("P3", status=Status.FAILED)
    check()
    rows[-1] = table.update("P3", phase_purpose="far wider than any column was before " * 2)
    check()


def test_row_patches_keep_crlf_and_fix_a_missing_final_newline(tmp_path: Path) -> None:
    """Rows patched into a CRLF table ending the file without a newline are whole CRLF lines."""
    path = tmp_path / PROCESS_RUNS.filename
    TableStore().table(PROCESS_RUNS, path).insert(_run(1, "a request that sets the width"))
    crlf = path.read_bytes().replace(b"\n", b"\r\n").removesuffix(b"\r\n")
    path.write_bytes(crlf)
    table = TableStore().table(PROCESS_RUNS, path)
    table.insert(_run(2, "short"))
    table.update(_run(1).run_id, status=Status.FAILED)
    data = path.read_bytes()
    assert data.startswith(crlf.split(b"\r\n| run-")[0])  # title, header, delimiter untouched
    assert data.endswith(b"\r\n") and data.count(b"\n") == data.count(b"\r\n")
    expected = [_run(1, "a request that sets the width", Status.FAILED), _run(2, "short")]
    assert TableStore().table(PROCESS_RUNS, path).rows() == expected


BROKEN_FIXTURES: list[tuple[str, TableSpec[Any], int | None, str]] = [
    ("too_few_cells.md", PHASES, 6, "row has 4 cells, expected 5"),
    ("too_many_cells.md", PHASES, 6, "row has 6 cells, expected 5"),
    ("missing_column.md", PHASES, 3, "missing column(s): phase_purpose"),
    (
        "renamed_column.md",
        PHASES,
        3,
        "missing column(s): phase_name; unexpected column(s): phase_t",
    ),
    ("columns_out_of_order.md", PHASES, 3, "columns out of order"),
    ("duplicate_key.md", PHASES, 7, "duplicate key 'P1' (first at line 6)"),
    ("unknown_status.md", PHASES, 6, "status: Input should be 'PENDING'"),
    ("cancelled_in_tasks.md", TASKS, 5, "status CANCELLED is not allowed here"),
    ("bad_run_id.md", PROCESS_RUNS, 5, "run_id: 'run-1' is not a valid run_id"),
    ("non_integer_order.md", TASKS, 5, "execution_order: Input should be a valid integer"),
    ("invalid_utf8.md", PHASES, 6, "not valid UTF-8"),
    ("no_table.md", PHASES, None, "no pipe table found"),
]


@pytest.mark.parametrize(("name", "spec", "line", "problem"), BROKEN_FIXTURES)
def test_broken_files_are_reported_and_never_written(
    tmp_path: Path, name: str, spec: TableSpec[Any], line: int | None, problem: str
) -> None:
    """A broken file raises a TableError naming file, line and problem on read and on every
    write, and its bytes are left exactly as they were."""
    path = tmp_path / name
    shutil.copyfile(FIXTURES / name, path)
    original = path.read_bytes()
    table = TableStore().table(spec, path)
    where = f"{path}:{line}: " if line is not None else f"{path}: "
    attempts = [
        table.rows,
        lambda: table.get("P1"),
        lambda: table.update("P1", status=Status.COMPLETED),
        lambda: table.compare_and_set("P1", Status.PENDING, status=Status.COMPLETED),
        lambda: table.insert(_phase("P4", "Delivery") if spec is PHASES else _run(9)),
    ]
    for attempt in attempts:
        with pytest.raises(TableError) as caught:
            attempt()
        assert type(caught.value) is TableError
        assert str(caught.value).startswith(where) and problem in str(caught.value)
        assert caught.value.path == path and caught.value.line == line
    assert path.read_bytes() == original
    assert _leftovers(tmp_path) == []


# -- row operations ---------------------------------------------------------------------------


def test_missing_file_is_empty_then_created_with_title(tmp_path: Path) -> None:
    """A missing file reads as no rows; the first insert creates it with title and description."""
    path = tmp_path / "db" / PROCESS_RUNS.filename
    table = TableStore().table(PROCESS_RUNS, path)
    assert table.rows() == [] and table.get(_run(1).run_id) is None
    assert not path.exists()
    table.insert(_run(1))
    text = path.read_text()
    assert text.startswith(f"# {PROCESS_RUNS.title}\n\n{PROCESS_RUNS.description}\n\n| run_id ")
    assert table.get(_run(1).run_id) == _run(1)


def test_compare_and_set_refuses_a_changed_status(tmp_path: Path) -> None:
    """compare_and_set updates only while the status is the expected one."""
    path = tmp_path / PROCESS_RUNS.filename
    table = TableStore().table(PROCESS_RUNS, path)
    table.insert(_run(1))
    key = _run(1).run_id
    table.compare_and_set(key, Status.PENDING, status=Status.AWAITING_CONFIRMATION)
    before = path.read_bytes()
    with pytest.raises(StaleRowError, match="is AWAITING_CONFIRMATION, expected PENDING"):
        TableStore().table(PROCESS_RUNS, path).compare_and_set(
            key, Status.PENDING, status=Status.COMPLETED
        )
    assert path.read_bytes() == before
    assert table.get(key) == _run(1, status=Status.AWAITING_CONFIRMATION)


def test_update_unknown_key_and_duplicate_insert_fail_without_writing(tmp_path: Path) -> None:
    """An unknown key, an existing key, or an invalid value changes nothing in the file."""
    path = tmp_path / PROCESS_RUNS.filename
    table = TableStore().table(PROCESS_RUNS, path)
    table.insert(_run(1), _run(2))
    before = path.read_bytes()
    with pytest.raises(RowNotFoundError, match="no row with key 'run-20260101-000000-009'"):
        table.update(_run(9).run_id, status=Status.FAILED)
    with pytest.raises(TableError, match="already exists"):
        table.insert(_run(3), _run(2))
    with pytest.raises(TableError, match="already exists"):
        table.insert(_run(3), _run(3))
    with pytest.raises(TableError, match="invalid update"):
        table.update(_run(1).run_id, current_phase_id="P9")
    with pytest.raises(RowNotFoundError):
        table.update_many({_run(1).run_id: {"status": Status.FAILED}, _run(9).run_id: {}})
    assert path.read_bytes() == before
    assert table.rows() == [_run(1), _run(2)]


def test_an_unchanged_write_leaves_the_file_alone(tmp_path: Path) -> None:
    """An update to the values a row already has does not replace the file."""
    path = tmp_path / PROCESS_RUNS.filename
    table = TableStore().table(PROCESS_RUNS, path)
    table.insert(_run(1))
    inode = path.stat().st_ino
    table.update(_run(1).run_id, status=Status.PENDING)
    assert path.stat().st_ino == inode


def test_modify_result_is_the_callers_own(tmp_path: Path) -> None:
    """Changing the list modify returns does not change what the store reads."""
    path = tmp_path / PROCESS_RUNS.filename
    store = TableStore()
    result = store.modify(PROCESS_RUNS, path, lambda rows: [*rows, _run(1)])
    result.clear()
    assert store.table(PROCESS_RUNS, path).rows() == [_run(1)]


# -- cache, atomicity, locking ----------------------------------------------------------------


def test_cache_sees_edits_by_another_store_and_by_hand(tmp_path: Path) -> None:
    """An external edit, even one keeping size and mtime, is seen by a store that read before."""
    path = tmp_path / PROCESS_RUNS.filename
    first = TableStore().table(PROCESS_RUNS, path)
    first.insert(_run(1, "aaaa"))
    assert first.rows() == [_run(1, "aaaa")]
    TableStore().table(PROCESS_RUNS, path).update(_run(1).run_id, status=Status.FAILED)
    assert first.get(_run(1).run_id) == _run(1, "aaaa", Status.FAILED)
    before = path.stat()
    path.write_bytes(path.read_bytes().replace(b"aaaa", b"bbbb"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    assert first.rows() == [_run(1, "bbbb", Status.FAILED)]


def test_writes_leave_no_temporary_files_and_keep_the_mode(tmp_path: Path) -> None:
    """Writes leave no temporary file behind and keep the permissions a person set."""
    path = tmp_path / PROCESS_RUNS.filename
    table = TableStore().table(PROCESS_RUNS, path)
    table.insert(_run(1))
    path.chmod(0o640)
    for number in range(2, 30):
        table.insert(_run(number, "x" * number))
        table.update(_run(number - 1).run_id, status=Status.COMPLETED)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert _leftovers(tmp_path) == []


def test_a_new_file_follows_the_umask(tmp_path: Path) -> None:
    """A table file created by the store gets the umask's permissions, like any new file."""
    previous = os.umask(0o027)
    try:
        TableStore().table(PROCESS_RUNS, tmp_path / "runs.md").insert(_run(1))
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "runs.md").stat().st_mode) == 0o640


def test_threads_with_separate_stores_lose_no_update(tmp_path: Path) -> None:
    """Threads each using their own store serialise their read-modify-writes on the lock."""
    path = tmp_path / PROCESS_RUNS.filename
    TableStore().table(PROCESS_RUNS, path).insert(_run(1, "0"))
    rounds, threads = 25, 4

    def bump(rows: list[ProcessRun]) -> list[ProcessRun]:
        return [rows[0].model_copy(update={"user_request": str(int(rows[0].user_request) + 1)})]

    def work() -> None:
        store = TableStore()
        for _ in range(rounds):
            store.modify(PROCESS_RUNS, path, bump)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert TableStore().table(PROCESS_RUNS, path).rows() == [_run(1, str(rounds * threads))]


class _JournalWithAPause(RowJournal):
    """A journal that runs `during` in its next `record`: after the write is in place, before
    the store has cached it."""

    during: Callable[[], None] | None = None

    def record(self, *args: Any) -> None:
        during, self.during = self.during, None
        if during is not None:
            during()
        super().record(*args)


def test_a_read_racing_the_stores_own_write_takes_it_without_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another thread reading a file this store has just put in place, before the store cached
    it, gets its rows at once: no look for writers (a /proc scan) and no wait to settle."""
    looks: list[int] = []
    look = settled_module.open_for_writing
    monkeypatch.setattr(
        settled_module, "open_for_writing", lambda dev, ino: looks.append(ino) or look(dev, ino)
    )
    journal = _JournalWithAPause()
    table = TableStore(journal).table(PROCESS_RUNS, tmp_path / PROCESS_RUNS.filename)
    seen: list[list[ProcessRun]] = []

    def read_from_another_thread() -> None:
        reader = threading.Thread(target=lambda: seen.append(table.rows()))
        reader.start()
        reader.join(timeout=30)

    journal.during = read_from_another_thread
    table.insert(_run(1))
    assert seen == [[_run(1)]]
    assert looks == []
    assert table.rows() == [_run(1)]


def test_a_file_another_store_of_this_process_placed_is_taken_without_a_look_for_writers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh store (a command's, the archive's) reading a file another store of this process
    has just put in place gets its rows at once; a save by someone else is not taken for ours."""
    looks: list[int] = []
    look = settled_module.open_for_writing
    monkeypatch.setattr(
        settled_module, "open_for_writing", lambda dev, ino: looks.append(ino) or look(dev, ino)
    )
    path = tmp_path / PROCESS_RUNS.filename
    TableStore().table(PROCESS_RUNS, path).insert(_run(1))
    assert TableStore().table(PROCESS_RUNS, path).rows() == [_run(1)]
    assert looks == []
    assert settled_module.PLACED.holds(path, path.read_bytes())
    path.write_bytes(path.read_bytes().replace(b"a request", b"an edit!!"))  # a save by hand
    assert not settled_module.PLACED.holds(path, path.read_bytes())
    assert TableStore().table(PROCESS_RUNS, path).rows() == [_run(1, "an edit!!")]


def test_placed_bytes_keep_the_latest_files_only(tmp_path: Path) -> None:
    """The process's record of what it placed is bounded: the oldest file is forgotten."""
    placed = settled_module.PlacedBytes(size=2)
    for name in ("a.md", "b.md", "c.md"):
        placed.note(tmp_path / name, name.encode())
    placed.note(tmp_path / "c.md", b"newer")
    assert not placed.holds(tmp_path / "a.md", b"a.md")
    assert placed.holds(tmp_path / "b.md", b"b.md")
    assert placed.holds(tmp_path / "c.md", b"newer")
    assert not placed.holds(tmp_path / "c.md", b"c.md")


def test_a_settled_cache_still_sees_an_in_place_edit_of_the_same_size(tmp_path: Path) -> None:
    """Once the bytes are trusted by their stamp, an edit in place still changes the stamp."""
    path = tmp_path / PROCESS_RUNS.filename
    table = TableStore().table(PROCESS_RUNS, path)
    table.insert(_run(1, "aaaa"))
    changed = path.stat().st_ctime_ns
    deadline = time.monotonic() + 10
    while time.time_ns() < changed + 2 * store_module.RACY_NS:  # past the racy window
        assert time.monotonic() < deadline
    assert table.rows() == [_run(1, "aaaa")]  # compared, and now trusted by its stamp
    assert table.rows() == [_run(1, "aaaa")]  # served from the stamp
    with path.open("r+b") as handle:  # an editor that writes in place, keeping the size
        data = handle.read()
        handle.seek(0)
        handle.write(data.replace(b"aaaa", b"bbbb"))
    assert table.rows() == [_run(1, "bbbb")]


def test_rows_with_follows_every_write(tmp_path: Path) -> None:
    """The index behind rows_with is kept up to date by appends, updates and full renders."""
    path = tmp_path / KNOWLEDGE_CATALOG.filename
    table = TableStore().table(KNOWLEDGE_CATALOG, path)

    def entry(n: int, run_id: str | None) -> CatalogEntry:
        return CatalogEntry(
            file_path=f"f{n}.md", run_id=run_id, asset_type=AssetType.TOOL_OUTPUT, summary="s"
        )

    def expected(owners: set[str | None]) -> list[CatalogEntry]:
        return [row for row in table.rows() if row.run_id in owners]

    other = "run-20260105-093000-002"
    table.insert(entry(1, None), entry(2, RUN), entry(3, other))
    assert table.rows_with("run_id", {RUN}) == expected({RUN})
    table.insert(entry(4, RUN))  # appended: the index grows
    table.update("f3.md", run_id=RUN)  # moved from one group to another
    table.update("f1.md", summary="a summary long enough to widen the column " * 3)
    for owners in ({RUN}, {other}, {None}, {None, RUN, other}, set()):
        assert table.rows_with("run_id", owners) == expected(owners)
