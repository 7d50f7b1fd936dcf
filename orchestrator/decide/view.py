"""A run's state as read from its files, as plain data: the only input of `next_step`, with the
records of its evidence the decision reads (a failure, a hold) and the names holds are kept by.

Nothing here reads a file: `orchestrator.evidence.load_run_view` fills a `RunView`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from multiverse.models import MajorStage, Phase, PlanLevel, ProcessRun, Task, ToolTask
from multiverse.roles import Approval, ResultSignal
from orchestrator.decide.answers import Decision


class Evidence(BaseModel):
    """Base of the small records kept as signals."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Mark(Evidence):
    """A step that leaves no other trace (asked, confirmed, reported) happened."""

    revision: int = 0
    detail: str = ""


class FailureRecord(Evidence):
    """Where and why a run failed (SPEC §8.1): the report is built from it."""

    role: str
    phase_id: str | None = None
    stage_id: str | None = None
    task_id: str | None = None
    tool_task_id: str | None = None
    purpose: str = ""
    error: str


CANCELLED = "cancelled"  # the evidence name: the cancel was decided
HOLD = "hold-"
RELEASE = "release-"
USER = "user"  # the reason's kind of a pause a person asked for


class HoldRecord(Evidence):
    """Why a run holds, and which table a person may edit meanwhile (home-relative)."""

    reason: str
    table: str = ""
    since: str = ""  # UTC, for people


class ReleaseRecord(Evidence):
    """The person let the run go on (`by`: where the answer came from)."""

    reason: str
    by: str = "user_response.md"


def plan_reason(level: PlanLevel, target: str) -> str:
    """The reason of a hold before a plan runs: `plan:stages:P1`, `plan:tasks:P1-S01`."""
    return f"plan:{level}:{target}"


def user_reason(number: int) -> str:
    """The reason of the `number`-th pause a person asked for: `user:1`."""
    return f"{USER}:{number}"


def is_user(reason: str) -> bool:
    """Whether a hold is a pause a person asked for (not a review of a plan)."""
    return reason.partition(":")[0] == USER


def hold_name(reason: str) -> str:
    """The evidence name of a hold with this reason (no `:` in a file name)."""
    return HOLD + reason.replace(":", "-")


def release_name(reason: str) -> str:
    """The evidence name of the release of that hold."""
    return RELEASE + reason.replace(":", "-")


def plan_of(reason: str) -> tuple[PlanLevel, str] | None:
    """The plan a hold is before (`("tasks", "P1-S01")`), None for a hold of another reason."""
    kind, _, rest = reason.partition(":")
    level, _, target = rest.partition(":")
    if kind != "plan" or not target:
        return None
    if level == "stages":
        return "stages", target
    if level == "tasks":
        return "tasks", target
    return None


def describe(reason: str) -> str:
    """What a hold waits on, in words: `the task plan of stage P1-S01`."""
    if is_user(reason):
        return "the pause you asked for"
    plan = plan_of(reason)
    if plan is None:
        return reason
    level, target = plan
    return (
        f"the stage plan of phase {target}"
        if level == "stages"
        else f"the task plan of stage {target}"
    )


@dataclass(frozen=True)
class RunView:
    """Everything `next_step` may look at for one run."""

    run: ProcessRun
    phases: list[Phase] = field(default_factory=list)
    stages: list[MajorStage] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)
    tool_tasks: list[ToolTask] = field(default_factory=list)
    signals: dict[str, ResultSignal] = field(default_factory=dict)
    evidence: frozenset[str] = frozenset()
    history: frozenset[str] = frozenset()  # records set aside by retries (signals/history/)
    response: Decision | None = None
    failure: FailureRecord | None = None
    load_error: str | None = None
    approval: Approval | None = None  # the oldest action waiting for a person's yes
    now: float = 0.0  # when the view was read (epoch seconds)
    holds: tuple[HoldRecord, ...] = ()  # open holds: the run waits for `multiverse resume`
    pause_before: frozenset[PlanLevel] = frozenset()  # plans a run holds at (daemon config)

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.run.run_id

    def revisions(self, prefix: str) -> int:
        """The highest revision N among evidence names `<prefix>-N` (0 if none)."""
        numbers = [
            int(name[len(prefix) + 1 :])
            for name in self.evidence
            if name.startswith(prefix + "-") and name[len(prefix) + 1 :].isdigit()
        ]
        return max(numbers, default=0)
