"""A run's state as read from its files, as plain data: the only input of `next_step`, with the
records of its evidence the decision reads (a failure, a hold) and the names holds are kept by.

Nothing here reads a file: `orchestrator.evidence.load_run_view` fills a `RunView`.

Also here: what a run accepts now (SPEC §6.5, §8, §11, §13): each answer word, taken or refused
with the reason, from the run's state alone (pure). The CLI refuses an answer before writing it,
and the daemon treats an answer the run does not take as a refusal; both ask this one function
(`accepts`), so they never disagree.

Also here: the user's answers, read one way everywhere (SPEC §6.5, §8, §11, §13): the words a
person or the CLI writes into runs/<run_id>/user_response.md, decoded and parsed (pure).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from multiverse.agent_package import KNOWN_ROUTES, Route
from multiverse.models import (
    FINAL_STATUSES,
    MajorStage,
    Phase,
    PlanLevel,
    ProcessRun,
    Status,
    Task,
    ToolTask,
)
from multiverse.roles import Approval, ResultSignal


class DecisionKind(StrEnum):
    """What the user answered."""

    CONFIRM = "CONFIRM"
    MODIFY = "MODIFY"
    CANCEL = "CANCEL"
    RETRY = "RETRY"  # only for a FAILED run (SPEC §8)
    RESUME = "RESUME"  # only for a held run (daemon.pause_before, or PAUSE)
    PAUSE = "PAUSE"  # a confirmed run stops its step in flight and holds until RESUME
    APPROVE = "APPROVE"  # only for a run waiting for an approval (SPEC §11)
    DENY = "DENY"
    INVALID = "INVALID"


class Decision(BaseModel):
    """A parsed answer; `text` is the MODIFY text or, when INVALID, what was written."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: DecisionKind
    text: str = ""


_WORD = re.compile(
    r"^\s*(confirm|cancel|modify|retry|resume|pause|approve|deny)\b\s*[:\-—]?\s*", re.IGNORECASE
)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
# Invisible characters editors and clipboards add: a byte-order mark, zero-width spaces and
# joiners. They are never part of an answer.
_INVISIBLE = re.compile("[\ufeff\u200b\u200c\u200d\u2060]")
# "CONFIRM." or "Cancel!" is still the word.
_END_PUNCTUATION = re.compile(r"^[.!。！]+$")


def decode_answer(data: bytes) -> str:
    """An answer file's text: UTF-8 (with or without a byte-order mark) or, as some Windows
    editors save it, UTF-16 with a byte-order mark; undecodable bytes become U+FFFD."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8-sig", errors="replace")


def parse_decision(raw: str) -> Decision:
    """Parse CONFIRM, CANCEL, RETRY, RESUME, PAUSE, APPROVE, DENY or `MODIFY: text`
    (case-insensitive; comments, headings, a byte-order mark and surrounding whitespace
    ignored)."""
    raw = _INVISIBLE.sub("", raw)
    lines = [line for line in _COMMENT.sub("", raw).splitlines() if line.strip()]
    lines = [line for line in lines if not line.lstrip().startswith("#")]
    text = "\n".join(lines).strip()
    match = _WORD.match(text)
    if match is None:
        return Decision(kind=DecisionKind.INVALID, text=text[:500])
    word = match.group(1).upper()
    rest = text[match.end() :].strip()
    if word == "MODIFY":
        if not rest:
            return Decision(kind=DecisionKind.INVALID, text=text[:500])
        return Decision(kind=DecisionKind.MODIFY, text=rest)
    if rest and not _END_PUNCTUATION.match(rest):
        # "confirm but change X" is not a confirmation: refuse rather than guess.
        return Decision(kind=DecisionKind.INVALID, text=text[:500])
    return Decision(kind=DecisionKind(word))


def parse_answer(data: bytes) -> Decision | None:
    """The answer an answer file's bytes hold, or None while it is still empty."""
    raw = decode_answer(data)
    return parse_decision(raw) if raw.strip() else None


def render_decision(kind: DecisionKind, text: str = "") -> str:
    """The content the CLI writes into user_response.md."""
    if kind is DecisionKind.MODIFY:
        return f"MODIFY: {text}\n"
    return f"{kind.value}\n"


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
    # The handoffs the roles' agent cards give, read when the view is (default: every route).
    routes: frozenset[Route] = KNOWN_ROUTES

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


class Acceptance(BaseModel):
    """The answers a run refuses now, each with why; every other answer is taken."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    run_id: str
    refused: dict[DecisionKind, str]

    def takes(self, kind: DecisionKind) -> bool:
        """Whether the run takes this answer now."""
        return kind is not DecisionKind.INVALID and kind not in self.refused

    def why_not(self, kind: DecisionKind) -> str:
        """The sentence that refuses this answer: `run <id> is COMPLETED already: …`."""
        return f"run {self.run_id} {self.refused.get(kind, 'does not take that answer')}"


def accepts(view: RunView) -> Acceptance:
    """Which answers the run takes now, and why it refuses the others."""
    run_id, status = view.run_id, view.run.status
    final = status in FINAL_STATUSES
    held = bool(view.holds) and not final
    refused: dict[DecisionKind, str] = {}
    if status is not Status.AWAITING_CONFIRMATION:
        proposal = f"is not waiting for an answer (it is {status.value})"
    elif held:
        proposal = (
            f"holds for a review of its plan: `multiverse resume {run_id}` lets it go on "
            f"(or `multiverse cancel {run_id}`)"
        )
    else:
        proposal = ""
    if proposal:
        refused[DecisionKind.CONFIRM] = refused[DecisionKind.MODIFY] = proposal
    if final:
        refused[DecisionKind.CANCEL] = f"is {status.value} already: nothing to cancel"
    if not held:
        refused[DecisionKind.RESUME] = f"is not held (it is {status.value}): nothing to resume"
    pause = _pause_refusal(view, final, held)
    if pause:
        refused[DecisionKind.PAUSE] = pause
    if status is not Status.FAILED:
        refused[DecisionKind.RETRY] = (
            f"is {status.value}: only a FAILED run can be retried"
        )
    if view.approval is None or final:
        refused[DecisionKind.APPROVE] = refused[DecisionKind.DENY] = (
            "is not waiting for an approval"
        )
    return Acceptance(run_id=run_id, refused=refused)


def _pause_refusal(view: RunView, final: bool, held: bool) -> str:
    """Why the run cannot be paused now ("" when it can)."""
    if final:
        return f"is {view.run.status.value} already: nothing to pause"
    if held:
        return f"is held already: `multiverse resume {view.run_id}` lets it go on"
    if view.run.status is Status.AWAITING_CONFIRMATION or "confirmed" not in view.evidence:
        return "waits for your answer to its proposal (or is preparing it): nothing runs until then"
    if view.approval is not None:
        return f"waits for your approval already: `multiverse approve|deny {view.run_id}`"
    if cancel_wanted(view):
        return "is being cancelled"
    return ""


def cancel_wanted(view: RunView) -> bool:
    """Whether the run is to be cancelled: CANCEL answered, or a cancel begun (pure)."""
    if view.run.status in FINAL_STATUSES:
        return False
    answer = view.response
    return CANCELLED in view.evidence or (answer is not None and answer.kind is DecisionKind.CANCEL)
