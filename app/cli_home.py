"""Commands that serve a home and show it: init, start, submit, status, show, logs, doctor.

Also here: after `submit`: wait until the daemon took the request, and (with `--wait`) for the
proposal.

The daemon keeps no record of which inbox file became which run for long (its intake claim is
removed once the run exists), so the request is followed by its content: once the file left
inbox/, a new file in inbox/done/ (or inbox/rejected/) holds the same bytes; a reply beside it
means it was answered at once, else the new run whose `request.md` is its text is the one.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from app.cli_app import (
    HomeOption,
    JsonOption,
    RunArgument,
    TimeoutOption,
    app,
    complete_run,
    errors_said,
    fail,
    print_json,
    quiet_logging,
    run_ref,
)
from multiverse.errors import MultiverseError

if TYPE_CHECKING:
    from multiverse.home import Home
    from multiverse.models import Status


@app.command()
def init(
    directory: Annotated[str | None, typer.Argument(help="Folder to make a home.")] = None,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Create the home layout (never overwrites an existing file)."""
    from multiverse.home import init_home, resolve_home

    with errors_said(as_json):
        target = resolve_home(directory or home)
        created = init_home(target)
    if as_json:
        paths = [path.relative_to(target.root).as_posix() for path in created]
        print_json({"home": str(target.root), "created": paths})
        return
    typer.echo(f"home ready: {target.root} ({len(created)} new)")
    for path in created:
        typer.echo(f"  + {path.relative_to(target.root)}")


@app.command()
def start(
    once: Annotated[
        bool, typer.Option("--once", help="Work until nothing can advance, then exit.")
    ] = False,
    home: HomeOption = None,
) -> None:
    """Run the daemon in the foreground (Ctrl-C stops it after the step in flight)."""
    from app.commands import run_daemon

    try:
        code = run_daemon(home, once)
    except MultiverseError as error:
        raise fail(error) from None
    raise typer.Exit(code)


@app.command()
def submit(
    text: Annotated[str | None, typer.Argument(help="The request text.")] = None,
    file: Annotated[
        Path | None,
        typer.Option("--file", "-f", metavar="FILE", help="A request file to copy."),
    ] = None,
    wait: Annotated[
        bool | None,
        typer.Option(
            "--wait/--no-wait",
            help="--wait: also wait for the proposal and print it. --no-wait: print the inbox "
            "file and return at once. Neither: wait until the daemon took the request and "
            "print its run id.",
            show_default=False,
        ),
    ] = None,
    timeout: TimeoutOption = 300.0,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Drop a request into inbox/ and say what the daemon made of it.

    With no daemon serving the home, the request is queued and a warning says so (exit 0).
    """
    from app.cli_home import as_data, report
    from app.commands import submit_and_follow

    follow: Literal["no", "taken", "proposal"] = (
        "no" if wait is False else "proposal" if wait else "taken"
    )
    with errors_said(as_json):
        done = submit_and_follow(home, text, file, follow, timeout)
    lines, warning, code = report(done)
    if warning:
        typer.echo(warning, err=True)
    if as_json:
        print_json(as_data(done))
    else:
        typer.echo("\n".join(lines))
    raise typer.Exit(code)


@app.command()
def status(
    run: Annotated[
        str | None,
        typer.Argument(
            help="A run id (or `latest`, or a unique part) for its tree.",
            autocompletion=complete_run,
        ),
    ] = None,
    watch: Annotated[bool, typer.Option("--watch", help="Redraw live until Ctrl-C.")] = False,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Show the runs, or one run's tree with statuses (exit 1 when the run shown FAILED)."""
    from app.status_view import show_status

    run = run_ref(home, run, as_json) if run is not None else None
    with errors_said(as_json):
        shown = show_status(home, run, watch=watch, as_json=as_json)
    raise typer.Exit(1 if shown == "FAILED" else 0)


@app.command()
def show(
    run: RunArgument, as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Show a run's proposal, messages and outputs."""
    from app.commands import show_data, show_run

    run = run_ref(home, run, as_json)
    with errors_said(as_json):
        if as_json:
            print_json(show_data(home, run))
        else:
            typer.echo(show_run(home, run))


@app.command()
def logs(
    run: Annotated[
        str | None,
        typer.Argument(help="A run_id: only that run's lines.", autocompletion=complete_run),
    ] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new lines until Ctrl-C.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="The raw JSON lines.")] = False,
    home: HomeOption = None,
) -> None:
    """Print the daemon's log, or one run's lines and its child process logs."""
    from app.runs_view import show_logs

    run = run_ref(home, run) if run is not None else None
    try:
        show_logs(home, run, follow=follow, as_json=as_json)
    except MultiverseError as error:
        raise fail(error) from None


@app.command()
def doctor(
    ping: Annotated[
        bool, typer.Option("--ping", help="Send a one-token call to each model.")
    ] = False,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Check the home, whether a daemon serves it, the mapping, and what serves each tier.

    Exits 1 when a check fails; a home no daemon serves is said, not a failure.
    """
    import logging

    from app.commands import run_doctor
    from app.doctor import render_doctor

    # The events of what doctor opens (MCP servers) are said by the report itself.
    with quiet_logging(logging.ERROR), errors_said(as_json):
        report = run_doctor(home, ping)
    if as_json:
        data = report.model_dump(mode="json")
        serving = report.daemon is not None and report.daemon.serving
        print_json({**data, "healthy": report.healthy, "serving": serving})
    else:
        typer.echo(render_doctor(report))
    raise typer.Exit(0 if report.healthy else 1)


POLL_SECONDS = 0.1


@dataclass(frozen=True, kw_only=True)
class Before:
    """What the home held before the request was dropped (to tell the new from the old)."""

    runs: frozenset[str]
    done: frozenset[str]
    rejected: frozenset[str]


@dataclass(frozen=True, kw_only=True)
class Taken:
    """What became of a request: a run, an immediate reply, or a rejection."""

    kind: Literal["run", "reply", "rejected"]
    path: Path  # the run's folder, the reply file, or the rejected file
    run_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class Proposal:
    """A run's state once it waits for the user (its proposal) or ended first."""

    status: Status
    path: Path
    text: str | None = None


def _names(folder: Path) -> frozenset[str]:
    try:
        return frozenset(entry.name for entry in folder.iterdir())
    except OSError:
        return frozenset()


def snapshot(home: Home) -> Before:
    """The runs and handled requests there are now."""
    return Before(
        runs=_names(home.runs), done=_names(home.inbox_done), rejected=_names(home.inbox_rejected)
    )


def find_taken(home: Home, submitted: Path, data: bytes, before: Before) -> Taken | None:
    """One look: what the daemon made of the request `submitted` holding `data`, if anything."""
    from orchestrator.inbox import parse_request, reply_path

    if submitted.exists():
        return None
    rejected = _new_with(home.inbox_rejected, before.rejected, data)
    if rejected is not None:
        return Taken(kind="rejected", path=rejected)
    kept = _new_with(home.inbox_done, before.done, data)
    if kept is None:
        return None
    reply = reply_path(home, kept.name)
    if reply.exists():
        return Taken(kind="reply", path=reply)
    body = parse_request(submitted.name, data).body
    for run_id in sorted(_names(home.runs) - before.runs):
        try:
            if home.run(run_id).request.read_text(encoding="utf-8") == body:
                return Taken(kind="run", path=home.run(run_id).root, run_id=run_id)
        except OSError:
            continue
    return None


def _new_with(folder: Path, before: frozenset[str], data: bytes) -> Path | None:
    for name in sorted(_names(folder) - before):
        path = folder / name
        try:
            if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
                return path
        except OSError:
            continue
    return None


def wait_taken(
    home: Home, submitted: Path, data: bytes, before: Before, deadline: float
) -> Taken | None:
    """Look until the request is taken or the monotonic `deadline` passes (then None)."""
    while True:
        taken = find_taken(home, submitted, data, before)
        if taken is not None or time.monotonic() >= deadline:
            return taken
        time.sleep(POLL_SECONDS)


def proposal_of(home: Home, run_id: str) -> Proposal | None:
    """The run's proposal once it waits for the user, or its status once it ended; else None."""
    from multiverse.models import FINAL_STATUSES, Status
    from multiverse.store import PROCESS_RUNS, TableStore

    try:
        row = TableStore().table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).get(run_id)
    except MultiverseError:
        return None  # a table being saved: looked at again
    paths = home.run(run_id)
    if row is None:
        return None
    if row.status is Status.AWAITING_CONFIRMATION and paths.feedback.exists():
        text = paths.feedback.read_text(encoding="utf-8")
        return Proposal(status=row.status, path=paths.feedback, text=text)
    if row.status in FINAL_STATUSES:
        return Proposal(status=row.status, path=paths.messages)
    return None


def wait_proposal(home: Home, run_id: str, deadline: float) -> Proposal | None:
    """Look until the run's proposal is there (or the run ended), or the deadline passes."""
    while True:
        found = proposal_of(home, run_id)
        if found is not None or time.monotonic() >= deadline:
            return found
        time.sleep(POLL_SECONDS)


@dataclass(frozen=True, kw_only=True)
class Revised:
    """What became of a MODIFY: refused, or the revised proposal (or the end the run came to)."""

    refused: bool = False
    proposal: Proposal | None = None  # None: not in time


def _handled_as(home: Home, run_id: str, inode: int) -> str | None:
    """The label an answer (known by its inode) was put aside with once handled ("modify",
    "refused", …), or None while it waits: answers keep their inode from the queue to
    user_response.md to responses/."""
    folder = home.run(run_id).responses
    try:
        names = sorted(os.listdir(folder), reverse=True)
    except FileNotFoundError:
        return None
    for name in names:
        try:
            if (folder / name).stat().st_ino == inode:
                return name[4:].removesuffix(".md")
        except FileNotFoundError:
            continue
    return None


def _inode(path: Path) -> int:
    """The file's inode (0 when it is gone)."""
    try:
        return path.stat().st_ino
    except FileNotFoundError:
        return 0


def follow_answer(home: Home, run_id: str, answer: Path, timeout: float) -> Revised:
    """Wait (at most `timeout` seconds) until the daemon handled a MODIFY, then for the revised
    proposal (or the end the run came to meanwhile)."""
    deadline = time.monotonic() + timeout
    inode = _inode(answer) or _inode(home.run(run_id).user_response)  # taken at once: moved
    if not inode:  # handled already, both names gone: the proposal is what is left to wait for
        return Revised(proposal=wait_proposal(home, run_id, deadline))
    while (label := _handled_as(home, run_id, inode)) is None:
        if time.monotonic() >= deadline:
            return Revised()
        time.sleep(POLL_SECONDS)
    if label == "refused":
        return Revised(refused=True)
    return Revised(proposal=wait_proposal(home, run_id, deadline))


@dataclass(frozen=True, kw_only=True)
class Submitted:
    """What `submit` did: the inbox file, whether a daemon serves, and what it made of it."""

    inbox: Path
    serving: bool
    taken: Taken | None = None
    proposal: Proposal | None = None
    timed_out: bool = False
    followed: bool = True  # False for `--no-wait`: nothing was waited for
    why_run: str = ""  # why a question became a run (the run's spec, else its intake record)


def follow(
    home: Home, submitted: Path, data: bytes, before: Before, *, proposal: bool, timeout: float
) -> Submitted:
    """Wait (at most `timeout` seconds) until the request is taken, then for its proposal."""
    deadline = time.monotonic() + timeout
    taken = wait_taken(home, submitted, data, before, deadline)
    if taken is None:
        return Submitted(inbox=submitted, serving=True, timed_out=True)
    found = None
    if proposal and taken.run_id is not None:
        found = wait_proposal(home, taken.run_id, deadline)
        if found is None:
            return Submitted(inbox=submitted, serving=True, taken=taken, timed_out=True,
                             why_run=why_run_of(home, taken.run_id))  # fmt: skip
    why = why_run_of(home, taken.run_id) if taken.run_id is not None else ""
    return Submitted(inbox=submitted, serving=True, taken=taken, proposal=found, why_run=why)


def why_run_of(home: Home, run_id: str) -> str:
    """Why a request that asked questions became a run: the run's spec says it once written,
    the intake's record (the Executor's decline) before; "" when it is no such request."""
    from orchestrator.learning import read_why_run

    paths = home.run(run_id)
    try:
        data = json.loads(paths.spec.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    said = data.get("why_run") if isinstance(data, dict) else None
    if isinstance(said, str) and said.strip():
        return " ".join(said.split())
    return read_why_run(paths)


NO_DAEMON = (
    "warning: no daemon serves this home: start one with `multiverse start` (or `make start`); "
    "the request waits in inbox/ until then"
)


def report(done: Submitted) -> tuple[list[str], str | None, int]:
    """What `submit` prints: stdout lines, a warning for stderr, and the exit code."""
    lines = [f"submitted: {done.inbox}"]
    if not done.serving:
        return lines, NO_DAEMON, 0
    if not done.followed:
        return lines, None, 0
    taken, proposal = done.taken, done.proposal
    if taken is None:
        return lines, "warning: the daemon did not take the request in time; it stays queued", 1
    if taken.kind == "rejected":
        return [*lines, f"rejected: {taken.path} (the reason is beside it)"], None, 1
    if taken.kind == "reply":  # the answer where the user looks, as `llm` prints it
        return [*lines, f"answered: {taken.path}", "", _reply_text(taken.path)], None, 0
    lines.append(f"run: {taken.run_id}")
    if done.why_run:
        lines.append(f"why a run: {done.why_run}")
    if done.timed_out:
        return lines, "warning: no proposal in time; `multiverse status` shows where it is", 1
    if proposal is not None and proposal.text is not None:
        return [*lines, f"proposal: {proposal.path}", "", proposal.text.rstrip()], None, 0
    if proposal is not None:
        from multiverse.models import Status

        lines.append(f"{proposal.status.value}: see {proposal.path}")
        return lines, None, 1 if proposal.status is Status.FAILED else 0
    return lines, None, 0


def _reply_text(path: Path) -> str:
    """A reply file's text (empty if it went meanwhile)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").rstrip()
    except OSError:
        return ""


def as_data(done: Submitted) -> dict[str, object]:
    """`submit --json`: the same facts as one JSON object."""
    taken, proposal = done.taken, done.proposal
    answered = taken is not None and taken.kind == "reply"
    return {
        "answer": _reply_text(taken.path) if answered and taken is not None else None,
        "inbox": str(done.inbox),
        "daemon": "serving" if done.serving else "not running",
        "taken": taken.kind if taken else None,
        "run_id": taken.run_id if taken else None,
        "path": str(taken.path) if taken else None,
        "status": proposal.status.value if proposal else None,
        "proposal": proposal.text if proposal else None,
        "timed_out": done.timed_out,
        "why_run": done.why_run or None,
    }
