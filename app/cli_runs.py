"""Commands about runs: answer one (confirm, modify, cancel, pause, approve, deny, retry,
resume), fork one, and delete a row on purpose, then list them (`runs`), archive them, open
their report.

Also here: `multiverse archive`; dates on the command line (`runs --since D`, `archive --before
D`).

"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli_app import (
    HomeOption,
    JsonOption,
    RunArgument,
    TimeoutOption,
    app,
    errors_said,
    fail,
    print_json,
    quiet_logging,
    relative,
    run_ref,
    said,
)
from multiverse.errors import UserError

if TYPE_CHECKING:
    from multiverse.runs import ArchiveResult


def _answer(home: str | None, run: str, kind: str, text: str = "", as_json: bool = False) -> None:
    from app.commands import answer_run

    with errors_said(as_json):
        path = answer_run(home, run, kind, text)
    answer, where = kind.lower(), relative(home, path)
    said(as_json, f"{answer}: answer written to {path}", run_id=run, answer=answer, path=where)


@app.command()
def confirm(
    run: RunArgument, as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Confirm a run's proposal."""
    run = run_ref(home, run, as_json)
    _answer(home, run, "CONFIRM", as_json=as_json)


@app.command()
def modify(
    run: RunArgument,
    text: Annotated[str, typer.Argument(help="What to change in the proposal.")],
    wait: Annotated[
        bool | None,
        typer.Option(
            "--wait/--no-wait",
            help="--wait: wait for the revised proposal and print it (the default when a daemon "
            "serves). --no-wait: only write the answer.",
            show_default=False,
        ),
    ] = None,
    timeout: TimeoutOption = 300.0,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Ask for a revised proposal, and print it once the daemon made it."""
    from app.cli_home import NO_DAEMON, follow_answer
    from app.commands import answer_run
    from multiverse.home import probe, require_home, resolve_home
    from multiverse.models import Status

    run = run_ref(home, run, as_json)
    with errors_said(as_json):
        path = answer_run(home, run, "MODIFY", text)
        where = require_home(resolve_home(home))
    serving = probe(where.state).serving
    data: dict[str, object] = {"run_id": run, "answer": "modify", "path": relative(home, path)}
    lines, code = [f"modify: answer written to {path}"], 0
    if not serving and wait is not False:
        typer.echo(NO_DAEMON.replace("the request waits in inbox/", "the answer waits"), err=True)
    if serving and wait is not False:
        revised = follow_answer(where, run, path, timeout)
        found = revised.proposal
        if revised.refused:
            lines.append(f"refused: the reason is in {where.run(run).messages}")
            code = 1
        elif found is None:
            lines.append("warning: no revised proposal in time; `multiverse status` shows where")
            code = 1
        elif found.text is not None:
            lines += [f"proposal: {found.path}", "", found.text.rstrip()]
            data |= {"proposal": found.text, "proposal_path": relative(home, found.path)}
        else:
            lines.append(f"{found.status.value}: see {found.path}")
            code = 1 if found.status is Status.FAILED else 0
        data |= {"refused": revised.refused, "status": found.status.value if found else None}
    said(as_json, "; ".join(lines[:2]) if as_json else "\n".join(lines), **data)
    raise typer.Exit(code)


@app.command()
def cancel(
    run: RunArgument, as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Cancel a run at any time (a confirmed run stops after the step in flight)."""
    run = run_ref(home, run, as_json)
    from app.commands import cancel_run

    with errors_said(as_json):
        path = cancel_run(home, run)
    message = f"cancel: asked ({path}); the daemon stops {run} after the step in flight"
    said(as_json, message, run_id=run, answer="cancel", path=relative(home, path))


@app.command()
def pause(
    run: RunArgument, as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Hold a confirmed run until `multiverse resume RUN` (its step in flight is stopped, redone
    then)."""
    run = run_ref(home, run, as_json)
    from app.commands import pause_run

    with errors_said(as_json):
        path = pause_run(home, run)
    message = (
        f"pause: asked ({path}); {run} holds until resumed (a step in flight is stopped, "
        "and redone then)"
    )
    said(as_json, message, run_id=run, answer="pause", path=relative(home, path))


# approve/deny: which waiting action, when a run waits for several.
ApprovalArgument = Annotated[
    str | None, typer.Argument(help="The approval's id, when several wait.")
]


@app.command()
def approve(
    run: RunArgument,
    approval: ApprovalArgument = None,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Allow the action a run waits for (a tool marked requires_approval)."""
    run = run_ref(home, run, as_json)
    _approval(home, run, approval, True, as_json)


@app.command()
def deny(
    run: RunArgument,
    approval: ApprovalArgument = None,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Refuse the action a run waits for; the model is told it was refused."""
    run = run_ref(home, run, as_json)
    _approval(home, run, approval, False, as_json)


def _approval(
    home: str | None, run: str, approval_id: str | None, approve: bool, as_json: bool = False
) -> None:
    from app.commands import answer_approval

    with errors_said(as_json):
        answered = answer_approval(home, run, approval_id, approve)
    word = "approved" if approve else "denied"
    message = f"{word}: {answered.id} ({answered.shown(120)}); the daemon goes on with {run}"
    said(
        as_json,
        message,
        run_id=run,
        answer="approve" if approve else "deny",
        approval_id=answered.id,
        action=answered.shown(),
        status=answered.status.value,
    )


@app.command()
def retry(
    run: RunArgument, as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Resume a FAILED run from its failed step, once the cause is fixed."""
    run = run_ref(home, run, as_json)
    from app.commands import retry_run

    with errors_said(as_json):
        path, place = retry_run(home, run)
    where = f" from {place}" if place else ""
    message = f"retry: asked ({path}); the daemon resumes {run}{where}"
    data = {"run_id": run, "answer": "retry", "path": relative(home, path), "from": place or None}
    said(as_json, message, **data)


@app.command()
def fork(
    run: RunArgument,
    step: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="STEP",
            help="Redo from this phase (P3), stage (P3-S01) or task (P3-S01-T01, T04); "
            "default T03: all the work after the confirmed instructions.",
        ),
    ] = None,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Make a new run from a final run's confirmed instructions and its work before STEP."""
    run = run_ref(home, run, as_json)
    from multiverse.home import require_home, resolve_home
    from multiverse.store import TableStore
    from orchestrator.forking import fork_run

    with quiet_logging(), errors_said(as_json):
        result = fork_run(require_home(resolve_home(home)), TableStore(), run, step)
    message = (
        f"fork: {result.run_id} made from {run} at {result.step} ({len(result.kept)} rows kept, "
        f"{len(result.redone)} PENDING); the daemon redoes it from {result.step} "
        "(`multiverse start` if none serves this home)"
    )
    said(as_json, message, **result.model_dump(mode="json"))


@app.command()
def resume(
    run: RunArgument, as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Let a run held for a review of its plan go on (daemon.pause_before)."""
    run = run_ref(home, run, as_json)
    from app.commands import resume_run

    with errors_said(as_json):
        path, held = resume_run(home, run)
    message = f"resume: asked ({path}); {run} goes on with {', '.join(held)}"
    said(as_json, message, run_id=run, answer="resume", path=relative(home, path), held=held)


@app.command(name="delete-row")
def delete_row(
    table: Annotated[str, typer.Argument(help="The table, e.g. db/knowledge_base_catalog.md.")],
    key: Annotated[str, typer.Argument(help="The row's key (its first column).")],
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Remove a row on purpose (the daemon restores rows that a save erased by accident)."""
    from app.commands import delete_row as remove

    with errors_said(as_json):
        path = remove(home, table, key)
    said(as_json, f"deleted: {key} from {path}", table=relative(home, path), key=key)


@app.command()
def runs(
    status: Annotated[
        list[str] | None,
        typer.Option(
            "--status",
            "-s",
            metavar="STATUS",
            help="Only runs with this status (PENDING, AWAITING_CONFIRMATION, COMPLETED, FAILED, "
            "CANCELLED, or `open` / `final`); repeat it or give several with commas.",
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", metavar="DATE", help="Only runs created since: 2026-11-20, today, 7d, 12h."
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", metavar="N", help="The newest N runs (0: all).")
    ] = 50,
    archived: Annotated[
        bool, typer.Option("--archived", help="Also list archived runs (marked).")
    ] = False,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """List runs by status and date, newest last (`status` shows them all, with replies)."""
    from app.cli_runs import parse_when
    from app.runs_view import show_runs, statuses_asked

    with errors_said(as_json):
        wanted = statuses_asked(status or [])
        after = parse_when(since) if since is not None else None
        show_runs(home, wanted, after, max(limit, 0), archived, as_json)


@app.command()
def archive(
    run: Annotated[
        list[str] | None, typer.Argument(help="Runs to archive (ids, `latest`, unique parts).")
    ] = None,
    before: Annotated[
        str | None,
        typer.Option(
            "--before",
            metavar="DATE",
            help="Every final run created before: 2026-11-01, 30d, 2w.",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would move; move nothing.")
    ] = False,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Move final runs out of the live tables into db/archive/ and runs/archive/.

    Archived runs stay readable (show, open, logs, status RUN) and the learning context still
    ranks them; their deliverables stay in outputs/. Never a PENDING or waiting run. Exits 1
    when a run named is kept live (the reason is said).
    """
    from app.cli_runs import archive_runs, render_archive

    if bool(run) == (before is not None):
        error = UserError("give the runs to archive, or --before DATE (e.g. --before 30d)")
        raise fail(error, as_json)
    refs = [run_ref(home, item, as_json) for item in run or []]
    with errors_said(as_json):
        result = archive_runs(home, refs or None, before, dry_run)
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        typer.echo(render_archive(result))
    raise typer.Exit(1 if refs and result.refused else 0)


@app.command(name="open")
def open_(
    run: RunArgument,
    folder: Annotated[
        bool, typer.Option("--folder", help="Open the outputs folder, not the report.")
    ] = False,
    print_only: Annotated[
        bool, typer.Option("--print", help="Only print the report's path.")
    ] = False,
    markdown: Annotated[
        bool, typer.Option("--md", help="The markdown report, not its HTML page.")
    ] = False,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Open the run's report: its HTML page with the charts inline (`--md`: the markdown); the
    path is printed where no opener exists."""
    from app.runs_view import open_run

    run = run_ref(home, run, as_json)
    with errors_said(as_json):
        result = open_run(home, run, folder, print_only, markdown)
    if as_json:
        print_json(result)
    elif result["opened"]:
        typer.echo(f"opened {result['path']} ({result['opener']})")
    else:
        typer.echo("no opener here (no desktop session): open the path yourself", err=True)
        typer.echo(result["path"])


_AGE = re.compile(r"(\d+)\s*([mhdw])")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
EXAMPLES = "2026-11-20, 2026-11-20T14:30, today, yesterday, 12h, 7d or 2w"


def parse_when(text: str, now: datetime | None = None) -> datetime:
    """The moment a command-line date names, in UTC; a UserError saying the forms if none."""
    now = now or datetime.now(UTC)
    word = text.strip().lower()
    local_midnight = now.astimezone().replace(hour=0, minute=0, second=0, microsecond=0)
    if word == "today":
        return local_midnight.astimezone(UTC)
    if word == "yesterday":
        return (local_midnight - timedelta(days=1)).astimezone(UTC)
    if match := _AGE.fullmatch(word):
        return now - timedelta(**{_UNITS[match[2]]: int(match[1])})
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UserError(f"{text!r} is not a date: give one like {EXAMPLES}") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # a bare date or time is the user's local time
    return moment.astimezone(UTC)


def archive_runs(
    home_option: str | None, run_ids: list[str] | None, before: str | None, dry_run: bool
) -> ArchiveResult:
    """Archive these runs, or every final run created before a date; what moved and what not."""
    from multiverse.home import require_home, resolve_home
    from multiverse.store import TableStore
    from orchestrator.archiving import Archiver

    home = require_home(resolve_home(home_option))
    moment = parse_when(before) if before is not None else None
    return Archiver(home, TableStore()).archive(run_ids, moment, dry_run)


def render_archive(result: ArchiveResult) -> str:
    """What moved (or would), and each run kept live with its reason."""
    count = len(result.archived)
    verb = "would archive" if result.dry_run else "archived"
    if count:
        lines = [
            f"{verb} {count} run{'s' if count != 1 else ''} into db/archive/ and runs/archive/ "
            "(still readable and ranked by the learning context; outputs stay in outputs/):"
        ]
        lines += [f"  {moved.run_id} → {moved.shard}, {moved.folder}" for moved in result.archived]
    else:
        lines = ["nothing to archive"]
    if result.refused:
        lines.append(f"not archived ({len(result.refused)}):")
        lines += [f"  {kept.run_id} {kept.status}: {kept.reason}" for kept in result.refused]
    return "\n".join(lines)
