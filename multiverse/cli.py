"""The `multiverse` command line (SPEC §13): parse, build, call one function, map errors.

Heavy modules are imported inside the commands that need them, so `--help`, `init`, `status`
and the answers to a proposal start fast and never import litellm.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from multiverse.errors import MultiverseError, StorageError, storage_advice

app = typer.Typer(
    name="multiverse",
    help="Turn a request dropped in inbox/ into finished deliverables, every step a markdown file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

HomeOption = Annotated[
    str | None,
    typer.Option(
        "--home", help="The home folder (default: $MULTIVERSE_HOME or the current folder)."
    ),
]


def _fail(error: MultiverseError) -> typer.Exit:
    typer.echo(f"error: {error}", err=True)
    return typer.Exit(error.exit_code)


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
        Path | None, typer.Option("--file", "-f", help="A request file to copy.")
    ] = None,
    home: HomeOption = None,
) -> None:
    """Drop a request into inbox/."""
    from multiverse.commands import submit_request

    try:
        path = submit_request(home, text, file)
    except MultiverseError as error:
        raise _fail(error) from None
    typer.echo(f"submitted: {path}")


@app.command()
def status(
    run: Annotated[
        str | None, typer.Argument(help="A run_id for its phase/stage/task tree.")
    ] = None,
    watch: Annotated[bool, typer.Option("--watch", help="Redraw live until Ctrl-C.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    home: HomeOption = None,
) -> None:
    """Show the runs, or one run's tree with statuses."""
    from multiverse.status_view import show_status

    try:
        show_status(home, run, watch=watch, as_json=as_json)
    except MultiverseError as error:
        raise _fail(error) from None


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
    _answer(home, run, "CONFIRM")


@app.command()
def modify(
    run: Annotated[str, typer.Argument()],
    text: Annotated[str, typer.Argument(help="What to change in the proposal.")],
    home: HomeOption = None,
) -> None:
    """Ask for a revised proposal."""
    _answer(home, run, "MODIFY", text)


@app.command()
def cancel(run: Annotated[str, typer.Argument()], home: HomeOption = None) -> None:
    """Cancel a run that waits for confirmation."""
    _answer(home, run, "CANCEL")


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
    _approval(home, run, approval, True)


@app.command()
def deny(
    run: Annotated[str, typer.Argument()],
    approval: ApprovalArgument = None,
    home: HomeOption = None,
) -> None:
    """Refuse the action a run waits for; the model is told it was refused."""
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
def show(run: Annotated[str, typer.Argument()], home: HomeOption = None) -> None:
    """Show a run's proposal, messages and outputs."""
    from multiverse.commands import show_run

    try:
        typer.echo(show_run(home, run))
    except MultiverseError as error:
        raise _fail(error) from None


@app.command()
def doctor(
    ping: Annotated[
        bool, typer.Option("--ping", help="Send a one-token call to each model.")
    ] = False,
    home: HomeOption = None,
) -> None:
    """Check the home, the mapping, and which tiers are model-backed or builtin and why."""
    from multiverse.commands import run_doctor

    try:
        text, healthy = run_doctor(home, ping)
    except MultiverseError as error:
        raise _fail(error) from None
    typer.echo(text)
    raise typer.Exit(0 if healthy else 1)


def main() -> None:
    """Console entry point."""
    try:
        app()
    except MultiverseError as error:  # anything a command let through
        typer.echo(f"error: {error}", err=True)
        sys.exit(error.exit_code)
    except OSError as error:  # the machine's fault (a full disk, a permission): one line
        where = f" {error.filename}" if error.filename else ""
        typer.echo(
            f"error: cannot complete the command:{where}: {error.strerror or error} "
            f"({storage_advice(error)})",
            err=True,
        )
        sys.exit(StorageError.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUTF8", "1")
    main()
