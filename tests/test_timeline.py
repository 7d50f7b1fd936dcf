"""A run's timeline: appended lines, a tolerant reader, and what the events say."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from multiverse.runs.timeline import (
    age,
    append_event,
    as_fields,
    duration,
    finish_step,
    parse_events,
    read_ends,
    read_events,
    rolled_up,
    run_phrase,
    span_seconds,
    stamp,
    summarize,
    summarize_ends,
)

T0 = datetime(2026, 11, 23, 10, 0, 0, tzinfo=UTC)


def _at(seconds: float) -> str:
    return stamp(T0 + timedelta(seconds=seconds))


def _events() -> list[dict[str, object]]:
    return [
        {"at": _at(0), "event": "created"},
        {"at": _at(1), "event": "step_started", "step": "PLAN_PHASE0", "target": "P0"},
        {
            "at": _at(2),
            "event": "step_finished",
            "step": "PLAN_PHASE0",
            "target": "P0",
            "status": "done",
            "seconds": 1.0,
        },
        {"at": _at(10), "event": "confirmed"},
        {"at": _at(11), "event": "step_started", "step": "EXECUTE_TASK", "target": "T1"},
        {
            "at": _at(15),
            "event": "step_finished",
            "step": "EXECUTE_TASK",
            "target": "T1",
            "status": "done",
            "seconds": 4.0,
        },
        {"at": _at(16), "event": "step_started", "step": "EXECUTE_TASK", "target": "T2"},
    ]


def test_appended_events_read_back_in_order(tmp_path: Path) -> None:
    """Each event is one line with its UTC time in milliseconds; fields left None are omitted."""
    append_event(tmp_path, "created")
    append_event(tmp_path, "step_started", step="PROPOSE", target=None)
    lines = (tmp_path / "timeline.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    assert first["event"] == "created" and first["at"].endswith("Z") and len(first["at"]) == 24
    assert json.loads(lines[1]) == {
        "at": json.loads(lines[1])["at"],
        "event": "step_started",
        "step": "PROPOSE",
    }
    assert [event["event"] for event in read_events(tmp_path)] == ["created", "step_started"]


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    """A line cut by a crash is skipped; the events before it are read."""
    text = "".join(json.dumps(event) + "\n" for event in _events()[:3])
    (tmp_path / "timeline.jsonl").write_text(text + '{"at": "2026-11-23T10:0', encoding="utf-8")
    assert [event["event"] for event in read_events(tmp_path)] == [
        "created",
        "step_started",
        "step_finished",
    ]


def test_an_event_glued_to_a_torn_line_is_still_read() -> None:
    """After a crash the next append lands on the torn line: that event is recovered."""
    torn = '{"at": "2026-11-23T10:00:0' + json.dumps({"at": _at(5), "event": "confirmed"})
    assert parse_events(f"{torn}\nnot json\n[1]\n") == [{"at": _at(5), "event": "confirmed"}]


def test_the_summary_has_times_spans_and_the_step_in_flight() -> None:
    """Created, confirmed, each target's first start and last end, and the open step."""
    times = summarize(_events())
    assert (times.created_at, times.confirmed_at, times.ended_at) == (
        T0,
        T0 + timedelta(seconds=10),
        None,
    )
    assert times.spans["T1"].start == T0 + timedelta(seconds=11)
    assert times.spans["T1"].end == T0 + timedelta(seconds=15) and not times.spans["T1"].open
    assert times.spans["T2"].open and times.in_flight is not None
    assert (times.in_flight.step, times.in_flight.target) == ("EXECUTE_TASK", "T2")
    now = T0 + timedelta(seconds=20)
    # The work: P0's 1 s and T1's 4 s finished, T2 in flight since 16 s: not the 10 s waited.
    fields = as_fields(times, final=False, now=now)
    assert fields["elapsed_seconds"] == 9.0 and fields["idle_since"] is None


def test_a_duplicate_created_keeps_the_first_and_an_ending_is_undone_by_more_work() -> None:
    """A crash-resumed intake writes `created` again; a retried run works again after failing."""
    events = [*_events()[:3], {"at": _at(3), "event": "created"}, {"at": _at(4), "event": "failed"}]
    failed = summarize(events)
    assert failed.created_at == T0 and failed.ended_at == T0 + timedelta(seconds=4)
    fields = as_fields(failed, final=True, now=T0 + timedelta(hours=1))
    assert fields["elapsed_seconds"] == 1.0 and fields["ended_at"] == _at(4)  # P0's step
    again = [*events, {"at": _at(9), "event": "step_started", "step": "REOPEN"}]
    assert summarize(again).ended_at is None


def test_a_step_that_never_ended_is_closed_by_the_next_start() -> None:
    """A daemon killed mid-step: the next step's start means that one is no longer in flight."""
    events = [*_events(), {"at": _at(30), "event": "step_started", "target": "T3"}]
    assert not summarize(events).spans["T2"].open


def test_the_ends_of_a_long_timeline_give_created_and_ended(tmp_path: Path) -> None:
    """The list reads the first and last 4 KB: enough for created, confirmed and the ending."""
    filler = [
        {"at": _at(20 + n), "event": "step_finished", "step": "EXECUTE_TASK", "target": f"T{n}"}
        for n in range(200)
    ]
    events = [*_events(), *filler, {"at": _at(500), "event": "completed"}]
    (tmp_path / "timeline.jsonl").write_text(
        "".join(json.dumps(event) + "\n" for event in events), encoding="utf-8"
    )
    head, tail = read_ends(tmp_path / "timeline.jsonl")
    assert 0 < len(tail) < len(filler)
    times = summarize_ends(head, tail)
    assert (times.created_at, times.confirmed_at) == (T0, T0 + timedelta(seconds=10))
    assert times.ended_at == T0 + timedelta(seconds=500)


def test_a_node_spans_everything_under_it() -> None:
    """A stage's time is its tasks' work: their finished steps and the one in flight."""
    times = summarize(_events())
    nodes = [(1, "P1"), (2, "S1"), (3, "T1"), (3, "T2"), (1, "P2")]
    spans = rolled_up(nodes, times.spans)
    now = T0 + timedelta(seconds=21)
    assert span_seconds(spans["S1"], now) == 9.0  # T1's 4 s, and T2's 5 s so far (16 to 21)
    assert span_seconds(spans["T1"], now) == 4.0 and "P2" not in spans


def test_durations_and_ages_read_well() -> None:
    """Durations in two units at most; ages coarse."""
    assert [duration(s) for s in (0.42, 45, 72, 3 * 3600 + 300, 2 * 86400 + 4 * 3600)] == [
        "0.4s",
        "45s",
        "1m 12s",
        "3h 05m",
        "2d 4h",
    ]
    assert [age(s) for s in (0.2, 40, 720, 3 * 3600 + 5, 2 * 86400)] == [
        "just now",
        "40 s ago",
        "12 min ago",
        "3 h ago",
        "2 d ago",
    ]


def test_the_work_is_the_sum_of_steps_even_when_they_finish_at_once(tmp_path: Path) -> None:
    """Each step_finished line carries the run's work so far; steps finishing in many threads
    at once add up to their sum, and a run list reads it from the file's last lines."""
    import threading

    append_event(tmp_path, "created")
    def finish() -> None:
        for _ in range(25):
            finish_step(tmp_path, 0.25, target="T")

    threads = [threading.Thread(target=finish) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    works = sorted(event["work"] for event in read_events(tmp_path) if "work" in event)
    assert works == [0.25 * n for n in range(1, 201)]
    append_event(tmp_path, "step_started", step="EXECUTE_TASK", target="T9")  # one in flight
    times = summarize_ends(*read_ends(tmp_path / "timeline.jsonl"))
    assert times.work == 50.0 and times.in_flight is not None


def test_a_run_waiting_for_you_says_since_when_and_counts_no_waiting_as_work() -> None:
    """A proposal waiting 10 minutes for its answer: no "running" time, but since when it
    waits; once done, "took" is its steps' seconds, not the hour since it was created."""
    events = _events()[:3]  # the proposal made in 1 s, then nothing while the person reads it
    now = T0 + timedelta(minutes=10)
    row = {"status": "AWAITING_CONFIRMATION"} | as_fields(summarize(events), False, now)
    phrase = run_phrase(row, now)
    assert "running" not in phrase and "waiting for you since " in phrase, phrase
    assert row["idle_since"] == _at(2) and row["elapsed_seconds"] == 1.0
    done = [*_events()[:-1], {"at": _at(3600), "event": "completed"}]
    later = T0 + timedelta(hours=2)
    row = {"status": "COMPLETED"} | as_fields(summarize(done), True, later)
    assert run_phrase(row, later).endswith("took 5.0s")  # 1 s + 4 s of steps, not an hour
