"""Tests of the table store across real processes: atomic replacement and the file lock (§3.1)."""

from __future__ import annotations

import multiprocessing
import queue
import time
import traceback
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path
from typing import Any

from multiverse.errors import TableError
from multiverse.models import ProcessRun, Status
from multiverse.store import PROCESS_RUNS, TableStore

SPAWN = multiprocessing.get_context("spawn")
COUNTER = "run-20260101-000000-000"
TRAILER = "\nEnd of the table file; a truncated write would lose this line.\n"
JOIN_SECONDS = 120.0


def _run_id(worker: int, number: int) -> str:
    return f"run-2026010{worker + 1}-{number:06d}-001"


def _bump(rows: list[ProcessRun]) -> list[ProcessRun]:
    """Increment the counter kept as the first row's request (a read-modify-write)."""
    counter = rows[0]
    bumped = counter.model_copy(update={"user_request": str(int(counter.user_request) + 1)})
    return [bumped, *rows[1:]]


def _new_table(path: Path) -> None:
    """A table holding the counter row, with text after it that must survive every write."""
    TableStore().table(PROCESS_RUNS, path).insert(ProcessRun(run_id=COUNTER, user_request="0"))
    path.write_bytes(path.read_bytes() + TRAILER.encode())


def _report(results: Any, worker: int, work: Any) -> None:
    """Run `work` and put ("ok", value) or ("error", traceback) on the results queue."""
    try:
        results.put((worker, "ok", work()))
    except BaseException:
        results.put((worker, "error", traceback.format_exc()))


def _incrementer(path: Path, worker: int, rounds: int, start: Barrier, results: Any) -> None:
    """Bump the counter `rounds` times and insert one own row every third round."""

    def work() -> int:
        store = TableStore()
        table = store.table(PROCESS_RUNS, path)
        start.wait(timeout=JOIN_SECONDS)
        inserted = 0
        for number in range(rounds):
            store.modify(PROCESS_RUNS, path, _bump)
            if number % 3 == 0:
                table.insert(ProcessRun(run_id=_run_id(worker, number), user_request="mine"))
                inserted += 1
        return inserted

    _report(results, worker, work)


def _writer(path: Path, rounds: int, reading: Event, done: Event, results: Any) -> None:
    """Once the reader reads, write `rounds` times: growing, shrinking and inserted rows."""

    def work() -> int:
        table = TableStore().table(PROCESS_RUNS, path)
        try:
            if not reading.wait(timeout=JOIN_SECONDS):
                raise TimeoutError("the reader never started")
            for number in range(rounds):
                if number % 4 == 0:
                    table.insert(
                        ProcessRun(run_id=_run_id(0, number), user_request=f"row {number}")
                    )
                else:
                    status = Status.COMPLETED if number % 2 else Status.PENDING
                    text = "widening " * (number % 9)  # forces full re-renders now and then
                    table.update(COUNTER, user_request=text, status=status)
            return rounds
        finally:
            done.set()

    _report(results, 0, work)


def _reader(path: Path, reading: Event, done: Event, results: Any) -> None:
    """Read until the writer is done; every read must be a whole, valid, never-shrinking table."""

    def work() -> tuple[int, int, list[str]]:
        store = TableStore()
        table = store.table(PROCESS_RUNS, path)
        problems: list[str] = []
        reads, states, last_count, last_bytes = 0, 0, 0, b""
        finished = False
        while reads < 1_000_000 and not finished:
            # One more read after the writer is done, so its last state is always seen even when
            # this process was descheduled for the whole burst of writes.
            finished = done.is_set()
            data = path.read_bytes()
            try:
                rows = table.rows()
            except TableError as error:
                problems.append(str(error))
                rows = []
            if not data.endswith(TRAILER.encode()) or not rows or rows[0].run_id != COUNTER:
                problems.append(f"partial table: {len(data)} bytes, {len(rows)} rows")
            if len(rows) < last_count:
                problems.append(f"rows went from {last_count} to {len(rows)}")
            last_count = max(last_count, len(rows))
            states += data != last_bytes
            last_bytes = data
            reads += 1
            reading.set()
        return reads, states, problems[:5]

    _report(results, 1, work)


def _collect(processes: list[Any], results: Any, count: int) -> dict[int, Any]:
    """Join the processes and return each worker's result; fail on any error or early death."""
    outcomes: dict[int, Any] = {}
    deadline = time.monotonic() + JOIN_SECONDS
    while len(outcomes) < count:
        try:
            worker, kind, value = results.get(timeout=1.0)
        except queue.Empty:
            dead = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
            assert not dead, f"a worker died without reporting (exit codes {dead})"
            assert time.monotonic() < deadline, f"only {len(outcomes)} of {count} reported"
            continue
        assert kind == "ok", value
        outcomes[worker] = value
    for process in processes:
        process.join(timeout=JOIN_SECONDS)
        assert process.exitcode == 0
    return outcomes


def test_concurrent_writers_lose_no_update(tmp_path: Path) -> None:
    """Four processes doing read-modify-writes on one table lose no increment and no row."""
    path = tmp_path / PROCESS_RUNS.filename
    _new_table(path)
    workers, rounds = 4, 150
    start, results = SPAWN.Barrier(workers), SPAWN.Queue()
    processes = [
        SPAWN.Process(target=_incrementer, args=(path, worker, rounds, start, results))
        for worker in range(workers)
    ]
    for process in processes:
        process.start()
    inserted = _collect(processes, results, workers)
    rows = TableStore().table(PROCESS_RUNS, path).rows()
    assert rows[0] == ProcessRun(run_id=COUNTER, user_request=str(workers * rounds))
    expected = {_run_id(w, n) for w in range(workers) for n in range(0, rounds, 3)}
    assert {row.run_id for row in rows[1:]} == expected
    assert len(rows) == 1 + sum(inserted.values())
    assert path.read_text().endswith(TRAILER)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".process_runs.md.lock",
        "process_runs.md",
    ]


def test_a_reader_never_sees_a_partial_table(tmp_path: Path) -> None:
    """A process reading in a loop while another writes hundreds of times sees only whole tables."""
    path = tmp_path / PROCESS_RUNS.filename
    _new_table(path)
    reading, done, results = SPAWN.Event(), SPAWN.Event(), SPAWN.Queue()
    rounds = 300
    processes = [
        SPAWN.Process(target=_reader, args=(path, reading, done, results)),
        SPAWN.Process(target=_writer, args=(path, rounds, reading, done, results)),
    ]
    for process in processes:
        process.start()
    outcomes = _collect(processes, results, 2)
    reads, states, problems = outcomes[1]
    assert problems == []
    assert reads > 0 and states > 1
    assert outcomes[0] == rounds
    assert len(TableStore().table(PROCESS_RUNS, path).rows()) == 1 + rounds // 4
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".process_runs.md.lock",
        "process_runs.md",
    ]
