"""The run's evidence (SPEC §15): records of finished steps under runs/<run_id>/signals/, the
answers set aside once handled (responses/), and the holds a person releases with `resume`.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from multiverse.atomic import atomic_write_text, create_exclusive, fsync_folder
from multiverse.errors import TableError
from multiverse.home import RunPaths
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
from multiverse.roles import Proposal, ResultSignal
from multiverse.runs import ApprovalBook
from multiverse.store import MAJOR_STAGES, PHASES, TASKS, TOOL_TASKS, Table, TableStore
from orchestrator.decide import (
    HOLD,
    RELEASE,
    Decision,
    DecisionKind,
    Evidence,
    FailureRecord,
    HoldRecord,
    RunView,
    describe,
    is_user,
    parse_answer,
)

M = TypeVar("M", bound=BaseModel)
HISTORY = "history"  # records a retry set aside: the run's earlier failures


class ProposalRecord(Evidence):
    """Revision `revision` of the amendment proposal and the MODIFY text that asked for it."""

    revision: int
    proposal: Proposal
    modification: str | None = None


class ModifyRequest(Evidence):
    """The user asked for revision `revision` with this text."""

    revision: int
    text: str


class SignalBox:
    """Reads and writes the evidence files of one run."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def names(self) -> set[str]:
        """Every evidence file name present (without the .json suffix)."""
        try:
            return {entry[:-5] for entry in os.listdir(self.folder) if entry.endswith(".json")}
        except FileNotFoundError:
            return set()

    def history(self) -> set[str]:
        """Names of the records moved into history/ (earlier failures of a retried run)."""
        try:
            folder = self.folder / HISTORY
            return {entry[:-5] for entry in os.listdir(folder) if entry.endswith(".json")}
        except FileNotFoundError:
            return set()

    def move_to_history(self, name: str, new_name: str) -> bool:
        """Keep a record as history under a new name (idempotent); whether it was moved."""
        folder = self.folder / HISTORY
        folder.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(self.path(name), folder / f"{new_name}.json")
        except FileNotFoundError:
            return False  # moved before a crash, or never written
        return True

    def read_history(self, name: str, model: type[M]) -> M | None:
        """Read one record of the history, or None."""
        return SignalBox(self.folder / HISTORY).read(name, model)

    def path(self, name: str) -> Path:
        """The file of one evidence record."""
        return self.folder / f"{name}.json"

    def write(self, name: str, record: BaseModel) -> None:
        """Write one record atomically (replacing an older one of the same name)."""
        atomic_write_text(self.path(name), record.model_dump_json(indent=2) + "\n")

    def read(self, name: str, model: type[M]) -> M | None:
        """Read one record, or None if absent; a corrupt record is a TableError."""
        path = self.path(name)
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            return model.model_validate(json.loads(raw))
        except (ValueError, ValidationError) as error:
            raise TableError(path, None, f"unreadable signal: {error}") from error

    def result(self, step_id: str) -> ResultSignal | None:
        """The result signal of a task or tool task, if it finished."""
        return self.read(step_id, ResultSignal)


def read_response(path: Path) -> Decision | None:
    """The user's answer, or None while the file is absent or still empty.

    Saved as UTF-8 (with or without a byte-order mark) or, by some Windows editors, UTF-16.
    """
    try:
        return parse_answer(path.read_bytes())
    except FileNotFoundError:
        return None


def give_answer(paths: RunPaths, text: str) -> Path:
    """An answer of a command as its own file in runs/<id>/answers/, created exclusively: two
    answers given at once (`cancel` racing `confirm`) are both kept and handled in order."""
    name = f"{time.time_ns():020d}-{os.getpid()}.md"
    paths.answers.mkdir(exist_ok=True)
    return create_exclusive(paths.answers, name, text.encode("utf-8"))


def waiting_answers(paths: RunPaths) -> list[Path]:
    """The answers of commands not handled yet, oldest first (hidden temporaries skipped)."""
    try:
        names = sorted(n for n in os.listdir(paths.answers) if n.endswith(".md") and n[0] != ".")
    except FileNotFoundError:
        return []
    return [paths.answers / name for name in names]


def take_next_answer(paths: RunPaths) -> None:
    """Put the oldest waiting answer where answers are read (user_response.md), once the one
    there was handled; never over an answer a person or a command put there.

    A hard link, then the queue's name removed: a crash between the two leaves the same file
    at both names, which the next call (always before the answer is handled) finishes.
    """
    waiting = waiting_answers(paths)
    if not waiting:
        return
    oldest = waiting[0]
    try:
        os.link(oldest, paths.user_response)
    except FileExistsError:
        try:
            if not os.path.samefile(oldest, paths.user_response):
                return  # the answer there is handled first
        except FileNotFoundError:
            return  # one of them went meanwhile: looked at again next time
    except FileNotFoundError:
        return  # taken by another reader meanwhile
    except OSError:  # a file system without hard links: moved, where nothing stands yet
        if paths.user_response.exists():
            return
        os.replace(oldest, paths.user_response)
    with contextlib.suppress(FileNotFoundError):
        oldest.unlink()
    fsync_folder(paths.answers, paths.root)


STOPPING = (DecisionKind.CANCEL, DecisionKind.PAUSE)  # answers that stop a step in flight


def stop_waiting(paths: RunPaths) -> bool:
    """Whether a CANCEL or a PAUSE was given and not handled yet (in user_response.md or
    waiting): the step in flight is stopped, and redone if the run goes on."""
    answers = [read_response(path) for path in [paths.user_response, *waiting_answers(paths)]]
    return any(answer is not None and answer.kind in STOPPING for answer in answers)


HELD = "held"  # an answer set aside by `multiverse retry`, given back once the run is reopened


def archive_response(paths: RunPaths, label: str) -> None:
    """Move the answered user_response.md aside, numbered, so it is never read twice."""
    folder = paths.responses
    folder.mkdir(exist_ok=True)
    numbers = [int(name[:3]) for name in os.listdir(folder) if name[:3].isdigit()]
    number = max(numbers, default=0) + 1
    with contextlib.suppress(FileNotFoundError):  # already moved before a crash
        os.replace(paths.user_response, folder / f"{number:03d}-{label}.md")


def give_back_held(paths: RunPaths) -> bool:
    """Put the newest held answer back into user_response.md (unless a new one is there)."""
    try:
        names = sorted(name for name in os.listdir(paths.responses) if name[:3].isdigit())
    except FileNotFoundError:
        return False
    # The newest answer other than the retries themselves, if it is a held one.
    answers = [name for name in names if not name[4:].startswith("retry")]
    if not answers or not answers[-1].endswith(f"-{HELD}.md") or paths.user_response.exists():
        return False
    os.replace(paths.responses / answers[-1], paths.user_response)
    return True


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


def waiting_line(record: HoldRecord, run_id: str) -> str:
    """One line for `status`: what the run waits for and what lets it go on."""
    if is_user(record.reason):
        return f"paused, as you asked: `multiverse resume {run_id}` lets it go on"
    where = f" in {record.table}" if record.table else ""
    return (
        f"waits for `multiverse resume {run_id}` after your review of "
        f"{describe(record.reason)}{where}"
    )


@dataclass(frozen=True)
class RunTables:
    """The four tables of one run."""

    paths: RunPaths
    phases: Table[Phase]
    stages: Table[MajorStage]
    tasks: Table[Task]
    tools: Table[ToolTask]

    @classmethod
    def of(cls, paths: RunPaths, store: TableStore) -> RunTables:
        """The tables of the run at `paths`, read and written through `store`."""
        return cls(
            paths,
            store.table(PHASES, paths.db / PHASES.filename),
            store.table(MAJOR_STAGES, paths.db / MAJOR_STAGES.filename),
            store.table(TASKS, paths.db / TASKS.filename),
            store.table(TOOL_TASKS, paths.db / TOOL_TASKS.filename),
        )


def load_run_view(
    tables: RunTables, run: ProcessRun, pause_before: frozenset[PlanLevel] = frozenset()
) -> RunView:
    """Read one run's tables and evidence; a broken run table becomes `load_error`."""
    paths = tables.paths
    box = SignalBox(paths.signals)
    evidence = frozenset(box.names())
    failure = box.read("failure", FailureRecord) if "failure" in evidence else None
    if run.status is Status.FAILED:
        # A failed run takes one answer, RETRY, and is reopened by steps of its own (§8).
        return RunView(
            run=run,
            evidence=evidence,
            history=frozenset(box.history()),
            failure=failure,
            response=read_response(paths.user_response),
        )
    if run.status in FINAL_STATUSES:
        return RunView(run=run, evidence=evidence, failure=failure)
    try:
        phases = tables.phases.rows()
        stages = tables.stages.rows()
        tasks = tables.tasks.rows()
        tools = tables.tools.rows()
        holds = tuple(open_holds(box, evidence))
    except TableError as error:
        return RunView(run=run, evidence=evidence, failure=failure, load_error=str(error))
    pending = [t.task_id for t in tasks if t.status is Status.PENDING]
    pending += [t.tool_task_id for t in tools if t.status is Status.PENDING]
    signals = {}
    for step_id in pending:
        if step_id in evidence:
            result = box.result(step_id)
            if result is not None:
                signals[step_id] = result
    # Read in every open status: CANCEL and PAUSE are words for a run at any time.
    response = read_response(paths.user_response)
    waiting = ApprovalBook(paths.root).pending()
    approval = waiting[0] if waiting else None
    return RunView(
        run=run,
        phases=phases,
        stages=stages,
        tasks=tasks,
        tool_tasks=tools,
        signals=signals,
        evidence=evidence,
        response=response,
        failure=failure,
        approval=approval,
        now=time.time(),
        holds=holds,
        pause_before=pause_before,
    )
