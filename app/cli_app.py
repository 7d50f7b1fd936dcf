"""The `multiverse` application object, its shared options and the helpers its commands share.

The commands live in modules by concept (`cli_home`, `cli_respond`, `cli_runs`), each adding
itself to `app`; `app.cli` puts them together and is the entry point.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from app.cli_style import EXIT_EPILOG, App, PlainGroup, errors_said, print_json

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


def run_ref(home: str | None, run: str, as_json: bool = False) -> str:
    """The run id a short form names (`latest`, a unique prefix or suffix: multiverse.run_refs)."""
    from multiverse.home import resolve_home
    from multiverse.run_refs import resolve_run

    with errors_said(as_json):
        return resolve_run(resolve_home(home), run)


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


def said(as_json: bool, message: str, **data: object) -> None:
    """What an answer command did: its sentence, or under --json its data and that sentence."""
    if as_json:
        print_json({**data, "message": message})
    else:
        typer.echo(message)


def relative(home: str | None, path: Path) -> str:
    """A file of the home as the tables name it (`runs/<run_id>/user_response.md`)."""
    from multiverse.home import resolve_home

    return resolve_home(home).relative(path)
