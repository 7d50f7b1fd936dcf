"""The times `multiverse status` shows: each run's age and elapsed time, each tree node's.

They come from the runs' timelines (runs/<run_id>/timeline.jsonl); the list reads only the two
ends of each file, the tree of one run reads its whole file.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from multiverse.archive import run_paths
from multiverse.home import Home
from multiverse.models import FINAL_STATUSES, Status
from multiverse.timeline import TIMELINE, read_ends, read_events, stamp
from multiverse.timeline_summary import (
    RunTimes,
    Span,
    as_fields,
    elapsed,
    summarize,
    summarize_ends,
)

TIME_FIELDS = ("created_at", "confirmed_at", "ended_at", "elapsed_seconds")


def created_from_id(run_id: str) -> datetime | None:
    """The creation time a run_id carries (run-YYYYMMDD-HHMMSS-NNN, UTC): for runs without one."""
    try:
        return datetime.strptime(run_id[4:19], "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None


def _with_creation(times: RunTimes, run_id: str) -> RunTimes:
    if times.created_at is not None:
        return times
    return RunTimes(
        created_from_id(run_id), times.confirmed_at, times.ended_at, times.last_at,
        times.spans, times.in_flight,
    )  # fmt: skip


def _final(status: str | None) -> bool:
    return status is not None and Status(status) in FINAL_STATUSES


def add_run_times(
    home: Home, rows: list[dict[str, Any]], now: datetime, folder: Path | None = None
) -> None:
    """Give each run row its created/confirmed/ended times and elapsed seconds (in place).

    `folder`: where the rows' run folders are (default runs/; runs/archive/ for archived rows).
    """
    runs = str(folder or home.runs)  # plain strings: a Path per run costs more than its read
    for row in rows:
        times = summarize_ends(*read_ends(f"{runs}/{row['run_id']}/{TIMELINE}"))
        row.update(as_fields(_with_creation(times, row["run_id"]), _final(row["status"]), now))


def duration(seconds: float) -> str:
    """A duration in two units at most: `0.4s`, `45s`, `1m 12s`, `3h 05m`, `2d 4h`."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


def age(seconds: float) -> str:
    """How long ago, coarsely: `just now`, `40 s ago`, `12 min ago`, `3 h ago`, `2 d ago`."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return "just now"


def run_phrase(row: dict[str, Any], now: datetime) -> str:
    """`created 3 h ago · took 1m 12s` (a final run) or `… · running 45s`."""
    created = row.get("created_at")
    if not created:
        return ""
    words = [f"created {age((now - datetime.fromisoformat(created)).total_seconds())}"]
    seconds = row.get("elapsed_seconds")
    if seconds is not None:
        words.append(f"{'took' if _final(row['status']) else 'running'} {duration(seconds)}")
    return " · ".join(words)


def _merge(old: Span | None, new: Span) -> Span:
    if old is None:
        return new
    ends = [end for end in (old.end, new.end) if end is not None]
    return Span(min(old.start, new.start), max(ends) if ends else None, old.open or new.open)


def rolled_up(nodes: list[tuple[int, str]], spans: dict[str, Span]) -> dict[str, Span]:
    """Each tree node's span over itself and everything under it (nodes: depth, id in order)."""
    result: dict[str, Span] = {}
    stack: list[tuple[int, str]] = []
    for depth, key in nodes:
        while stack and stack[-1][0] >= depth:
            stack.pop()
        stack.append((depth, key))
        span = spans.get(key)
        if span is not None:
            for _, holder in stack:
                result[holder] = _merge(result.get(holder), span)
    return result


def span_seconds(span: Span | None, now: datetime) -> float | None:
    """A node's elapsed seconds: to now while a step on it runs, else to its last end."""
    if span is None or (span.end is None and not span.open):
        return None
    return elapsed(span.start, None if span.open else span.end, now)


def add_tree_times(
    home: Home, data: dict[str, Any], nodes: list[tuple[int, str]], now: datetime
) -> None:
    """Give the run its times and step in flight, and each tree row its elapsed seconds."""
    run = data["run"]
    times = _with_creation(
        summarize(read_events(run_paths(home, run["run_id"]).root)), run["run_id"]
    )
    run.update(as_fields(times, _final(run["status"]), now))
    flight = times.in_flight
    run["in_flight"] = (
        {
            "step": flight.step,
            "target": flight.target,
            "started_at": stamp(flight.started_at),
            "seconds": round(elapsed(flight.started_at, None, now) or 0.0, 3),
        }
        if flight is not None and not _final(run["status"])
        else None
    )
    spans = rolled_up(nodes, times.spans)
    for name, key in (("phases", "phase_id"), ("stages", "stage_id"), ("tasks", "task_id"),
                      ("tool_tasks", "tool_task_id")):  # fmt: skip
        for row in data[name]:
            seconds = span_seconds(spans.get(row[key]), now)
            row["elapsed_seconds"] = round(seconds, 3) if seconds is not None else None


def node_suffix(row_seconds: float | None) -> str:
    """The elapsed time after a tree line (`  1m 12s`), or nothing when unknown."""
    return f"  {duration(row_seconds)}" if row_seconds is not None else ""


def elapsed_by_id(data: dict[str, Any]) -> dict[str, float | None]:
    """Every tree row's elapsed seconds by its id (after `add_tree_times`)."""
    found: dict[str, float | None] = {}
    for name, key in (("phases", "phase_id"), ("stages", "stage_id"), ("tasks", "task_id"),
                      ("tool_tasks", "tool_task_id")):  # fmt: skip
        for row in data[name]:
            found[row[key]] = row.get("elapsed_seconds")
    return found
