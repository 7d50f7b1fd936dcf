"""Child processes (SPEC §11): one external command run bounded and never orphaned, and the
sessions of a process tier.

The public face of child processes; its modules are private to it.

A session of a process tier: one prompt at a time to an external command (SPEC §11).

It starts the child with the environment of seed 001 §17.2.1 and multiverse's own variables,
writes the session's DPS events, and turns the child's end into a verdict (§17.2.2): exit 0 is
success; 1-127 a fatal PROCESS_EXIT; death by a signal SIGNAL_EXIT; past the deadline TIMEOUT;
silent too long NO_OUTPUT; stopped by the daemon STOPPED (the daemon stopping or the run
cancelled: the step is redone or the run cancelled, never failed).

Also here: DPS events of agent sessions (seed 001 §17, SPEC §11), one JSON line each in a run's
`events.jsonl`.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from multiverse.config import DPS_VERSION, GRACE_SECONDS, ProcessSpec
from multiverse.errors import MultiverseError
from multiverse.processes.child import (
    RECORDS,
    ChildOutcome,
    allow_children,
    allow_run_children,
    child_environment,
    kept,
    run_child,
    stop_all_children,
    stop_leftover_children,
    stop_run_children,
    stop_signal,
)
from multiverse.processes.keeper import pid_alive

TURN_START = "session.turn.start"
TURN_END = "session.turn.end"
AGENT_ERROR = "agent.error"
SESSION_ERROR = "session.error"
INTERACTION_REQUEST = "agent.interaction.request"
INTERACTION_RESPONSE = "control.interaction.response"
INTERACTION_TIMEOUT = "control.interaction.timeout"


def append_event(path: Path, event: str, session_id: str, **fields: Any) -> dict[str, Any]:
    """Append one event line to `path` (created with its folder); returns the event."""
    line = {
        "event": event,
        "session_id": session_id,
        "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds"),
        **fields,
    }
    data = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return line


def read_events(path: Path) -> list[dict[str, Any]]:
    """The events of a file, in order; a torn last line is skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    events = []
    for line in lines:
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events


PROMPT_IN_PROGRESS = "PROMPT_IN_PROGRESS"


class PromptInProgress(MultiverseError):
    """A second prompt sent to a session that is still answering the first (§17.3.2)."""


@dataclass(frozen=True)
class Place:
    """Where a session works and keeps its traces."""

    home: Path
    cwd: Path
    events: Path  # events.jsonl
    logs: Path  # the folder of the session's log
    records: Path  # the folder of child records (see leftovers.py)
    run_id: str | None = None
    task_id: str | None = None
    output_path: Path | None = None
    role: str = "executor"


@dataclass(frozen=True)
class Turn:
    """What one prompt gave: the child's outcome and the verdict on it."""

    outcome: ChildOutcome
    error_code: str | None  # None: success
    message: str

    @property
    def interrupted(self) -> bool:
        """The daemon stopped the child: the step is to be redone, not failed."""
        return self.error_code == "STOPPED"


class ProcessSession:
    """One session (one UUID) of a process tier; one prompt in flight at a time."""

    def __init__(
        self, spec: ProcessSpec, place: Place, environ: Mapping[str, str] | None = None
    ) -> None:
        self.spec = spec
        self.place = place
        self.environ = os.environ if environ is None else environ
        self.session_id = str(uuid.uuid4())
        self._busy = threading.Lock()

    def prompt(self, text: str) -> Turn:
        """Run the command on `text`; raises PromptInProgress, or OSError if it cannot start."""
        if not self._busy.acquire(blocking=False):
            append_event(self.place.events, SESSION_ERROR, self.session_id,
                         error_code=PROMPT_IN_PROGRESS, fatal=False)  # fmt: skip
            raise PromptInProgress(f"session {self.session_id} is still answering a prompt")
        try:
            return self._turn(text)
        finally:
            self._busy.release()

    def _turn(self, text: str) -> Turn:
        place, spec = self.place, self.spec
        log_name = place.task_id or f"{place.role}-{self.session_id[:8]}"
        append_event(place.events, TURN_START, self.session_id, role=place.role,
                     run_id=place.run_id, task_id=place.task_id, adapter_type="process",
                     command=spec.argv[0])  # fmt: skip
        try:
            outcome = run_child(
                spec.command_line(text, self.session_id),
                text if spec.prompt_on_stdin() else None,
                place.cwd,
                child_environment(self.environ, self._variables(), spec.pass_env),
                spec.timeout_seconds,
                spec.no_output_timeout_seconds,
                place.logs / f"{log_name}.log",
                place.records / f"{self.session_id}.json",
                {"session_id": self.session_id, "run_id": place.run_id,
                 "task_id": place.task_id, "command": spec.argv[0]},
            )  # fmt: skip
        except OSError as error:
            message = f"`{spec.argv[0]}` could not be started: {error.strerror or error}"
            self._end("PROCESS_EXIT", message)
            raise
        code, message = verdict(spec, outcome)
        self._end(code, message)
        return Turn(outcome, code, message)

    def _variables(self) -> dict[str, str]:
        place = self.place
        values = {
            "RAWP_SESSION_ID": self.session_id,
            "RAWP_WORKSPACE_PATH": str(place.cwd.resolve()),
            "RAWP_DPS_VERSION": DPS_VERSION,
            "MULTIVERSE_HOME": str(place.home.resolve()),
            "MULTIVERSE_RUN_ID": place.run_id or "",
            "MULTIVERSE_TASK_ID": place.task_id or "",
        }
        if place.output_path is not None:
            values["MULTIVERSE_OUTPUT_PATH"] = str(place.output_path.resolve())
        return values

    def _end(self, code: str | None, message: str) -> None:
        place = self.place
        if code is None:
            append_event(place.events, TURN_END, self.session_id, stop_reason="end_turn")
            return
        if code != "STOPPED":
            append_event(place.events, AGENT_ERROR, self.session_id, severity="fatal",
                         error_code=code, message=message)  # fmt: skip
        reason = "cancelled" if code == "STOPPED" else "error"
        append_event(place.events, TURN_END, self.session_id, stop_reason=reason)


def verdict(spec: ProcessSpec, outcome: ChildOutcome) -> tuple[str | None, str]:
    """(error code or None, what happened in one sentence) for a child's end (pure)."""
    command = f"`{spec.argv[0]}`"
    tail = f"; the end of its stderr: {outcome.stderr_tail}" if outcome.stderr_tail else ""
    if outcome.stopped == "STOPPED":
        return "STOPPED", f"{command} was stopped (the daemon is stopping or the run is cancelled)"
    if outcome.stopped == "TIMEOUT":
        return "TIMEOUT", (
            f"{command} ran past its {spec.timeout_seconds:g} s timeout and was stopped "
            f"(SIGTERM, SIGKILL after {GRACE_SECONDS:g} s); raise timeout_seconds of the tier "
            f"if it needs longer{tail}"
        )
    if outcome.stopped == "NO_OUTPUT":
        return "NO_OUTPUT", (
            f"{command} printed nothing for {spec.no_output_timeout_seconds:g} s and was "
            f"stopped (no_output_timeout_seconds of the tier){tail}"
        )
    if outcome.returncode == 0:
        return None, f"{command} exited 0 after {outcome.seconds:.1f} s"
    number = outcome.signal_number
    if number is not None:
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return "SIGNAL_EXIT", f"{command} was ended by {name} (exit {outcome.returncode}){tail}"
    return "PROCESS_EXIT", f"{command} exited with code {outcome.returncode}{tail}"


__all__ = [
    "INTERACTION_REQUEST",
    "INTERACTION_RESPONSE",
    "INTERACTION_TIMEOUT",
    "RECORDS",
    "Place",
    "ProcessSession",
    "allow_children",
    "allow_run_children",
    "append_event",
    "kept",
    "pid_alive",
    "stop_all_children",
    "stop_leftover_children",
    "stop_run_children",
    "stop_signal",
]
