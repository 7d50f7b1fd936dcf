"""The daemon's JSON log read back: model calls, where the run was, wall time per phase.

Older versions may lack a field (e.g. `constrained`); it is then None, never guessed.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

Event = dict[str, Any]
_PHASE = re.compile(r"\b(P\d+)\b|\b(P\d+)-")
# Steps of the set-up phase whose target is a T0x task or nothing.
_PHASE0_KINDS = {
    "PLAN_PHASE0", "SET_UP_RUN", "PROPOSE", "ASK", "HANDLE_RESPONSE", "WRITE_INSTRUCTIONS",
    "BUILD_CATALOG", "FIRST_ANALYSIS", "COMPLETE_PHASE0",
}  # fmt: skip
# A step that ends by waiting for the user: its time is its last event, not the next step.
_WAITING_KINDS = {"ASK"}
INTAKE, END = "intake", "closing"


def read_events(logs: Path) -> list[Event]:
    """Every JSON event of the *.jsonl files under a log folder, in time order."""
    events: list[Event] = []
    for path in sorted(logs.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line cut by a kill, or not ours
            if isinstance(event, dict) and "event" in event:
                events.append(event)
    return sorted(events, key=lambda e: str(e.get("timestamp", "")))


def _time(event: Event) -> datetime | None:
    try:
        return datetime.fromisoformat(str(event["timestamp"]))
    except (KeyError, ValueError):
        return None


@dataclass(frozen=True)
class LlmCall:
    """One paid model call as logged (`llm_call`); a repair attempt is a call of its own."""

    role: str | None
    scope: str | None
    tier: str | None
    repairs: int | None
    constrained: bool | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float | None
    finish_reason: str | None
    cache_hit: bool | None
    # Of prompt_tokens, those the provider's prompt cache served.
    cached_tokens: int | None = None
    # A cut answer going on (1, 2…) or asked again with more room: part of the call before it.
    continuation: int | None = None
    more_room: bool | None = None


def llm_calls(events: list[Event]) -> list[LlmCall]:
    """The `llm_call` events, with None for what an older version did not log."""
    names = [f.name for f in fields(LlmCall)]
    return [
        LlmCall(**{name: e.get(name) for name in names})
        for e in events
        if e.get("event") == "llm_call"
    ]


def repairs_per_call(calls: list[LlmCall]) -> dict[int, int]:
    """How many calls needed 0, 1, 2… repairs: a repair attempt, a continuation of a cut answer
    and a cut answer asked again with more room join the call they go on from."""
    needed: list[int] = []
    open_calls: dict[tuple[str | None, str | None], int] = {}  # (role, scope) → index
    for call in calls:
        key = (call.role, call.scope)
        follows = (call.repairs or 0) > 0 or (call.continuation or 0) > 0 or bool(call.more_room)
        if follows and key in open_calls:
            index = open_calls[key]
            needed[index] = max(needed[index], call.repairs or 0)
        else:
            open_calls[key] = len(needed)
            needed.append(call.repairs or 0)
    return dict(sorted(Counter(needed).items()))


def event_counts(events: list[Event], names: tuple[str, ...]) -> dict[str, int]:
    """How often each named event occurs."""
    counts = Counter(str(e.get("event")) for e in events)
    return {name: counts.get(name, 0) for name in names}


def phase_of(step: str, current: str | None) -> str:
    """The phase a step belongs to: from its target (P2-S01-T03 → P2), else from its kind."""
    kind, _, target = step.partition(" ")
    match = _PHASE.search(target)
    if match:
        return match[1] or match[2]
    if kind in _PHASE0_KINDS:
        return "P0"
    if kind in ("COMPLETE_RUN", "FAIL_RUN"):
        return END
    return current or "P0"


@dataclass
class Timing:
    """Wall seconds per phase, time the run waited for the user, and the last step started.

    `intake` runs from the daemon's start to the run's creation: the request is submitted as
    the daemon starts, so it is the inbox settling and the mode decision (a model call).
    """

    phases: dict[str, float] = field(default_factory=dict)
    waiting_s: float = 0.0
    last_step: str | None = None
    steps: int = 0


def timing(events: list[Event], run_id: str) -> Timing:
    """A step lasts until the next step starts; one that asks the user, until its last event.

    The run's last step, unless it closes the run, lasts until the log's last event (the
    daemon's stop): it was in flight.
    """
    mine = [(t, e) for e in events if e.get("run_id") == run_id and (t := _time(e)) is not None]
    starts = [i for i, (_, e) in enumerate(mine) if e.get("event") == "step_started"]
    result = Timing(steps=len(starts))
    stopped = next((t for e in reversed(events) if (t := _time(e)) is not None), None)
    intake = _intake(events, run_id)
    if intake is not None:
        result.phases[INTAKE] = intake
    phase: str | None = None
    for n, i in enumerate(starts):
        start, event = mine[i]
        step = str(event.get("step", ""))
        phase = phase_of(step, phase)
        following = starts[n + 1] if n + 1 < len(starts) else len(mine)
        last_own = mine[following - 1][0]
        waits = step.partition(" ")[0] in _WAITING_KINDS and following < len(mine)
        end = last_own if waits or following == len(mine) else mine[following][0]
        if following == len(mine) and phase != END and stopped is not None:
            end = max(end, stopped)  # in flight when the daemon was stopped
        result.phases[phase] = result.phases.get(phase, 0.0) + (end - start).total_seconds()
        if waits:
            result.waiting_s += (mine[following][0] - last_own).total_seconds()
        result.last_step = step
    result.phases = {k: round(v, 1) for k, v in result.phases.items()}
    result.waiting_s = round(result.waiting_s, 1)
    return result


def _intake(events: list[Event], run_id: str) -> float | None:
    """Seconds from the last daemon start before the run's creation to that creation."""
    started: datetime | None = None
    for event in events:
        if event.get("event") == "daemon_started":
            started = _time(event)
        elif event.get("event") == "run_created" and event.get("run_id") == run_id:
            created = _time(event)
            if started is None or created is None:
                return None
            return (created - started).total_seconds()
    return None


def run_failure(events: list[Event], run_id: str) -> str | None:
    """The error of the last `run_failed` event of the run, if any."""
    failed = [e for e in events if e.get("event") == "run_failed" and e.get("run_id") == run_id]
    return str(failed[-1].get("error")) if failed else None
