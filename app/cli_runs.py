"""Commands that manage runs: list them (`runs`), archive them, open their report."""

from __future__ import annotations

from typing import Annotated

import typer

from app.cli_app import HomeOption, JsonOption, app, run_ref
from app.cli_style import errors_said, fail, print_json
from multiverse.errors import UserError


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
    from app.archive_command import archive_runs, render_archive

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

    run = run_ref(home, run, as_json)
    with errors_said(as_json):
        result = open_run(home, run, folder, print_only)
    if as_json:
        print_json(result)
    elif result["opened"]:
        typer.echo(f"opened {result['path']} ({result['opener']})")
    else:
        typer.echo("no opener here (no desktop session): open the path yourself", err=True)
        typer.echo(result["path"])
