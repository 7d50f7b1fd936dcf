"""A run's timeline, `runs/<run_id>/timeline.jsonl` (one JSON event per line, append-only), what
its events say (created, confirmed, ended, each step's time), and the times `status` shows.

A run's work time is the sum of its steps' times: what it waited for the user (a proposal to
confirm, an approval, a pause) is not work. Each `step_finished` line carries the run's work so
far (`work`), so a run list reads it from the file's last lines.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from multiverse.home import Home, run_paths
from multiverse.logs import lazy_logger
from multiverse.models import FINAL_STATUSES, Status

TIMELINE = "timeline.jsonl"
CREATED = "created"
CONFIRMED = "confirmed"
STEP_STARTED = "step_started"
STEP_FINISHED = "step_finished"
ENDINGS = ("completed", "failed", "cancelled")
HEAD_BYTES = 4096  # the first events: created, and confirmed in all but odd runs
TAIL_BYTES = 2048  # the last events of a run: its last step and how it ended
_START = '{"at"'  # every line starts so: where an event glued to a torn line begins
_STARTED = f'"event": "{STEP_STARTED}"'
_CONFIRMED = f'"event": "{CONFIRMED}"'
_FINISHED = f'"event": "{STEP_FINISHED}"'


def timeline_path(run_root: Path) -> Path:
    """The timeline file of the run whose folder is `run_root`."""
    return run_root / TIMELINE


def stamp(moment: datetime | None = None) -> str:
    """An ISO-8601 UTC time with milliseconds, e.g. `2026-11-23T21:39:06.123Z`."""
    moment = moment or datetime.now(UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_stamp(text: Any) -> datetime | None:
    """The time of a `stamp`, or None if it is not one."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def append_event(run_root: Path, event: str, **fields: Any) -> None:
    """Append one event (with its time) as a single line; raises OSError if it cannot."""
    record = {"at": stamp(), "event": event} | {k: v for k, v in fields.items() if v is not None}
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(timeline_path(run_root), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)  # one write of the whole line: appends never interleave
    finally:
        os.close(fd)


_FINISHING = threading.Lock()  # steps of one run finish in several threads of the daemon


def finish_step(run_root: Path, seconds: float, **fields: Any) -> None:
    """Note a `step_finished` line with the step's seconds and the run's work so far (the last
    line's `work` plus these seconds); a failure to write is logged, not raised."""
    with _FINISHING:  # one read-then-append at a time: two steps never add to the same sum
        total = round((read_times(run_root).work or 0.0) + seconds, 3)
        note(run_root, STEP_FINISHED, **fields, seconds=round(seconds, 3), work=total)


def parse_events(text: str) -> list[dict[str, Any]]:
    """The events of a timeline's text, skipping torn or foreign lines."""
    events = []
    for line in text.splitlines():
        event = _parse_line(line) or _parse_line(line[line.rfind(_START) :])
        if event is not None:
            events.append(event)
    return events


def _parse_line(line: str) -> dict[str, Any] | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict) or not isinstance(event.get("event"), str):
        return None
    return event if parse_stamp(event.get("at")) else None


def read_events(run_root: Path) -> list[dict[str, Any]]:
    """Every event of a run's timeline, oldest first ([] if there is none yet)."""
    try:
        data = timeline_path(run_root).read_bytes()
    except OSError:
        return []
    return parse_events(data.decode("utf-8", errors="replace"))


def read_ends(path: str | Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The few events a run list needs, cheaply: from the file's first 4 KB the first event and
    the confirmation, from its last 2 KB the last step's start and the step finished before it
    (whose `work` is the run's work until then).

    Only those lines are parsed (found by their text, as `append_event` writes them). `path`
    is the timeline file (a plain string is quicker, for a list of thousands of runs).
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return [], []
    try:
        size = os.fstat(fd).st_size
        head = os.pread(fd, min(size, HEAD_BYTES), 0).decode("utf-8", "replace")
        start = max(0, size - TAIL_BYTES)
        tail = head if start == 0 else os.pread(fd, TAIL_BYTES, start).decode("utf-8", "replace")
    except OSError:
        return [], []
    finally:
        os.close(fd)
    if start:
        tail = tail.partition("\n")[2]  # its first line is cut by the window
    last_start = _from_last(tail, _STARTED)
    before = tail[: len(tail) - len(last_start)]
    tail = _from_last(before, _FINISHED) + last_start if _FINISHED in before else last_start
    return _first_events(head), parse_events(tail)


def _first_events(head: str) -> list[dict[str, Any]]:
    first = head.partition("\n")[0]
    found = head.find(_CONFIRMED)
    if found < 0:
        return parse_events(first)
    line_start = head.rfind("\n", 0, found) + 1
    line_end = head.find("\n", found)
    return parse_events(first) + parse_events(
        head[line_start : line_end if line_end >= 0 else None]
    )


def _from_last(text: str, marker: str) -> str:
    """The text from the start of the last line holding `marker` (all of it if none does)."""
    found = text.rfind(marker)
    return text if found < 0 else text[text.rfind("\n", 0, found) + 1 :]


@dataclass(frozen=True)
class Span:
    """When work on one target (a phase, stage, task or tool task id) first began and last ended."""

    start: datetime
    end: datetime | None = None  # None: no step on it has finished yet
    open: bool = False  # a step on it has started and not finished
    seconds: float = 0.0  # the work of its finished steps
    open_since: datetime | None = None  # when the step on it in flight started


@dataclass(frozen=True)
class InFlight:
    """The step started last and not finished: its kind, target and start."""

    step: str
    target: str | None
    started_at: datetime


@dataclass(frozen=True)
class RunTimes:
    """A run's times as its timeline tells them."""

    created_at: datetime | None = None
    confirmed_at: datetime | None = None
    ended_at: datetime | None = None  # the last ending not followed by more work
    last_at: datetime | None = None  # the last event of any kind
    spans: dict[str, Span] = field(default_factory=dict)
    in_flight: InFlight | None = None
    work: float | None = None  # the finished steps' seconds, summed (None: no step finished)
    idle_since: datetime | None = None  # the last step's end, when no step is in flight


def _seconds(event: dict[str, Any], key: str) -> float | None:
    value = event.get(key)
    return float(value) if isinstance(value, int | float) and value >= 0 else None


def summarize(events: list[dict[str, Any]]) -> RunTimes:
    """Fold the events, oldest first; a duplicate `created` (after a crash) keeps the first."""
    created = confirmed = ended = last = idle = None
    spans: dict[str, Span] = {}
    flight: InFlight | None = None
    work: float | None = None
    for event in events:
        at = parse_stamp(event.get("at"))
        kind = event.get("event")
        if at is None:
            continue
        last = at
        target = event.get("target")
        if kind == CREATED:
            created = created or at
        elif kind == CONFIRMED:
            confirmed = confirmed or at
        elif kind in ENDINGS:
            ended = at
        elif kind == STEP_STARTED:
            ended = idle = None  # a retried run works again
            last_target = flight.target if flight is not None else None
            if last_target is not None and last_target in spans:  # it never ended: a crash
                spans[last_target] = replace(spans[last_target], open=False, open_since=None)
            flight = InFlight(str(event.get("step", "")), target, at)
            if isinstance(target, str):
                old = spans.get(target) or Span(at)
                spans[target] = replace(old, open=True, open_since=at)
        elif kind == STEP_FINISHED:
            flight, idle = None, at
            seconds = _seconds(event, "seconds") or 0.0
            work = _seconds(event, "work") or (work or 0.0) + seconds
            if isinstance(target, str):
                old = spans.get(target) or Span(at)
                spans[target] = replace(old, end=at, open=False, open_since=None,
                                        seconds=old.seconds + seconds)  # fmt: skip
    return RunTimes(created, confirmed, ended, last, spans, flight, work, idle)


def summarize_ends(head: list[dict[str, Any]], tail: list[dict[str, Any]]) -> RunTimes:
    """The times a run list needs, from the first and the last events of a timeline."""
    first = summarize(head)
    last = summarize(tail) if tail else first
    return RunTimes(
        created_at=first.created_at,
        confirmed_at=first.confirmed_at or last.confirmed_at,
        ended_at=last.ended_at,
        last_at=last.last_at or first.last_at,
        in_flight=last.in_flight,
        work=last.work if last.work is not None else first.work,
        idle_since=last.idle_since,
    )


def read_times(run_root: Path | str) -> RunTimes:
    """A run's times from the first and last lines of its timeline; from the whole file where
    those do not say its work (lines written before `work`, or a timeline whose last lines
    hold no finished step)."""
    path = f"{run_root}/{TIMELINE}"  # a plain string: a run list reads thousands
    head, tail = read_ends(path)
    times = summarize_ends(head, tail)
    older = any(event.get("event") == STEP_FINISHED and "work" not in event for event in tail)
    if older or (times.work is None and _longer_than(path, TAIL_BYTES)):
        times = summarize(read_events(Path(run_root)))
    return times


def _longer_than(path: str, size: int) -> bool:
    try:
        return os.stat(path).st_size > size
    except OSError:
        return False


def elapsed(start: datetime | None, end: datetime | None, now: datetime) -> float | None:
    """Seconds from start to end (to now while it has not ended), or None without a start."""
    if start is None:
        return None
    return max(0.0, ((end or now) - start).total_seconds())


def as_fields(times: RunTimes, final: bool, now: datetime) -> dict[str, Any]:
    """The times of a run for `status --json`: created/confirmed/ended at, the work in seconds
    (its steps', the one in flight to now), and since when it has done nothing.

    A final run whose timeline does not say how it ended is taken to end at its last event.
    """
    ended = times.ended_at or (times.last_at if final else None)
    work = times.work
    if times.in_flight is not None and not final:
        work = (work or 0.0) + (elapsed(times.in_flight.started_at, None, now) or 0.0)
    idle = times.idle_since if not final and times.in_flight is None else None
    return {
        "created_at": stamp(times.created_at) if times.created_at else None,
        "confirmed_at": stamp(times.confirmed_at) if times.confirmed_at else None,
        "ended_at": stamp(ended) if ended else None,
        "elapsed_seconds": round(work, 3) if work is not None else None,
        "idle_since": stamp(idle) if idle else None,
    }


TIME_FIELDS = ("created_at", "confirmed_at", "ended_at", "elapsed_seconds", "idle_since")


def created_from_id(run_id: str) -> datetime | None:
    """The creation time a run_id carries (run-YYYYMMDD-HHMMSS-NNN, UTC): for runs without one."""
    try:
        return datetime.strptime(run_id[4:19], "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None


def _with_creation(times: RunTimes, run_id: str) -> RunTimes:
    if times.created_at is not None:
        return times
    return replace(times, created_at=created_from_id(run_id))


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
        times = read_times(f"{runs}/{row['run_id']}")
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


def waits_for_user(row: dict[str, Any]) -> bool:
    """Whether a run row waits for the user: its proposal, an approval, a review or a pause."""
    if _final(row.get("status")):
        return False
    asked = row.get("status") == Status.AWAITING_CONFIRMATION.value
    return bool(asked or row.get("waiting") or row.get("held") or row.get("paused"))


def clock(moment: datetime, now: datetime) -> str:
    """A moment in local time: `14:05` today, `Nov 25 14:05` before."""
    local, today = moment.astimezone(), now.astimezone()
    return local.strftime("%H:%M" if local.date() == today.date() else "%b %d %H:%M")


def run_phrase(row: dict[str, Any], now: datetime) -> str:
    """`created 3 h ago · took 1m 12s` (a final run), `… · running 45s`, or `… · waiting for
    you since 14:05`: the times count the run's work (its steps), never the user's."""
    created = row.get("created_at")
    if not created:
        return ""
    words = [f"created {age((now - datetime.fromisoformat(created)).total_seconds())}"]
    seconds = row.get("elapsed_seconds")
    idle = parse_stamp(row.get("idle_since"))
    if waits_for_user(row):
        words.append(f"waiting for you since {clock(idle, now)}" if idle else "waiting for you")
    elif seconds is not None:
        words.append(f"{'took' if _final(row['status']) else 'running'} {duration(seconds)}")
    return " · ".join(words)


def _merge(old: Span | None, new: Span) -> Span:
    if old is None:
        return new
    ends = [end for end in (old.end, new.end) if end is not None]
    starts = [since for since in (old.open_since, new.open_since) if since is not None]
    return Span(min(old.start, new.start), max(ends) if ends else None, old.open or new.open,
                old.seconds + new.seconds, min(starts) if starts else None)  # fmt: skip


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
    """A node's work: its finished steps' seconds, and the step on it in flight to now."""
    if span is None or (span.end is None and not span.open):
        return None
    flying = elapsed(span.open_since, None, now) if span.open and span.open_since else 0.0
    return span.seconds + (flying or 0.0)


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


log = lazy_logger(__name__)


def note(run_root: Path, event: str, **fields: Any) -> None:
    """Append one event to the run's timeline; a failure to write is logged, not raised."""
    try:
        append_event(run_root, event, **fields)
    except OSError as error:
        log.warning("timeline_not_written", run=run_root.name, event=event, error=str(error))


def run_created(run_root: Path) -> None:
    """The run exists; said once (an intake resumed after a crash finds the timeline begun)."""
    if not timeline_path(run_root).exists():
        note(run_root, CREATED)
