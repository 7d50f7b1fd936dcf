"""A run held until a person says `multiverse resume RUN` (SPEC §13): the records, as evidence.

A hold is two signals under runs/<run_id>/signals/: `hold-<key>` when it began and
`release-<key>` when the person let the run go on. A hold is open while only the first exists,
so it survives a restart, and a released one is never held again. The key comes from the
hold's reason: `plan:stages:P1` (the stage plan of a phase, before it runs), `plan:tasks:P1-S01`
(the task plan of a stage), `user:N` (the N-th pause a person asked for: `multiverse pause RUN`
or PAUSE in user_response.md, before the run's next step).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from orchestrator.signals import Evidence, SignalBox

if TYPE_CHECKING:  # `status` reads holds and must not pay for the mapping's import
    from multiverse.config import PlanLevel

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


def open_hold_names(names: Iterable[str]) -> list[str]:
    """The holds among these evidence names that no release ended, sorted."""
    present = set(names)
    return sorted(
        name
        for name in present
        if name.startswith(HOLD) and RELEASE + name[len(HOLD) :] not in present
    )


def open_holds(box: SignalBox, names: Iterable[str] | None = None) -> list[HoldRecord]:
    """The records of the run's open holds (a corrupt one is a TableError)."""
    found = box.names() if names is None else names
    return [
        record
        for name in open_hold_names(found)
        if (record := box.read(name, HoldRecord)) is not None
    ]


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


def waiting_line(record: HoldRecord, run_id: str) -> str:
    """One line for `status`: what the run waits for and what lets it go on."""
    if is_user(record.reason):
        return f"paused, as you asked: `multiverse resume {run_id}` lets it go on"
    where = f" in {record.table}" if record.table else ""
    return (
        f"waits for `multiverse resume {run_id}` after your review of "
        f"{describe(record.reason)}{where}"
    )
