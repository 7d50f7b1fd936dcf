"""What each command prints under `--json`, as plain models and their JSON Schemas.

The commands build their JSON from dicts; these models describe it, so a test (or a script
reading the output) can validate it with `schema_for(command)`. An error under `--json` is
`ErrorResult` for every command. `logs --json` prints one `LogLine` per line, not one document.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from app.doctor import ChannelCheck, HomeCheck, MappingCheck, PackageCheck, TierCheck
from app.doctor_services import McpServerCheck, WorkersCheck
from multiverse.home import Serving
from multiverse.models import MajorStage, Phase, Status, Task, ToolTask
from multiverse.runs import ArchiveResult
from orchestrator.forking import ForkResult


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ErrorResult(_Data):
    """Any command's error under --json; `code` is also its exit code."""

    error: str = Field(min_length=1)
    code: int


class InitResult(_Data):
    """`init`: the home's absolute path and what was created in it (home-relative)."""

    home: str
    created: list[str]


class Answered(_Data):
    """`confirm`, `modify`, `cancel`, `pause`: the answer given (its own file in answers/)."""

    run_id: str
    answer: Literal["confirm", "modify", "cancel", "pause"]
    path: str  # home-relative: runs/<run_id>/answers/<time>-<pid>.md
    message: str  # the sentence the command prints without --json


class Modified(_Data):
    """`modify`: the answer given, and (waited for when a daemon serves) the revised proposal."""

    run_id: str
    answer: Literal["modify"]
    path: str
    message: str
    refused: bool = False  # the daemon refused the answer (its reason is in messages.md)
    status: Status | None = None  # the run's status once waited for (None: not in time)
    proposal: str | None = None  # the revised proposal's text
    proposal_path: str | None = None


class Retried(_Data):
    """`retry`: the RETRY written, and where the run failed (None when not recorded)."""

    run_id: str
    answer: Literal["retry"]
    path: str
    from_: str | None = Field(alias="from")
    message: str


class Forked(ForkResult):
    """`fork`: the new run, the run it was made from, the step it redoes from, the rows it kept
    COMPLETED and those it redoes (PENDING), its folder (home-relative), and the sentence."""

    message: str


class Resumed(_Data):
    """`resume`: the RESUME written, and what the run was held for."""

    run_id: str
    answer: Literal["resume"]
    path: str
    held: list[str]
    message: str


class ApprovalAnswered(_Data):
    """`approve`, `deny`: which waiting action was answered, and how."""

    run_id: str
    answer: Literal["approve", "deny"]
    approval_id: str
    action: str  # the tool and its arguments, in one line
    status: Literal["APPROVED", "DENIED"]
    message: str


class RowDeleted(_Data):
    """`delete-row`: the table (home-relative) and the key of the row removed."""

    table: str
    key: str
    message: str


class SubmitResult(_Data):
    """`submit`: the inbox file, whether a daemon serves, and what it made of the request."""

    inbox: str
    daemon: Literal["serving", "not running"]
    taken: Literal["run", "reply", "rejected"] | None
    run_id: str | None
    path: str | None
    status: Status | None
    proposal: str | None
    timed_out: bool
    why_run: str | None = None  # why a question became a run (its spec, else its intake)
    answer: str | None = None  # a question answered at once: the reply's text


class RunEntry(_Data):
    """A run in `status --json`: its process_runs columns, times, and why it waits."""

    run_id: str
    user_request: str
    status: Status | None  # None: db/process_runs.md cannot be read
    current_phase_id: str | None
    current_stage_id: str | None
    current_task_id: str | None
    created_at: str | None
    confirmed_at: str | None
    ended_at: str | None
    elapsed_seconds: float | None  # the run's work: its steps' seconds, never the user's wait
    idle_since: str | None = None  # when its last step ended, while no step runs
    paused: str | None = None  # only when a broken table holds the run up
    held: str | None = None  # only when the run holds for a review of its plan
    waiting: str | None = None  # only when an action waits for your approval: which, and how


class ReplyEntry(_Data):
    """A request answered without a run, after the runs in `status --json`."""

    kind: Literal["simple_reply"]
    reply: str
    request: str | None
    first_line: str
    answered_at: str


class InFlight(_Data):
    """The step a run is doing now (`status RUN --json`)."""

    step: str
    target: str | None
    started_at: str
    seconds: float


class TreeRun(RunEntry):
    """The run at the top of `status RUN --json`."""

    in_flight: InFlight | None
    archived: bool = False  # only for a run moved under runs/archive/
    broken: list[str] = []  # only when a run table cannot be read: each problem, and its fix
    forked_from: str | None = None  # only for a run `multiverse fork` made: `RUN at STEP`


class PhaseEntry(Phase):
    """A phase of the tree, with its elapsed seconds."""

    elapsed_seconds: float | None


class StageEntry(MajorStage):
    """A stage of the tree, with its elapsed seconds."""

    elapsed_seconds: float | None


class TaskEntry(Task):
    """A task of the tree, with its elapsed seconds."""

    elapsed_seconds: float | None


class ToolTaskEntry(ToolTask):
    """A tool task of the tree, with its elapsed seconds."""

    elapsed_seconds: float | None


class RunTree(_Data):
    """`status RUN --json`: the run and its phases, stages, tasks and tool tasks."""

    run: TreeRun
    phases: list[PhaseEntry]
    stages: list[StageEntry]
    tasks: list[TaskEntry]
    tool_tasks: list[ToolTaskEntry]


class ShownFile(_Data):
    """A file `show` prints: home-relative path and text."""

    path: str
    text: str


class ShowResult(_Data):
    """`show --json`: the run's status, proposal, messages (None until written) and outputs."""

    run_id: str
    status: Status
    proposal: ShownFile | None
    messages: ShownFile | None
    outputs: list[str]


class DoctorResult(_Data):
    """`doctor --json`: every check, whether all is well, and whether a daemon serves."""

    home: HomeCheck
    mapping: MappingCheck
    tiers: list[TierCheck]
    packages: list[PackageCheck]
    channels: list[ChannelCheck]
    daemon: Serving | None
    parallel_runs: int | None  # runs the daemon advances at once (None: the mapping is broken)
    shell_sandbox: str | None = None  # the shell mapped: "" when sandboxed, else why it is refused
    promises: list[str] = []  # asked for and not possible here: a search key unset, a recipe
    workers: list[WorkersCheck] = []  # each remote tier's broker and queue, and who serves it
    mcp_servers: list[McpServerCheck] = []  # each MCP server: whether it answered, its tools
    healthy: bool
    serving: bool


class LogLine(BaseModel):
    """One line of `logs --json`: a log event; its other keys are the event's own."""

    model_config = ConfigDict(extra="allow", frozen=True)

    event: str
    level: str
    timestamp: str


class RunsEntry(RunEntry):
    """A run in `runs --json`: the status entry, and whether it is archived."""

    archived: bool


class OpenResult(_Data):
    """`open --json`: the report (or folder) opened, and whether a program opened it."""

    run_id: str
    path: str
    opened: bool
    opener: str | None


# What each command prints on success under --json; "status RUN" is `status` with a run id.
SHAPES: dict[str, Any] = {
    "error": ErrorResult,
    "init": InitResult,
    "submit": SubmitResult,
    "status": list[RunEntry | ReplyEntry],
    "status RUN": RunTree,
    "confirm": Answered,
    "modify": Modified,
    "cancel": Answered,
    "pause": Answered,
    "approve": ApprovalAnswered,
    "deny": ApprovalAnswered,
    "retry": Retried,
    "fork": Forked,
    "resume": Resumed,
    "delete-row": RowDeleted,
    "show": ShowResult,
    "logs": LogLine,
    "doctor": DoctorResult,
    "runs": list[RunsEntry],
    "archive": ArchiveResult,
    "open": OpenResult,
}


def schema_for(command: str) -> dict[str, Any]:
    """The JSON Schema of what `command` prints under --json (see SHAPES for the names)."""
    schema: dict[str, Any] = TypeAdapter(SHAPES[command]).json_schema()
    return schema
