"""What the CLI commands do, as plain functions (the CLI only parses and maps errors)."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from app.cli_home import Submitted
from multiverse.atomic import create_exclusive
from multiverse.errors import (
    MultiverseError,
    RunStateError,
    UnknownRun,
    UserError,
)
from multiverse.home import Home, RunPaths, require_home, resolve_home, visible_files
from multiverse.models import RUN_ID, Status
from multiverse.roles import Approval
from multiverse.runs import ApprovalBook, archived_run, record_answer, run_paths
from multiverse.store import PROCESS_RUNS, TableStore

if TYPE_CHECKING:
    from app.doctor import DoctorReport
    from multiverse.config import RuntimeMapping
    from orchestrator.crew import Collaborators
    from orchestrator.decide import Acceptance, DecisionKind


def run_daemon(home_option: str | None, once: bool) -> int:
    """Start the daemon on this home; returns the exit status."""
    from app.team import Reloader, build_collaborators
    from multiverse.config import load_runtime_mapping
    from multiverse.logs import close_logging, configure_logging
    from orchestrator.daemon import Daemon

    home = require_home(resolve_home(home_option))
    configure_logging(home.state / "logs" / "daemon.jsonl")
    try:
        mapping = load_runtime_mapping(home.root)
        crew = build_collaborators(home, mapping, os.environ)
        daemon = Daemon(crew, mapping.daemon, Reloader(home, os.environ))
        daemon.install_signal_handlers()

        def serving() -> None:
            print(
                f"multiverse is serving {home.root} ({_engine_line(mapping)}): drop a request "
                "into inbox/ (Ctrl-C stops)",
                flush=True,
            )

        code = daemon.run(once=once, serving=None if once else serving)
        if not once:
            print(stopped_line(daemon.steps_finished, _waiting_runs(crew)), flush=True)
        return code
    finally:
        close_logging()  # the log file is closed when the command is done


def stopped_line(steps: int, waiting: int) -> str:
    """What the daemon says as it stops: what it finished, and what waits for the user."""
    done = f"{steps} step{'s' if steps != 1 else ''} finished since start"
    if waiting:
        runs = "1 run waits" if waiting == 1 else f"{waiting} runs wait"
        done += f", {runs} for you (`multiverse status`)"
    return f"stopped: {done}; nothing is lost, `multiverse start` goes on from here"


def _waiting_runs(crew: Collaborators) -> int:
    """How many runs wait for the user's answer (0 when the table cannot be read)."""
    try:
        rows = crew.process_runs.rows()
    except MultiverseError:
        return 0
    return sum(row.status is Status.AWAITING_CONFIRMATION for row in rows)


def _engine_line(mapping: RuntimeMapping) -> str:
    """Which engine serves each tier, in a few words (no key values, ever)."""
    from multiverse.config import effective_tiers

    effective = effective_tiers(mapping, os.environ)
    if all(item.mode == "builtin" for item in effective.values()):
        if any(item.degraded for item in effective.values()):
            return "builtin offline engine: the configured models have no key, see the warning"
        return "builtin offline engine: no model configured"
    return "; ".join(
        f"{tier}: {item.model if item.mode != 'builtin' else 'builtin'}"
        for tier, item in effective.items()
    )


def _slug(text: str) -> str:
    words = re.findall(r"\w+", text.lower())[:6]
    return "-".join(words)[:48] or "request"


def submit_and_follow(
    home_option: str | None,
    text: str | None,
    file: Path | None,
    wait: Literal["no", "taken", "proposal"],
    timeout: float,
) -> Submitted:
    """Drop a request, then (when a daemon serves) wait until it is taken, or for its proposal."""
    from app.cli_home import follow, snapshot
    from multiverse.home import probe

    home = require_home(resolve_home(home_option))
    before = snapshot(home)
    path, data = drop_request(home, text, file)
    serving = probe(home.state).serving
    if wait == "no" or not serving:
        return Submitted(inbox=path, serving=serving, followed=False)
    return follow(home, path, data, before, proposal=wait == "proposal", timeout=timeout)


def drop_request(home: Home, text: str | None, file: Path | None) -> tuple[Path, bytes]:
    """Create a new request file in inbox/; returns its path and content (never replaces)."""
    from orchestrator.inbox_survey import is_ignorable_name

    if text is not None and file is not None:
        raise UserError("give the request either as TEXT or with --file, not both")
    if text is None and file is None:
        raise UserError(
            'say what you want: multiverse submit "TEXT", or multiverse submit --file FILE'
        )
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    if file is not None:
        try:
            data = file.read_bytes()
        except OSError as error:
            raise UserError(f"cannot read {file}: {error.strerror}") from error
        name = file.name if file.suffix in (".md", ".txt") else f"{file.stem}.md"
        if is_ignorable_name(name):  # a hidden or temp-like name the daemon would never take
            name = f"{stamp}-{_slug(file.stem)}.md"
    else:
        assert text is not None
        if not text.strip():
            raise UserError("the request is empty")
        data = text.encode("utf-8")
        name = f"{stamp}-{_slug(text)}.md"
    return create_exclusive(home.inbox, name, data), data


def _known_run(home: Home, run_id: str) -> Status:
    """The status of a live run; an archived run is read-only, an unknown one UnknownRun."""
    if not re.fullmatch(RUN_ID, run_id):
        raise UnknownRun(run_id)
    store = TableStore()
    row = store.table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).get(run_id)
    if row is None and archived_run(store, home, run_id) is not None:
        raise RunStateError(
            f"run {run_id} is archived (runs/archive/{run_id}): it can be read "
            f"(`multiverse show {run_id}`, `multiverse open {run_id}`), not changed"
        )
    if row is None:
        raise UnknownRun(run_id)
    return row.status


def _any_run(home: Home, run_id: str) -> tuple[Status, RunPaths]:
    """The status and paths of a run, live or archived (for the commands that only read)."""
    try:
        return _known_run(home, run_id), home.run(run_id)
    except RunStateError:
        row = archived_run(TableStore(), home, run_id)
        assert row is not None
        return row.status, run_paths(home, run_id)


def _answerable(home: Home, run_id: str, kind: DecisionKind) -> RunPaths:
    """The run's paths, once it is known to take this answer now (`orchestrator.decide`).

    A run that refuses it raises the error its command says: NotHeld for RESUME, NotNow for
    CANCEL and PAUSE, RunStateError otherwise; each says why, in the words the daemon uses.
    """
    from orchestrator.decide import DecisionKind

    taken = acceptance(home, run_id)
    if not taken.takes(kind):
        error = {DecisionKind.RESUME: NotHeld, DecisionKind.CANCEL: NotNow,
                 DecisionKind.PAUSE: NotNow}.get(kind, RunStateError)  # fmt: skip
        raise error(taken.why_not(kind))
    return home.run(run_id)


def acceptance(home: Home, run_id: str) -> Acceptance:
    """Which answers a live run takes now, and why it refuses the others."""
    from orchestrator.decide import accepts
    from orchestrator.evidence import RunTables, load_run_view

    _known_run(home, run_id)
    store = TableStore()
    row = store.table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).get(run_id)
    if row is None:  # deleted between the two reads
        raise UnknownRun(run_id)
    return accepts(load_run_view(RunTables.of(home.run(run_id), store), row))


def answer_run(home_option: str | None, run_id: str, kind: str, text: str = "") -> Path:
    """Write the user's decision into runs/<run_id>/user_response.md."""
    from orchestrator.decide import DecisionKind, render_decision
    from orchestrator.evidence import give_answer

    home = require_home(resolve_home(home_option))
    paths = _answerable(home, run_id, DecisionKind(kind))
    if kind == "MODIFY" and not text.strip():
        raise UserError('say what to change: multiverse modify RUN "…"')
    return give_answer(paths, render_decision(DecisionKind(kind), text.strip()))


class NotHeld(RunStateError):
    """`resume` of a run that does not hold: nothing to do (exit 1, as a state, not a typo)."""


def resume_run(home_option: str | None, run_id: str) -> tuple[Path, list[str]]:
    """Let a held run go on: RESUME into its user_response.md; returns it and what was held.

    Refused, saying so, unless the run holds (its plan waits for a person's review).
    """
    from orchestrator.decide import DecisionKind, describe, render_decision
    from orchestrator.evidence import SignalBox, give_answer, open_holds

    home = require_home(resolve_home(home_option))
    paths = _answerable(home, run_id, DecisionKind.RESUME)
    holds = open_holds(SignalBox(paths.signals))
    answer = give_answer(paths, render_decision(DecisionKind.RESUME))
    return answer, [describe(record.reason) for record in holds]


# -- cancel and pause at any time (SPEC §13) ----------------------------------------------


class NotNow(RunStateError):
    """`cancel`/`pause` of a run that is final, or already waits for the user (exit 1)."""


def cancel_run(home_option: str | None, run_id: str) -> Path:
    """Ask the daemon to cancel a run, at any time: CANCEL into its user_response.md.

    The daemon stops it after the step in flight (stopping a process child at once); a
    daemon that is not running takes it at its start. Refused for a final run.
    """
    from orchestrator.decide import DecisionKind, render_decision
    from orchestrator.evidence import give_answer

    home = require_home(resolve_home(home_option))
    paths = _answerable(home, run_id, DecisionKind.CANCEL)
    return give_answer(paths, render_decision(DecisionKind.CANCEL))


def pause_run(home_option: str | None, run_id: str) -> Path:
    """Ask the daemon to hold a confirmed run before its next step: PAUSE into user_response.md.

    Refused, saying why, for a run that is final, waits for the user already (its proposal,
    a hold, an approval), has not been confirmed yet, or is being cancelled.
    """
    from orchestrator.decide import DecisionKind, render_decision
    from orchestrator.evidence import give_answer

    home = require_home(resolve_home(home_option))
    paths = _answerable(home, run_id, DecisionKind.PAUSE)
    return give_answer(paths, render_decision(DecisionKind.PAUSE))


def answer_approval(
    home_option: str | None, run_id: str, approval_id: str | None, approve: bool
) -> Approval:
    """Approve or deny the action a run waits for (the only one, or `approval_id`)."""
    home = require_home(resolve_home(home_option))
    _known_run(home, run_id)
    root = home.run(run_id).root
    answered = ApprovalBook(root).answer(approval_id, approve, "cli")
    record_answer(root, answered)
    return answered


def retry_run(home_option: str | None, run_id: str) -> tuple[Path, str]:
    """Ask the daemon to resume a FAILED run from its failed step (SPEC §8).

    Refused, with the reason, unless the run FAILED and the cause is gone (a table that is
    still broken, a disk still full, a budget still spent). Returns the answer file and where
    the run failed.
    """
    from orchestrator.decide import DecisionKind, FailureRecord, render_decision
    from orchestrator.evidence import HELD, SignalBox, archive_response, give_answer, read_response
    from orchestrator.perform import retry_blockers

    home = require_home(resolve_home(home_option))
    _answerable(home, run_id, DecisionKind.RETRY)
    problems = retry_blockers(home, TableStore(), run_id)
    if problems:
        raise RunStateError(
            f"cannot retry run {run_id} yet, the cause is still there: " + "; ".join(problems)
        )
    failure = SignalBox(home.run(run_id).signals).read("failure", FailureRecord)
    place = " › ".join(
        value
        for value in (
            (failure.phase_id, failure.stage_id, failure.task_id, failure.tool_task_id)
            if failure
            else ()
        )
        if value
    )
    paths = home.run(run_id)
    pending = read_response(paths.user_response)
    if pending is not None and pending.kind is not DecisionKind.RETRY:
        # An answer the run had not handled when it failed: kept, and given back on reopening.
        archive_response(paths, HELD)
    return give_answer(paths, render_decision(DecisionKind.RETRY)), place


def delete_row(home_option: str | None, table: str, key: str) -> Path:
    """Remove one row of a table on purpose, so that the daemon does not put it back.

    A row the daemon wrote that disappears from a table is restored from the daemon's record
    (an editor holding an older copy erases rows without meaning to); one deleted here is not.
    """
    from multiverse.store import GLOBAL_TABLES, RUN_TABLES, add_tombstone

    home = require_home(resolve_home(home_option))
    path = Path(os.path.realpath(home.root / table))
    try:
        parts = path.relative_to(home.root).parts
    except ValueError:
        raise UserError(f"{table} is not inside the home {home.root}") from None
    specs = {spec.filename: spec for spec in GLOBAL_TABLES}
    run_specs = {spec.filename: spec for spec in RUN_TABLES}
    if len(parts) == 2 and parts[0] == "db" and parts[1] in specs:
        spec = specs[parts[1]]
    elif len(parts) == 4 and parts[0] == "runs" and parts[2] == "db" and parts[3] in run_specs:
        spec = run_specs[parts[3]]
    else:
        names = ", ".join(f"db/{name}" for name in specs)
        raise UserError(f"{table} is not a table: give db/… ({names}) or runs/<run_id>/db/…")
    rows = TableStore().table(spec, path)
    if rows.get(key) is None:
        raise UserError(f"{home.relative(path)} has no row {key!r}")
    add_tombstone(home.deleted_rows, path, key)
    rows.delete(key)
    return path


def show_data(home_option: str | None, run_id: str) -> dict[str, object]:
    """A run's status, proposal, messages (None when not written yet) and output files."""
    home = require_home(resolve_home(home_option))
    status, paths = _any_run(home, run_id)
    data: dict[str, object] = {"run_id": run_id, "status": status.value}
    for key, path in (("proposal", paths.feedback), ("messages", paths.messages)):
        try:
            data[key] = {"path": home.relative(path), "text": path.read_text(encoding="utf-8")}
        except FileNotFoundError:
            data[key] = None
    data["outputs"] = [home.relative(p) for p in visible_files(paths.outputs)]
    return data


def show_run(home_option: str | None, run_id: str) -> str:
    """A run's proposal, messages and outputs as one text."""
    data = show_data(home_option, run_id)
    parts = [f"# {run_id} ({data['status']})"]
    for label, key in (("Proposal", "proposal"), ("Messages", "messages")):
        part = data[key]
        if isinstance(part, dict):
            parts.append(f"\n## {label} ({part['path']})\n\n{part['text']}")
        else:
            parts.append(f"\n## {label}\n\n(none yet)")
    outputs = data["outputs"]
    assert isinstance(outputs, list)
    parts.append("\n## Outputs\n\n" + ("\n".join(f"- {p}" for p in outputs) or "(none yet)"))
    return "\n".join(parts)


def run_doctor(home_option: str | None, ping: bool) -> DoctorReport:
    """The doctor's report (`render_doctor` makes it text)."""
    from app.doctor import diagnose

    home = resolve_home(home_option)
    pinger = None
    if ping:
        from multiverse.gateway import ping_model

        pinger = ping_model
    return diagnose(home.root, os.environ, pinger)
