"""The daemon's archive policy: final runs older than N days, or beyond the newest M."""

from __future__ import annotations

from datetime import UTC, datetime

from multiverse.models import ProcessRun, Status
from orchestrator.archiving import due_for_archive

NOW = datetime(2026, 11, 23, tzinfo=UTC)


def _runs(*days_and_status: tuple[int, Status]) -> list[ProcessRun]:
    return [
        ProcessRun(run_id=f"run-202611{day:02d}-120000-{n:03d}", user_request="r", status=status)
        for n, (day, status) in enumerate(days_and_status)
    ]


def test_old_final_runs_are_due_and_open_ones_never() -> None:
    rows = _runs(
        (1, Status.COMPLETED), (2, Status.PENDING), (3, Status.FAILED), (22, Status.CANCELLED)
    )
    assert due_for_archive(rows, NOW, after_days=7, live_final=0) == [
        rows[0].run_id,
        rows[2].run_id,
    ]


def test_only_the_newest_final_runs_stay_live() -> None:
    rows = _runs(
        *((day, Status.COMPLETED) for day in (20, 21, 22)), (10, Status.AWAITING_CONFIRMATION)
    )
    assert due_for_archive(rows, NOW, after_days=0, live_final=2) == [rows[0].run_id]
    assert due_for_archive(rows, NOW, after_days=0, live_final=0) == []


def test_the_count_rule_archives_in_batches_of_a_quarter() -> None:
    rows = _runs(*((1 + n % 28, Status.COMPLETED) for n in range(125)))
    assert due_for_archive(rows, NOW, after_days=0, live_final=100) == []
    more = [*rows, *_runs((28, Status.COMPLETED))]
    more[-1] = more[-1].model_copy(update={"run_id": "run-20261128-235959-999"})
    due = due_for_archive(more, NOW, after_days=0, live_final=100)
    assert len(due) == 26 and due == sorted(row.run_id for row in more)[:26]
