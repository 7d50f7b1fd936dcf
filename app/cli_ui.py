"""`multiverse ui`: the home in a browser (the web view of `app.web`)."""

from __future__ import annotations

from typing import Annotated

import typer

from app.cli_app import HomeOption, app, errors_said
from multiverse.errors import UserError
from multiverse.home import require_home, resolve_home

DEFAULT_PORT = 8765


@app.command()
def ui(
    port: Annotated[
        int, typer.Option("--port", metavar="N", help="The port (0: any free one).")
    ] = DEFAULT_PORT,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            metavar="H",
            help="The address to listen on; another than 127.0.0.1 lets other machines reach "
            "it, still only with the token.",
        ),
    ] = "127.0.0.1",
    home: HomeOption = None,
) -> None:
    """Serve a local web page of the home: runs, proposals and answers, reports (Ctrl-C stops)."""
    from app.web import is_loopback, new_token, serve

    with errors_said(False):
        where = require_home(resolve_home(home))
    token = new_token()

    def ready(url: str) -> None:
        typer.echo(f"multiverse ui serves {where.root} at {url} (Ctrl-C stops)")
        if not is_loopback(host):
            typer.echo(
                f"warning: listening on {host}: anyone who has this URL can answer your runs; "
                "share it only over a network you trust",
                err=True,
            )

    try:
        serve(where, host, port, token, ready)
    except OSError as error:
        with errors_said(False):
            raise UserError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    except KeyboardInterrupt:
        return
