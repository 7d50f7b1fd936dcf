"""The `multiverse` command line (SPEC §13): parse, build, call one function, map errors.

Heavy modules are imported inside the commands that need them, so `--help`, `init`, `status`
and the answers to a proposal start fast and never import litellm.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from app.cli_style import EXIT_EPILOG, App, PlainGroup, fail, print_json, wants_json
from multiverse.errors import MultiverseError, StorageError, UserError, storage_advice

app = App(
    name="multiverse",
    help="Turn a request dropped in inbox/ into finished deliverables, every step a markdown file.",
    epilog=EXIT_EPILOG,
    no_args_is_help=True,
    add_completion=True,
    cls=PlainGroup,
    pretty_exceptions_show_locals=False,
)

HomeOption = Annotated[
    str | None,
    typer.Option(
        "--home",
        metavar="DIR",
        help="The home folder (default: $MULTIVERSE_HOME or the current folder).",
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Machine-readable output; errors as {error, code}.")
]


def _fail(error: MultiverseError, as_json: bool = False) -> typer.Exit:
    return fail(error, as_json)


def _ref(home: str | None, run: str, as_json: bool = False) -> str:
    """The run id a short form names (`latest`, a unique prefix or suffix: multiverse.run_refs)."""
    from multiverse.home import resolve_home
    from multiverse.run_refs import resolve_run

    try:
        return resolve_run(resolve_home(home), run)
    except MultiverseError as error:
        raise _fail(error, as_json) from None


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"multiverse {version('multiverse')}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Turn a request dropped in inbox/ into finished deliverables, every step a markdown file."""


@app.command()
def init(
    directory: Annotated[str | None, typer.Argument(help="Folder to make a home.")] = None,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Create the home layout (never overwrites an existing file)."""
    from multiverse.home import init_home, resolve_home

    try:
        target = resolve_home(directory or home)
        created = init_home(target)
    except MultiverseError as error:
        raise _fail(error, as_json) from None
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
        raise _fail(error) from None
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
    timeout: Annotated[
        float, typer.Option("--timeout", metavar="SECONDS", help="How long to wait at most.")
    ] = 300.0,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Drop a request into inbox/ and say what the daemon made of it.

    With no daemon serving the home, the request is queued and a warning says so (exit 0).
    """
    from app.commands import submit_and_follow
    from app.submit_follow import as_data, report

    follow: Literal["no", "taken", "proposal"] = (
        "no" if wait is False else "proposal" if wait else "taken"
    )
    try:
        done = submit_and_follow(home, text, file, follow, timeout)
    except MultiverseError as error:
        raise _fail(error, as_json) from None
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
        str | None, typer.Argument(help="A run id (or `latest`, or a unique part) for its tree.")
    ] = None,
    watch: Annotated[bool, typer.Option("--watch", help="Redraw live until Ctrl-C.")] = False,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Show the runs, or one run's tree with statuses (exit 1 when the run shown FAILED)."""
    from app.status_view import show_status

    run = _ref(home, run, as_json) if run is not None else None
    try:
        shown = show_status(home, run, watch=watch, as_json=as_json)
    except MultiverseError as error:
        raise _fail(error, as_json) from None
    raise typer.Exit(1 if shown == "FAILED" else 0)


def _said(as_json: bool, message: str, **data: object) -> None:
    """What an answer command did: its sentence, or under --json its data and that sentence."""
    if as_json:
        print_json({**data, "message": message})
    else:
        typer.echo(message)


def _relative(home: str | None, path: Path) -> str:
    """A file of the home as the tables name it (`runs/<run_id>/user_response.md`)."""
    from multiverse.home import resolve_home

    return resolve_home(home).relative(path)


def _answer(home: str | None, run: str, kind: str, text: str = "", as_json: bool = False) -> None:
    from app.commands import answer_run

    try:
        path = answer_run(home, run, kind, text)
    except MultiverseError as error:
        raise _fail(error, as_json) from None
    answer, where = kind.lower(), _relative(home, path)
    _said(as_json, f"{answer}: answer written to {path}", run_id=run, answer=answer, path=where)


@app.command()
def confirm(
    run: Annotated[str, typer.Argument()], as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Confirm a run's proposal."""
    run = _ref(home, run, as_json)
    _answer(home, run, "CONFIRM", as_json=as_json)


@app.command()
def modify(
    run: Annotated[str, typer.Argument()],
    text: Annotated[str, typer.Argument(help="What to change in the proposal.")],
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Ask for a revised proposal."""
    run = _ref(home, run, as_json)
    _answer(home, run, "MODIFY", text, as_json)


@app.command()
def cancel(
    run: Annotated[str, typer.Argument()], as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Cancel a run at any time (a confirmed run stops after the step in flight)."""
    run = _ref(home, run, as_json)
    from app.commands import cancel_run

    try:
        path = cancel_run(home, run)
    except MultiverseError as error:
        raise _fail(error, as_json) from None
    message = f"cancel: asked ({path}); the daemon stops {run} after the step in flight"
    _said(as_json, message, run_id=run, answer="cancel", path=_relative(home, path))


@app.command()
def pause(
    run: Annotated[str, typer.Argument()], as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Hold a confirmed run before its next step, until `multiverse resume RUN`."""
    run = _ref(home, run, as_json)
    from app.commands import pause_run

    try:
        path = pause_run(home, run)
    except MultiverseError as error:
        raise _fail(error, as_json) from None
    message = f"pause: asked ({path}); {run} holds before its next step until resumed"
    _said(as_json, message, run_id=run, answer="pause", path=_relative(home, path))


# approve/deny: which waiting action, when a run waits for several.
ApprovalArgument = Annotated[
    str | None, typer.Argument(help="The approval's id, when several wait.")
]


@app.command()
def approve(
    run: Annotated[str, typer.Argument()],
    approval: ApprovalArgument = None,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Allow the action a run waits for (a tool marked requires_approval)."""
    run = _ref(home, run, as_json)
    _approval(home, run, approval, True, as_json)


@app.command()
def deny(
    run: Annotated[str, typer.Argument()],
    approval: ApprovalArgument = None,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Refuse the action a run waits for; the model is told it was refused."""
    run = _ref(home, run, as_json)
    _approval(home, run, approval, False, as_json)


def _approval(
    home: str | None, run: str, approval_id: str | None, approve: bool, as_json: bool = False
) -> None:
    from app.commands import answer_approval

    try:
        answered = answer_approval(home, run, approval_id, approve)
    except MultiverseError as error:
        raise _fail(error, as_json) from None
    word = "approved" if approve else "denied"
    message = f"{word}: {answered.id} ({answered.shown(120)}); the daemon goes on with {run}"
    _said(
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
    run: Annotated[str, typer.Argument()], as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Resume a FAILED run from its failed step, once the cause is fixed."""
    run = _ref(home, run, as_json)
    from app.commands import retry_run

    try:
        path, place = retry_run(home, run)
    except MultiverseError as error:
        raise _fail(error, as_json) from None
    where = f" from {place}" if place else ""
    message = f"retry: asked ({path}); the daemon resumes {run}{where}"
    data = {"run_id": run, "answer": "retry", "path": _relative(home, path), "from": place or None}
    _said(as_json, message, **data)


@app.command()
def resume(
    run: Annotated[str, typer.Argument()], as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Let a run held for a review of its plan go on (daemon.pause_before)."""
    run = _ref(home, run, as_json)
    from app.commands import resume_run

    try:
        path, held = resume_run(home, run)
    except MultiverseError as error:
        raise _fail(error, as_json) from None
    message = f"resume: asked ({path}); {run} goes on with {', '.join(held)}"
    _said(as_json, message, run_id=run, answer="resume", path=_relative(home, path), held=held)


@app.command(name="delete-row")
def delete_row(
    table: Annotated[str, typer.Argument(help="The table, e.g. db/knowledge_base_catalog.md.")],
    key: Annotated[str, typer.Argument(help="The row's key (its first column).")],
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Remove a row on purpose (the daemon restores rows that a save erased by accident)."""
    from app.commands import delete_row as remove

    try:
        path = remove(home, table, key)
    except MultiverseError as error:
        raise _fail(error, as_json) from None
    _said(as_json, f"deleted: {key} from {path}", table=_relative(home, path), key=key)


@app.command()
def show(
    run: Annotated[str, typer.Argument()], as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Show a run's proposal, messages and outputs."""
    from app.commands import show_data, show_run

    run = _ref(home, run, as_json)
    try:
        if as_json:
            print_json(show_data(home, run))
        else:
            typer.echo(show_run(home, run))
    except MultiverseError as error:
        raise _fail(error, as_json) from None


@app.command()
def logs(
    run: Annotated[str | None, typer.Argument(help="A run_id: only that run's lines.")] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new lines until Ctrl-C.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="The raw JSON lines.")] = False,
    home: HomeOption = None,
) -> None:
    """Print the daemon's log, or one run's lines and its child process logs."""
    from app.logs_view import show_logs

    run = _ref(home, run) if run is not None else None
    try:
        show_logs(home, run, follow=follow, as_json=as_json)
    except MultiverseError as error:
        raise _fail(error) from None


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
    from app.commands import run_doctor
    from app.doctor import render_doctor

    try:
        report = run_doctor(home, ping)
    except MultiverseError as error:
        raise _fail(error, as_json) from None
    if as_json:
        data = report.model_dump(mode="json")
        serving = report.daemon is not None and report.daemon.serving
        print_json({**data, "healthy": report.healthy, "serving": serving})
    else:
        typer.echo(render_doctor(report))
    raise typer.Exit(0 if report.healthy else 1)


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
    from app.runs_view import show_runs, statuses_asked
    from app.when import parse_when

    try:
        wanted = statuses_asked(status or [])
        after = parse_when(since) if since is not None else None
        show_runs(home, wanted, after, max(limit, 0), archived, as_json)
    except MultiverseError as error:
        raise _fail(error, as_json) from None


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
    from app.archive_command import archive_runs, render_archive

    if bool(run) == (before is not None):
        error = UserError("give the runs to archive, or --before DATE (e.g. --before 30d)")
        raise _fail(error, as_json)
    refs = [_ref(home, item, as_json) for item in run or []]
    try:
        result = archive_runs(home, refs or None, before, dry_run)
    except MultiverseError as error:
        raise _fail(error, as_json) from None
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        typer.echo(render_archive(result))
    raise typer.Exit(1 if refs and result.refused else 0)


@app.command(name="open")
def open_(
    run: Annotated[str, typer.Argument()],
    folder: Annotated[
        bool, typer.Option("--folder", help="Open the outputs folder, not the report.")
    ] = False,
    print_only: Annotated[
        bool, typer.Option("--print", help="Only print the report's path.")
    ] = False,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Open the run's report (its path is printed where no opener exists)."""
    from app.open_report import open_run

    run = _ref(home, run, as_json)
    try:
        result = open_run(home, run, folder, print_only)
    except MultiverseError as error:
        raise _fail(error, as_json) from None
    if as_json:
        print_json(result)
    elif result["opened"]:
        typer.echo(f"opened {result['path']} ({result['opener']})")
    else:
        typer.echo("no opener here (no desktop session): open the path yourself", err=True)
        typer.echo(result["path"])


def main() -> None:
    """Console entry point."""
    try:
        app()
    except MultiverseError as error:  # anything a command let through
        raise SystemExit(fail(error, wants_json()).exit_code) from None
    except OSError as error:  # the machine's fault (a full disk, a permission): one line
        where = f" {error.filename}" if error.filename else ""
        message = (
            f"cannot complete the command:{where}: {error.strerror or error} "
            f"({storage_advice(error)})"
        )
        if wants_json():
            print_json({"error": message, "code": StorageError.exit_code})
        else:
            typer.echo(f"error: {message}", err=True)
        sys.exit(StorageError.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUTF8", "1")
    main()
