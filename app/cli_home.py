"""Commands that serve a home and show it: init, start, submit, status, show, logs, doctor."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from app.cli_app import HomeOption, JsonOption, app, errors_said, fail, print_json, run_ref
from multiverse.errors import MultiverseError


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
        str | None, typer.Argument(help="A run id (or `latest`, or a unique part) for its tree.")
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
    run: Annotated[str, typer.Argument()], as_json: JsonOption = False, home: HomeOption = None
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
    run: Annotated[str | None, typer.Argument(help="A run_id: only that run's lines.")] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new lines until Ctrl-C.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="The raw JSON lines.")] = False,
    home: HomeOption = None,
) -> None:
    """Print the daemon's log, or one run's lines and its child process logs."""
    from app.logs_view import show_logs

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
    from app.commands import run_doctor
    from app.doctor import render_doctor

    with errors_said(as_json):
        report = run_doctor(home, ping)
    if as_json:
        data = report.model_dump(mode="json")
        serving = report.daemon is not None and report.daemon.serving
        print_json({**data, "healthy": report.healthy, "serving": serving})
    else:
        typer.echo(render_doctor(report))
    raise typer.Exit(0 if report.healthy else 1)
