"""Forking a run (`multiverse fork RUN [--from STEP]`, SPEC §13), crash-safe.

A fork is a new run made of a final run's request, spec and confirmed instructions and of its
work before STEP (`orchestrator.forkcut` says which rows stay, which are redone); the original is
only read. The new run is built whole where nothing serves it, then appears with one rename:
1. under the home's fork lock, a fork a crash cut short is finished or undone (`finish_forks`);
2. the new run_id is reserved: the empty run folder runs/<id>, as intake reserves its ids
   (`allocate_run_id`), then `.multiverse/forking/<id>/` (the staging folder), each created
   exclusively; a crash between the two leaves an empty run folder, as a cut intake does;
3. the run is built in the staging folder: its tables, its Phase 0 evidence, request, spec and
   proposal, the files of the work it keeps, messages.md and `forked_from.json` naming its
   origin; then its global rows: its instructions (copies under new ids) and the catalog rows
   of the files it keeps;
4. outputs/<id> (the deliverables it keeps), then the run folder, renamed over the empty one it
   reserved: the commit. From here the run is whole; the daemon takes it as any run, and would
   give it its process_runs row from the folder itself;
5. its process_runs row (PENDING), and the staging folder removed.
A fork cut before its commit is undone: its global rows (tombstoned), its outputs and reserved
folder go; one cut after it is finished. Either way no half run is ever served.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

import structlog
from pydantic import BaseModel, ConfigDict

from communicator import BuiltinCommunicator, Speaker
from multiverse.atomic import (
    atomic_write_bytes,
    atomic_write_text,
    count_durable_write,
    fsync_folder,
)
from multiverse.errors import RunStateError, UnknownRun
from multiverse.home import PHASE_FOLDERS, Home
from multiverse.models import (
    FINAL_STATUSES,
    RUN_ID,
    CatalogEntry,
    ProcessRun,
    Row,
    Status,
    UserInstruction,
)
from multiverse.roles import Message, MessageKind
from multiverse.runs import archived_run, note, run_created
from multiverse.store import (
    KNOWLEDGE_CATALOG,
    MAJOR_STAGES,
    PHASES,
    PROCESS_RUNS,
    TASKS,
    TOOL_TASKS,
    USER_INSTRUCTIONS,
    FileFlock,
    LockTimeout,
    TableSpec,
    TableStore,
    add_tombstones,
)
from orchestrator.archiving import busy_reason, daemon_since
from orchestrator.crew import upsert
from orchestrator.evidence import RunTables, SignalBox
from orchestrator.forkcut import KEPT_TASKS, Cut, RunRows, cut
from orchestrator.intake import allocate_run_id
from orchestrator.past_runs import HistoryIndex

log = structlog.get_logger(__name__)
R = TypeVar("R", bound=Row)
FORKING = "forking"  # under .multiverse/: the staging folders, and the lock
ORIGIN = "forked_from.json"  # in the new run's folder: where it came from
LOCK_WAIT = 60.0  # seconds another fork of the home may hold the lock
# The Phase 0 evidence a fork keeps (the proposal, its question, the answers, the CONFIRM).
KEPT_EVIDENCE = re.compile(r"(proposal|asked|modify)-\d+|confirmed|confirmed-proposal")
CONTROL_FILES = ("request.md", "spec.json", "feedback_for_user.md", "learning_context.md")


class ForkResult(BaseModel):
    """A fork made: the new run, its origin and step, the rows it kept and those it redoes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    origin: str
    step: str
    kept: list[str]
    redone: list[str]
    folder: str


def fork_run(home: Home, store: TableStore, run_id: str, step: str | None = None) -> ForkResult:
    """Make a new run from a final run's confirmed instructions and its work before `step`."""
    lock = _lock(home)
    try:
        _finish_all(home, store)
        origin = _forkable(home, store, run_id)
        found = cut(_rows(home, store, run_id), step)
        new = _reserve(home, store)
        result = ForkResult(
            run_id=new, origin=run_id, step=found.step, kept=found.kept, redone=found.redone,
            folder=f"runs/{new}",
        )  # fmt: skip
        try:
            entries = _build(home, store, origin, found, result)
            _copy_instructions(home, store, run_id, new)
            store.modify_indexed(KNOWLEDGE_CATALOG, home.db / KNOWLEDGE_CATALOG.filename,
                                 lambda rows, index: upsert(rows, index, entries))  # fmt: skip
            _commit(home, new)
        finally:
            _settle(home, store, new)  # finished once committed, else undone
        log.info("run_forked", run_id=new, origin=run_id, step=found.step, kept=len(found.kept))
        return result
    finally:
        lock.release()


def finish_forks(home: Home, store: TableStore) -> list[str]:
    """Finish or undo the forks a crash cut short; the run_ids of those finished (whole)."""
    if not _forking(home).is_dir():
        return []
    lock = _lock(home)
    try:
        return _finish_all(home, store)
    finally:
        lock.release()


def _forking(home: Home) -> Path:
    return home.state / FORKING


def _lock(home: Home) -> FileFlock:
    lock = FileFlock(_forking(home) / ".lock")
    try:
        lock.acquire(LOCK_WAIT)
    except LockTimeout:
        raise RunStateError(
            "another fork of this home is under way: try again when it has finished"
        ) from None
    return lock


def _forkable(home: Home, store: TableStore, run_id: str) -> ProcessRun:
    """The run's row, once it is a final, confirmed run with nothing under way."""
    row = store.table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).get(run_id)
    if row is None and archived_run(store, home, run_id) is not None:
        raise RunStateError(
            f"run {run_id} is archived (runs/archive/{run_id}): it can be read, not forked"
        )
    if row is None:
        raise UnknownRun(run_id)
    if row.status not in FINAL_STATUSES:
        raise RunStateError(
            f"run {run_id} is {row.status.value}: only a COMPLETED, FAILED or CANCELLED run can "
            "be forked (wait for it to end, or cancel it)"
        )
    reason = busy_reason(home, row, daemon_since(home))
    if reason is not None:
        raise RunStateError(f"run {run_id} cannot be forked now: {reason}")
    if "confirmed" not in SignalBox(home.run(run_id).signals).names():
        raise RunStateError(
            f"run {run_id} was never confirmed: it has no confirmed instructions to fork "
            "(submit its request again instead)"
        )
    return row


def _rows(home: Home, store: TableStore, run_id: str) -> RunRows:
    tables = RunTables.of(home.run(run_id), store)
    return RunRows(tables.phases.rows(), tables.stages.rows(), tables.tasks.rows(),
                   tables.tools.rows())  # fmt: skip


def _reserve(home: Home, store: TableStore) -> str:
    """A new run_id never in use, reserved: its empty run folder (as intake reserves its ids),
    then its staging folder, which says the empty folder is a fork's."""
    run_id = allocate_run_id(home, store)
    _forking(home).mkdir(parents=True, exist_ok=True)
    _made(_forking(home) / run_id)
    return run_id


def _staged(home: Home, run_id: str) -> tuple[Path, Path]:
    """The run folder and the outputs folder being built in the staging folder."""
    staging = _forking(home) / run_id
    return staging / "runs" / run_id, staging / "outputs" / run_id


def _build(
    home: Home, store: TableStore, origin: ProcessRun, found: Cut, result: ForkResult
) -> list[CatalogEntry]:
    """The new run, whole, in its staging folder; the catalog rows of the files it keeps."""
    old, new = origin.run_id, result.run_id
    source, (root, outputs) = home.run(old), _staged(home, new)
    staged = TableStore()  # the staged tables are nobody else's: no journal of ours to keep
    specs: tuple[tuple[TableSpec[Any], list[Any]], ...] = (
        (PHASES, found.rows.phases), (MAJOR_STAGES, found.rows.stages),
        (TASKS, found.rows.tasks), (TOOL_TASKS, found.rows.tools),
    )  # fmt: skip
    for spec, rows in specs:
        if rows:
            renamed = [_renamed(row, old, new) for row in rows]
            staged.table(spec, root / "db" / spec.filename).insert(*renamed)
    for name in CONTROL_FILES:
        if (source.root / name).is_file():
            text = (source.root / name).read_bytes().decode("utf-8", "replace")
            atomic_write_text(root / name, text.replace(old, new))
    for name in sorted(SignalBox(source.signals).names()):
        if KEPT_EVIDENCE.fullmatch(name):
            text = SignalBox(source.signals).path(name).read_text(encoding="utf-8")
            atomic_write_text(root / "signals" / f"{name}.json", text.replace(old, new))
    for folder in ("logs", *(f"workspace/{name}" for name in PHASE_FOLDERS)):
        (root / folder).mkdir(parents=True, exist_ok=True)
    outputs.mkdir(parents=True, exist_ok=True)
    entries = _copy_work(home, store, old, new, found)
    run_created(root)
    note(root, "forked", origin=old, step=found.step)
    _tell(home, result, sum(task.status is Status.COMPLETED and task.task_id not in KEPT_TASKS
                            for task in found.rows.tasks))  # fmt: skip
    atomic_write_text(root / ORIGIN, result.model_dump_json(indent=2) + "\n")
    return entries


def _copy_work(
    home: Home, store: TableStore, old: str, new: str, found: Cut
) -> list[CatalogEntry]:
    """Copy the files of the kept tasks and tool tasks; their catalog rows, renamed."""
    root, outputs = _staged(home, new)
    places = {
        f"runs/{old}/": (root, f"runs/{new}/"),
        f"outputs/{old}/": (outputs, f"outputs/{new}/"),
    }
    kept = found.kept_steps
    catalog = store.table(KNOWLEDGE_CATALOG, home.db / KNOWLEDGE_CATALOG.filename)
    listed = [row for row in catalog.rows_with("run_id", {old}) if row.source_task_id in kept]
    paths = [row.file_path for row in listed]
    paths += [task.output_path for task in found.rows.tasks if task.task_id in kept]
    entries: list[CatalogEntry] = []
    for path in dict.fromkeys(paths):
        prefix = next((p for p in places if path.startswith(p)), None)
        if prefix is None:
            continue  # not the run's own file (db/user_instructions.md, an asset)
        rest, source = PurePosixPath(path[len(prefix) :]), home.root / path
        if ".." in rest.parts or not _regular(source):
            continue
        folder, renamed = places[prefix]
        atomic_write_bytes(folder / rest, source.read_bytes())
        entries += [
            _renamed(row, old, new).model_copy(update={"file_path": renamed + rest.as_posix()})
            for row in listed
            if row.file_path == path
        ]
    return entries


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def _renamed(row: R, old: str, new: str) -> R:
    """The row with every mention of the old run_id (its column, its paths) made the new one."""
    data = {
        name: value.replace(old, new) if isinstance(value, str)
        else [item.replace(old, new) for item in value] if isinstance(value, list)
        else value
        for name, value in row.model_dump(mode="json").items()
    }  # fmt: skip
    return type(row).model_validate(data)


def _tell(home: Home, result: ForkResult, tasks: int) -> None:
    """messages.md of the staged run: the Communicator says where it comes from."""
    root, _ = _staged(home, result.run_id)
    speaker = Speaker(Home(root.parent.parent), BuiltinCommunicator(), console=lambda text: None)
    text = (
        f"Run `{result.run_id}` is a fork of run `{result.origin}` from {result.step}: it has "
        f"its request, spec and confirmed instructions, and its finished work before "
        f"{result.step} ({tasks} task(s), their files copied into this run). {result.step} and "
        f"everything after it are PENDING and are done again; `{result.origin}` stays as it was."
    )
    speaker.tell(Message(kind=MessageKind.NOTICE, run_id=result.run_id, facts={"text": text}),
                 once="forked")  # fmt: skip


def _copy_instructions(home: Home, store: TableStore, old: str, new: str) -> None:
    """The origin's instructions, as ACTIVE instructions of the new run under new ids."""
    highest_archived = HistoryIndex(home).highest_instruction()

    def add(rows: list[UserInstruction]) -> list[UserInstruction]:
        if any(row.run_id == new for row in rows):
            return rows  # copied before a crash
        number = max(max((int(row.instruction_id[1:]) for row in rows), default=0),
                     highest_archived)  # fmt: skip
        copies = []
        for row in (row for row in rows if row.run_id == old):
            number += 1
            copies.append(UserInstruction(
                instruction_id=f"I{number:04d}", run_id=new, instruction_type=row.instruction_type,
                content=row.content.replace(old, new),
                justification=f"{row.justification} (as {row.instruction_id} of {old}: a fork)",
            ))  # fmt: skip
        return rows + copies

    store.modify(USER_INSTRUCTIONS, home.db / USER_INSTRUCTIONS.filename, add)


def _commit(home: Home, run_id: str) -> None:
    """Its outputs, then its folder over the empty one it reserved: the run is whole."""
    root, outputs = _staged(home, run_id)
    home.outputs.mkdir(parents=True, exist_ok=True)
    _moved(outputs, home.outputs / run_id)
    _moved(root, home.runs / run_id)


def _settle(home: Home, store: TableStore, run_id: str) -> bool:
    """Finish a fork that committed (True), or undo one that did not (False)."""
    folder = home.runs / run_id
    staging = _forking(home) / run_id
    if (folder / ORIGIN).is_file():
        request = (folder / "request.md").read_text(encoding="utf-8", errors="replace").strip()
        _register(home, store, run_id, request)
        (home.outputs / run_id).mkdir(parents=True, exist_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
        return True
    live = store.table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).get(run_id)
    if folder.is_dir() and not any(folder.iterdir()) and live is None:  # reserved by the fork
        _drop_rows(home, store, run_id)
        shutil.rmtree(home.outputs / run_id, ignore_errors=True)
        folder.rmdir()
    shutil.rmtree(staging, ignore_errors=True)
    return False


def _finish_all(home: Home, store: TableStore) -> list[str]:
    try:
        names = sorted(os.listdir(_forking(home)))
    except FileNotFoundError:
        return []
    finished = []
    for run_id in (name for name in names if re.fullmatch(RUN_ID, name)):
        if _settle(home, store, run_id):
            finished.append(run_id)
        log.info("fork_settled", run_id=run_id, whole=run_id in finished)
    return finished


def _register(home: Home, store: TableStore, run_id: str, request: str) -> None:
    """The run's process_runs row, PENDING, unless the daemon gave it one from its folder."""

    def add(rows: list[ProcessRun], index: Mapping[str, int]) -> list[ProcessRun]:
        if run_id not in index:
            rows.append(ProcessRun(run_id=run_id, user_request=request))
        return rows

    store.modify_indexed(PROCESS_RUNS, home.db / PROCESS_RUNS.filename, add)


def _drop_rows(home: Home, store: TableStore, run_id: str) -> None:
    """Remove the global rows of a fork undone, each tombstoned first (as archive does)."""
    specs: tuple[TableSpec[Any], ...] = (USER_INSTRUCTIONS, KNOWLEDGE_CATALOG)
    for spec in specs:
        path = home.db / spec.filename
        if not path.exists():
            continue
        keys = {row.key for row in store.table(spec, path).rows_with("run_id", {run_id})}
        if keys:
            add_tombstones(home.deleted_rows, path, sorted(keys))
            store.modify(spec, path, _without(keys))


def _without(keys: set[str]) -> Callable[[list[Row]], list[Row]]:
    """A table change removing the rows of these keys."""
    return lambda rows: [row for row in rows if row.key not in keys]


def _made(path: Path) -> None:
    """Create a folder exclusively and durably (FileExistsError if it is there)."""
    os.mkdir(path)
    fsync_folder(path.parent)
    count_durable_write()


def _moved(source: Path, target: Path) -> None:
    """Rename durably (a folder over an empty one, or to a free name)."""
    os.rename(source, target)
    fsync_folder(target.parent, source.parent)
    count_durable_write()
