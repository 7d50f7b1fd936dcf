"""What travels between the daemon and a worker for one remote step (issue 28): the job (the
role's assignment, the tier to serve it with, the files it may read, by content hash) and the
outcome (the result signal, the files the role wrote, by content hash, and the usage it added).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from multiverse.roles import ResultSignal, TaskAssignment, ToolAssignment

TASK_NAME = "multiverse.step"  # the Celery task every worker serves


class Wire(BaseModel):
    """Base of the exchanged data: strict, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def step_key(home_id: str, run_id: str, step_id: str, attempt: int) -> str:
    """The idempotency key of one attempt of one step: home, run, step, attempt (run ids are
    only unique within a home, and homes may share a broker)."""
    return f"{home_id}/{run_id}/{step_id}/{attempt}"


def step_of(key: str) -> str:
    """The key of the step an attempt's key belongs to (every attempt of it shares it)."""
    return key.rsplit("/", 1)[0]


def task_id_of(key: str) -> str:
    """The Celery task id of an attempt (its key, in the characters a task id keeps)."""
    return "multiverse-" + key.replace("/", "-")


class StepJob(Wire):
    """One step sent to a worker: the role's assignment (its `home` is the daemon's; the worker
    puts its scratch home there), the tier to serve it, and the files it may read."""

    key: str
    kind: Literal["task", "tool", "simple"]
    task: TaskAssignment | None = None
    tool: ToolAssignment | None = None
    request: str | None = None  # a SIMPLE_TASK's request (no run: the reply comes back)
    mapping: dict[str, Any]  # the daemon's runtime-mapping, as data (keys stay names of vars)
    tier: str
    mode: str  # how the daemon sees the tier served: builtin, model or process
    files: dict[str, str] = Field(default_factory=dict)  # home-relative path → sha256
    max_result_bytes: int
    lost_after_seconds: float
    step_timeout_seconds: float
    admission: str | None = None  # the daemon's rate desk (a Redis list), for model calls

    @property
    def task_id(self) -> str:
        """The Celery task id of this attempt."""
        return task_id_of(self.key)

    @property
    def run_id(self) -> str:
        """The run the step belongs to ("" for a SIMPLE_TASK, which has none)."""
        assignment = self.task or self.tool
        return assignment.run_id if assignment is not None else ""


class StepOutcome(Wire):
    """What a worker reports for one attempt: the signal and the files it wrote."""

    key: str
    signal: ResultSignal
    reply: str | None = None  # a SIMPLE_TASK's answer (markdown)
    declined: str | None = None  # why a SIMPLE_TASK was declined (it becomes a run)
    files: dict[str, str] = Field(default_factory=dict)  # home-relative path → sha256
    usage: dict[str, Any] | None = None  # the model usage the step added (UsageTotals' fields)
    worker: str = ""


def writable(run_id: str, name: str) -> bool:
    """Whether a worker may have written this home-relative path: the run's workspace, logs
    and outputs only (the tables, signals and answers are the daemon's)."""
    parts = name.split("/")
    if not run_id or ".." in parts or name.startswith("/") or any(p.startswith(".") for p in parts):
        return False
    places = (("runs", run_id, "workspace"), ("runs", run_id, "logs"), ("outputs", run_id))
    return any(tuple(parts[: len(place)]) == place and len(parts) > len(place) for place in places)
