"""What a run's timeline events say: when it was created, confirmed and ended, how long each
phase/stage/task/tool task took, and the step in flight. Pure: events in, a summary out."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from multiverse.timeline import (
    CONFIRMED,
    CREATED,
    ENDINGS,
    STEP_FINISHED,
    STEP_STARTED,
    parse_stamp,
    stamp,
)


@dataclass(frozen=True)
class Span:
    """When work on one target (a phase, stage, task or tool task id) first began and last ended."""

    start: datetime
    end: datetime | None = None  # None: no step on it has finished yet
    open: bool = False  # a step on it has started and not finished


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


def summarize(events: list[dict[str, Any]]) -> RunTimes:
    """Fold the events, oldest first; a duplicate `created` (after a crash) keeps the first."""
    created = confirmed = ended = last = None
    spans: dict[str, Span] = {}
    flight: InFlight | None = None
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
            ended = None  # a retried run works again
            last_target = flight.target if flight is not None else None
            if last_target is not None and last_target in spans:  # it never ended: a crash
                spans[last_target] = replace(spans[last_target], open=False)
            flight = InFlight(str(event.get("step", "")), target, at)
            if isinstance(target, str):
                old = spans.get(target)
                spans[target] = Span(old.start if old else at, old.end if old else None, True)
        elif kind == STEP_FINISHED:
            flight = None
            if isinstance(target, str):
                old = spans.get(target)
                spans[target] = Span(old.start if old else at, at, False)
    return RunTimes(created, confirmed, ended, last, spans, flight)


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
    )


def elapsed(start: datetime | None, end: datetime | None, now: datetime) -> float | None:
    """Seconds from start to end (to now while it has not ended), or None without a start."""
    if start is None:
        return None
    return max(0.0, ((end or now) - start).total_seconds())


def as_fields(times: RunTimes, final: bool, now: datetime) -> dict[str, Any]:
    """The times of a run for `status --json`: created/confirmed/ended at, elapsed seconds.

    A final run whose timeline does not say how it ended is taken to end at its last event.
    """
    ended = times.ended_at or (times.last_at if final else None)
    seconds = elapsed(times.created_at, ended, now) if (ended or not final) else None
    return {
        "created_at": stamp(times.created_at) if times.created_at else None,
        "confirmed_at": stamp(times.confirmed_at) if times.confirmed_at else None,
        "ended_at": stamp(ended) if ended else None,
        "elapsed_seconds": round(seconds, 3) if seconds is not None else None,
    }
