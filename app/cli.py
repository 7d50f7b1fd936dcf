"""The `multiverse` command line (SPEC §13): parse, build, call one function, map errors.

Heavy modules are imported inside the commands that need them, so `--help`, `init`, `status`
and the answers to a proposal start fast and never import litellm (`tests/test_cli.py` checks
that `--help` imports no home, store or pydantic either). The commands are defined by
concept in `cli_home` and `cli_runs`, each adding itself to `app` (`cli_app`); importing them
here, in this order, is what registers them and orders `--help`. The commands that serve until
stopped are here, after them: `multiverse ui`, the home in a browser (the web view of
`app.web`), and `multiverse worker`, which serves other machines' steps (issue 28).

A worker needs no home. Its broker and queues come from the options, else from the remote tiers
of the home's runtime-mapping.yaml when it is started in one; the settings long steps need are
derived from the longest step of the tiers it serves (`multiverse.config.serving`).
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from app import cli_home, cli_runs  # noqa: F401  (each adds its commands)
from app.cli_app import HomeOption, app, errors_said, fail, print_json, wants_json
from multiverse.errors import ConfigError, MultiverseError, StorageError, UserError, storage_advice

if TYPE_CHECKING:
    from multiverse.config import RuntimeMapping

__all__ = ["app", "main", "run"]


# pydantic looks its plugins up among the entry points of every installed distribution the
# first time a model is built: ~20-80 ms of a short command's start, for plugins this program
# never uses (typer sets the same variable around its own adapters). A value the user set wins;
# children never see it (multiverse.processes.child passes them a named environment only).
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def main() -> None:
    """Console entry point."""
    run()


def run(args: Sequence[str] | None = None, prog_name: str | None = None) -> None:
    """Run one command line (default: this process's) as the console does; raises SystemExit.

    A MultiverseError or an OSError a command let through is said, as text or as JSON, with its
    exit code; Ctrl-C exits 130. The tests call this in process, as a user's shell calls `main`.
    """
    argv = sys.argv[1:] if args is None else list(args)
    try:
        _command()(args=argv, prog_name=prog_name)
    except MultiverseError as error:  # anything a command let through
        raise SystemExit(fail(error, wants_json(argv)).exit_code) from None
    except OSError as error:  # the machine's fault (a full disk, a permission): one line
        where = f" {error.filename}" if error.filename else ""
        message = (
            f"cannot complete the command:{where}: {error.strerror or error} "
            f"({storage_advice(error)})"
        )
        if wants_json(argv):
            print_json({"error": message, "code": StorageError.exit_code})
        else:
            typer.echo(f"error: {message}", err=True)
        sys.exit(StorageError.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)


@functools.cache
def _command() -> typer.core.TyperGroup:
    """The click command of `app`, built once: `app(...)` builds it anew on every call (~15 ms
    for this command tree), and the web view and the tests run many command lines in one process."""
    command = typer.main.get_command(app)
    assert isinstance(command, typer.core.TyperGroup)
    return command


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
    from multiverse.home import require_home, resolve_home

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


@dataclass(frozen=True)
class Served:
    """What one worker serves: its broker, its queues, the longest step of each, and whether
    a model may serve them (unknown without the tiers: yes)."""

    broker: str
    queues: list[str]
    step_seconds: list[float]
    models: bool = True


def served(
    mapping: RuntimeMapping, broker: str | None, queues: list[str], step_seconds: float | None
) -> Served:
    """The broker, queues and step lengths a worker serves, from the options and the mapping's
    remote tiers (pure); ConfigError when the broker cannot be told."""
    from multiverse.config import RemoteConfig

    remotes: list[RemoteConfig] = [
        config.remote for config in mapping.tier_mapping.values() if config.remote is not None
    ]
    if broker is None:
        brokers = sorted({remote.broker for remote in remotes})
        if len(brokers) != 1:
            found = ", ".join(brokers) if brokers else "no tier with `remote:`"
            raise ConfigError(
                f"which broker? runtime-mapping.yaml has {found}; "
                "say it: multiverse worker --broker redis://HOST:6379/0"
            )
        broker = brokers[0]
    mine = [remote for remote in remotes if remote.broker == broker]
    queues = queues or sorted({remote.queue for remote in mine}) or ["multiverse"]
    if step_seconds is not None:
        seconds = [step_seconds]
    else:
        seconds = [remote.step_timeout_seconds for remote in mine if remote.queue in queues]
    RemoteConfig(broker=broker)  # the same check of the URL as the mapping's
    tiers = [config for config in mapping.tier_mapping.values()
             if config.remote is not None and config.remote.broker == broker
             and config.remote.queue in queues]  # fmt: skip
    models = not tiers or any(config.adapter_type == "sdk" and config.calls_a_model
                              for config in tiers)  # fmt: skip
    return Served(broker=broker, queues=queues, step_seconds=seconds, models=models)


@app.command()
def worker(
    broker: Annotated[
        str | None,
        typer.Option("--broker", metavar="URL",
                     help="The Redis broker (default: the remote tiers' in runtime-mapping.yaml)."),
    ] = None,
    queue: Annotated[
        list[str] | None,
        typer.Option("--queue", "-Q", metavar="NAME",
                     help="A queue to serve; repeat for more (default: the remote tiers')."),
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Steps done at once (processes).")
    ] = 1,
    name: Annotated[
        str | None, typer.Option("--name", metavar="NAME",
                     help="This worker's name (default: QUEUE-PID@host).")
    ] = None,
    step_seconds: Annotated[
        float | None,
        typer.Option("--step-seconds", min=1, metavar="SECONDS",
                     help="The longest step served (default: the tiers' step_timeout_seconds)."),
    ] = None,
    visibility_timeout: Annotated[
        float | None,
        typer.Option("--visibility-timeout", min=1, metavar="SECONDS",
                     help="Override Redis's visibility timeout (default: past the longest step)."),
    ] = None,
    home: HomeOption = None,
) -> None:
    """Do the steps of remote tiers sent to a Redis broker's queues (Ctrl-C stops it)."""
    from multiverse.remote import WORKERS_EXTRA, missing_packages

    missing = missing_packages()
    if missing:
        raise fail(ConfigError(f"the worker needs {' and '.join(missing)}: {WORKERS_EXTRA}"))
    from app.worker import WorkerPlace, serve
    from multiverse.config import RuntimeMapping, load_runtime_mapping
    from multiverse.home import resolve_home

    try:
        root = resolve_home(home).root
        mapping = load_runtime_mapping(root) if (root / "runs").is_dir() else RuntimeMapping()
        what = served(mapping, broker, list(queue or []), step_seconds)
    except MultiverseError as error:
        raise fail(error) from None
    label = name or f"{what.queues[0]}-{os.getpid()}@{socket.gethostname()}"
    folder = Path(tempfile.mkdtemp(prefix="multiverse-worker-"))
    try:
        serve(WorkerPlace(broker=what.broker, name=label, folder=folder), what.queues,
              concurrency, what.step_seconds, visibility_timeout, what.models)  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUTF8", "1")
    main()
