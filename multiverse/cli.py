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

from multiverse.cli_style import EXIT_EPILOG, App, PlainGroup, fail, print_json, wants_json
from multiverse.errors import MultiverseError, StorageError, storage_advice

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
    home: HomeOption = None,
) -> None:
    """Create the home layout (never overwrites an existing file)."""
    from multiverse.home import init_home, resolve_home

    try:
        target = resolve_home(directory or home)
        created = init_home(target)
    except MultiverseError as error:
        raise _fail(error) from None
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
    from multiverse.commands import run_daemon

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
    from multiverse.commands import submit_and_follow
    from multiverse.submit_follow import as_data, report

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
    from multiverse.commands import run_failed
    from multiverse.status_view import show_status

    run = _ref(home, run, as_json) if run is not None else None
    try:
        show_status(home, run, watch=watch, as_json=as_json)
    except MultiverseError as error:
        raise _fail(error, as_json) from None
    raise typer.Exit(1 if run is not None and run_failed(home, run) else 0)


def _answer(home: str | None, run: str, kind: str, text: str = "") -> None:
    from multiverse.commands import answer_run

    try:
        path = answer_run(home, run, kind, text)
    except MultiverseError as error:
        raise _fail(error) from None
    typer.echo(f"{kind.lower()}: answer written to {path}")


@app.command()
def confirm(run: Annotated[str, typer.Argument()], home: HomeOption = None) -> None:
    """Confirm a run's proposal."""
    run = _ref(home, run)
    _answer(home, run, "CONFIRM")


@app.command()
def modify(
    run: Annotated[str, typer.Argument()],
    text: Annotated[str, typer.Argument(help="What to change in the proposal.")],
    home: HomeOption = None,
) -> None:
    """Ask for a revised proposal."""
    run = _ref(home, run)
    _answer(home, run, "MODIFY", text)


@app.command()
def cancel(run: Annotated[str, typer.Argument()], home: HomeOption = None) -> None:
    """Cancel a run at any time (a confirmed run stops after the step in flight)."""
    run = _ref(home, run)
    from multiverse.commands import cancel_run

    try:
        path = cancel_run(home, run)
    except MultiverseError as error:
        raise _fail(error) from None
    typer.echo(f"cancel: asked ({path}); the daemon stops {run} after the step in flight")


@app.command()
def pause(run: Annotated[str, typer.Argument()], home: HomeOption = None) -> None:
    """Hold a confirmed run before its next step, until `multiverse resume RUN`."""
    run = _ref(home, run)
    from multiverse.commands import pause_run

    try:
        path = pause_run(home, run)
    except MultiverseError as error:
        raise _fail(error) from None
    typer.echo(f"pause: asked ({path}); {run} holds before its next step until resumed")


# approve/deny: which waiting action, when a run waits for several.
ApprovalArgument = Annotated[
    str | None, typer.Argument(help="The approval's id, when several wait.")
]


@app.command()
def approve(
    run: Annotated[str, typer.Argument()],
    approval: ApprovalArgument = None,
    home: HomeOption = None,
) -> None:
    """Allow the action a run waits for (a tool marked requires_approval)."""
    run = _ref(home, run)
    _approval(home, run, approval, True)


@app.command()
def deny(
    run: Annotated[str, typer.Argument()],
    approval: ApprovalArgument = None,
    home: HomeOption = None,
) -> None:
    """Refuse the action a run waits for; the model is told it was refused."""
    run = _ref(home, run)
    _approval(home, run, approval, False)


def _approval(home: str | None, run: str, approval_id: str | None, approve: bool) -> None:
    from multiverse.commands import answer_approval

    try:
        answered = answer_approval(home, run, approval_id, approve)
    except MultiverseError as error:
        raise _fail(error) from None
    word = "approved" if approve else "denied"
    typer.echo(f"{word}: {answered.id} ({answered.shown(120)}); the daemon goes on with {run}")


@app.command()
def retry(run: Annotated[str, typer.Argument()], home: HomeOption = None) -> None:
    """Resume a FAILED run from its failed step, once the cause is fixed."""
    run = _ref(home, run)
    from multiverse.commands import retry_run

    try:
        path, place = retry_run(home, run)
    except MultiverseError as error:
        raise _fail(error) from None
    where = f" from {place}" if place else ""
    typer.echo(f"retry: asked ({path}); the daemon resumes {run}{where}")


@app.command()
def resume(run: Annotated[str, typer.Argument()], home: HomeOption = None) -> None:
    """Let a run held for a review of its plan go on (daemon.pause_before)."""
    run = _ref(home, run)
    from multiverse.commands import resume_run

    try:
        path, held = resume_run(home, run)
    except MultiverseError as error:
        raise _fail(error) from None
    typer.echo(f"resume: asked ({path}); {run} goes on with {', '.join(held)}")


@app.command(name="delete-row")
def delete_row(
    table: Annotated[str, typer.Argument(help="The table, e.g. db/knowledge_base_catalog.md.")],
    key: Annotated[str, typer.Argument(help="The row's key (its first column).")],
    home: HomeOption = None,
) -> None:
    """Remove a row on purpose (the daemon restores rows that a save erased by accident)."""
    from multiverse.commands import delete_row as remove

    try:
        path = remove(home, table, key)
    except MultiverseError as error:
        raise _fail(error) from None
    typer.echo(f"deleted: {key} from {path}")


@app.command()
def show(
    run: Annotated[str, typer.Argument()], as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Show a run's proposal, messages and outputs."""
    from multiverse.commands import show_data, show_run

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
    from multiverse.logs_view import show_logs

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
    from multiverse.commands import run_doctor
    from multiverse.doctor import render_doctor

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
