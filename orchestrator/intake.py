"""Step 0 (SPEC §5): a file in inbox/ becomes a SIMPLE_TASK reply or a new run.

Crash-safe: before a run is created, a claim `.multiverse/intake/<name>.json` records the run_id
chosen for the file, so a daemon killed half-way resumes the same run instead of making another.

A SIMPLE_TASK is only the Planner's first word: the Executor may decline it ("I cannot do this
one"), and then the request becomes a run exactly as a structured request would. Neither needs
a claim: deciding is repeatable and writes nothing, so a daemon killed after the decline decides
again on its next pass. The reply is written beside the name the request will be kept under
(`inbox/done/ask.reply.md` ↔ `ask.md`), then the request is moved there; killed in between, the
request is answered again under the next free pair of names.

Several requests are considered at once (`consider_all`): reading a request and asking the
Planner for its mode (a model call) write nothing of the home, so they overlap, at most
INTAKE_WORKERS at a time. Everything that writes (turning away, the simple-task reply, the run
id, the claim, the run) is `act`, done one request at a time in inbox order, so run ids and the
order of runs are those of the plain one-by-one intake. The run's mode is read when it is
created (CONTINUOUS_RUN once a run exists), exactly as the one-by-one intake read it.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import structlog

from multiverse.atomic import atomic_write_text
from multiverse.errors import RunStateError
from multiverse.gateway import carry_pending
from multiverse.home import Home
from multiverse.models import ProcessRun
from multiverse.roles import Declined, Message, MessageKind, Mode
from multiverse.runs import archived_run, run_created
from multiverse.store import PROCESS_RUNS, TableStore
from orchestrator.crew import Collaborators
from orchestrator.inbox import (
    InboxEntry,
    InboxRequest,
    RequestChanged,
    RequestRejected,
    Stamp,
    move_to_done,
    pair_name,
    read_request,
    reject,
    reply_path,
    shown_path,
)
from orchestrator.learning import has_past_runs, write_learning_context
from orchestrator.past_runs import rank_past_runs

log = structlog.get_logger(__name__)
# Requests considered at once. Their model calls are bounded per model by the mapping's
# `concurrency` (multiverse.gateway.limits); this only bounds threads and requests held in memory,
# as T03's SUMMARY_WORKERS does.
INTAKE_WORKERS = 8


@dataclass(frozen=True)
class Considered:
    """What one inbox entry turned out to be, before anything is written.

    `reject`: a reason to turn it away; no `request`: nothing to do (gone, or still being
    written); `claimed`: the run id and mode a crashed intake chose; else `simple` says
    whether the Planner's first word was SIMPLE_TASK.
    """

    path: Path
    request: InboxRequest | None = None
    reject: str | None = None
    claimed: tuple[str, Mode] | None = None
    simple: bool = False
    why_run: str = ""  # with `claimed`: why the Executor declined it, as the claim recorded


def take_in(
    crew: Collaborators, path: Path, max_bytes: int, settled: Stamp | None = None
) -> str | None:
    """Handle one inbox file; returns the run_id it created, if any.

    With `settled` (the stamp it settled with), a file that changed since is left for the
    next pass: it is still being written.
    """
    return act(crew, consider(crew, path, max_bytes, settled))


def consider(
    crew: Collaborators,
    path: Path,
    max_bytes: int,
    settled: Stamp | None = None,
    misfit: str | None = None,
) -> Considered:
    """Read an inbox file and decide what it is (the Planner's mode call included); writes
    nothing but the mode call's pending usage, so several files may be considered at once."""
    if misfit is not None:
        return Considered(path, reject=misfit)
    try:
        request = read_request(path, max_bytes, settled)
    except RequestRejected as error:
        return Considered(path, reject=error.reason)
    except RequestChanged:
        log.info("inbox_not_settled", name=path.name)
        return Considered(path)
    except FileNotFoundError:
        return Considered(path)  # taken by another pass already
    claimed = _read_claim(_claim_path(crew, path.name))
    if claimed is not None:
        return Considered(path, request, claimed=(claimed["run_id"], Mode(claimed["mode"])),
                          why_run=claimed.get("why_run", ""))  # fmt: skip
    return Considered(path, request, simple=_first_word_simple(crew, request))


def consider_all(
    crew: Collaborators,
    entries: Sequence[InboxEntry],
    max_bytes: int,
    workers: int = INTAKE_WORKERS,
) -> list[Future[Considered]]:
    """Consider the entries on at most `workers` threads; one future per entry, in order.

    The threads are daemon threads (a stopping daemon does not wait for a model call); a
    future cancelled before its turn is skipped.
    """
    futures: list[Future[Considered]] = [Future() for _ in entries]
    turns = iter(list(zip(entries, futures, strict=True)))
    guard = threading.Lock()

    def work() -> None:
        while True:
            with guard:
                entry, future = next(turns, (None, None))
            if entry is None or future is None:
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(consider(crew, entry.path, max_bytes, entry.stamp, entry.misfit))
            except BaseException as error:  # handed to whoever acts on this entry
                future.set_exception(error)

    for n in range(min(workers, len(entries))):
        threading.Thread(target=work, name=f"intake-{n}", daemon=True).start()
    return futures


def act(crew: Collaborators, considered: Considered) -> str | None:
    """Do what `consider` found, in inbox order: turn away, reply, or create the run."""
    path, request = considered.path, considered.request
    if considered.reject is not None:
        turn_away(crew, path, considered.reject)
        return None
    if request is None:
        return None
    if considered.claimed is not None:
        return _create_run(crew, path, request, *considered.claimed, considered.why_run)
    declined = _simple_task(crew, path, request) if considered.simple else None
    if considered.simple and declined is None:
        shutil.rmtree(crew.home.pending_usage / request.name, ignore_errors=True)
        return None
    mode = _run_mode(crew)
    why_run = declined.reason if declined is not None else ""
    if considered.simple:
        log.info(
            "mode_overridden",
            name=request.name,
            said=Mode.SIMPLE_TASK,
            mode=mode,
            reason="the executor cannot perform it as a simple task, so it becomes a run",
            why_run=why_run,
        )
    run_id = allocate_run_id(crew.home, crew.store)
    claim = _claim_path(crew, path.name)
    record = {"run_id": run_id, "mode": mode.value, "why_run": why_run}
    atomic_write_text(claim, json.dumps(record, ensure_ascii=False) + "\n")
    return _create_run(crew, path, request, run_id, mode, why_run)


def turn_away(crew: Collaborators, path: Path, reason: str) -> None:
    """Move what cannot be a request to inbox/rejected/ with its reason, and say so once."""
    try:
        target = reject(crew.home, path, reason)
    except FileNotFoundError:
        return  # moved away meanwhile
    crew.speaker.tell(
        Message(
            kind=MessageKind.NOTICE,
            facts={
                "text": (
                    f"The request `{path.name}` was not accepted: {reason.rstrip('.')}. "
                    f"It was moved to `{shown_path(crew.home, target)}` with the reason beside it."
                )
            },
        )
    )


def _first_word_simple(crew: Collaborators, request: InboxRequest) -> bool:
    """Whether the request is a SIMPLE_TASK by its front matter or the Planner's decision."""
    if request.forced_mode is Mode.SIMPLE_TASK:
        return True
    if request.forced_mode is not None:
        return False
    # Charged to a pending ledger named after the request, carried into its run later.
    has_past = has_past_runs(crew)
    decided = crew.planner.decide_mode(request.body, has_past, pending_ledger=request.name)
    log.info("mode_decided", name=request.name, mode=decided.mode, reason=decided.reason)
    return decided.mode is Mode.SIMPLE_TASK


def _run_mode(crew: Collaborators) -> Mode:
    """The mode of a request that is a run: CONTINUOUS_RUN once past runs exist."""
    return Mode.CONTINUOUS_RUN if has_past_runs(crew) else Mode.INITIAL_RUN


def _simple_task(crew: Collaborators, path: Path, request: InboxRequest) -> Declined | None:
    """The Executor answers directly; nothing in runs/ or outputs/ (SPEC §5).

    Its decline (with why, when it says) when it cannot do it: then nothing was written.
    """
    reply = crew.executor.simple_task(request.body, crew.home.root)
    if isinstance(reply, Declined):
        return reply
    kept = pair_name(crew.home, path.name)
    crew.speaker.reply(
        reply_path(crew.home, kept),
        Message(kind=MessageKind.SIMPLE_REPLY, facts={"reply": reply}),
    )
    move_to_done(crew.home, path, kept)
    return None


def allocate_run_id(home: Home, store: TableStore, now: datetime | None = None) -> str:
    """A new `run-YYYYMMDD-HHMMSS-NNN`, reserved by creating its folder (exclusively); never an
    id in use anywhere: an archived run's (its id is free in runs/ but not new), a live row's,
    or one that has deliverables in outputs/ — whatever the clock did. Intake and `fork` both
    take their ids here."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    home.runs.mkdir(parents=True, exist_ok=True)
    live = store.table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename)
    for counter in range(1, 1000):
        run_id = f"run-{stamp}-{counter:03d}"
        if (home.archive_runs / run_id).exists() or (home.outputs / run_id).exists():
            continue  # an archived run's, or deliverables left by a run whose folder is gone
        if live.get(run_id) is not None:
            continue  # a row without its folder: its id is still taken
        try:
            (home.runs / run_id).mkdir()
        except FileExistsError:
            continue
        if archived_run(store, home, run_id) is not None:
            (home.runs / run_id).rmdir()  # the archived run's row holds the id
            continue
        return run_id
    raise RunStateError(f"more than 999 runs created in the second {stamp}: try again")


def _create_run(
    crew: Collaborators,
    path: Path,
    request: InboxRequest,
    run_id: str,
    mode: Mode,
    why_run: str = "",
) -> str:
    """Every step idempotent: request.md, learning context (with why a question the Executor
    declined is a run), the process_runs row, inbox/done."""
    paths = crew.home.run(run_id)
    paths.root.mkdir(parents=True, exist_ok=True)
    run_created(paths.root)
    if not paths.request.exists():
        atomic_write_text(paths.request, request.body)
    context = None
    if mode is Mode.CONTINUOUS_RUN:
        context = rank_past_runs(request.body, crew.past_runs(but=run_id))
    write_learning_context(paths, context or rank_past_runs("", []), mode, why_run)
    carry_pending(crew.home.pending_usage / request.name, paths.root)
    if crew.process_runs.get(run_id) is None:
        crew.process_runs.insert(ProcessRun(run_id=run_id, user_request=request.body.strip()))
    if path.exists():
        move_to_done(crew.home, path)
    _claim_path(crew, path.name).unlink(missing_ok=True)
    log.info("run_created", run_id=run_id, mode=mode, source=path.name)
    return run_id


def runs_being_taken_in(crew: Collaborators) -> set[str]:
    """The run_ids claimed by an intake that has not finished (its claim file still there)."""
    try:
        claims = list((crew.home.state / "intake").glob("*.json"))
    except OSError:
        return set()
    return {claim["run_id"] for path in claims if (claim := _read_claim(path)) is not None}


def _claim_path(crew: Collaborators, name: str) -> Path:
    return crew.home.state / "intake" / f"{name}.json"


def _read_claim(path: Path) -> dict[str, str] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) and "run_id" in data else None
