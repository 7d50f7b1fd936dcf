"""The `multiverse` application object, its conventions (readable help, the exit codes, errors as
text or as JSON), its shared options and the helpers its commands share.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from typer._click.exceptions import UsageError
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption
from typer.models import CommandFunctionType

from multiverse.errors import MultiverseError

EXIT_CODES = (
    (0, "ok"),
    (1, "a run failed, or something is wrong (a check failed, a run not in the state asked)"),
    (2, "a usage error: a bad option or argument, an unknown run id"),
    (3, "a broken file: a table that does not parse"),
    (4, "the machine refused: a full disk, an I/O error, a permission"),
    (130, "interrupted (Ctrl-C)"),
)
RUN = "run-20261121-101500-001"
EXAMPLES = {
    "init": "multiverse init ~/memos",
    "start": "multiverse start --home ~/memos",
    "submit": 'multiverse submit --wait "Write a 2-page memo on the Nordic EV charging market"',
    "status": f"multiverse status {RUN} --watch",
    "confirm": f"multiverse confirm {RUN}",
    "modify": f'multiverse modify {RUN} "Make it one page, in Korean"',
    "cancel": f"multiverse cancel {RUN}",
    "pause": f"multiverse pause {RUN}",
    "approve": f"multiverse approve {RUN}",
    "deny": f"multiverse deny {RUN}",
    "retry": f"multiverse retry {RUN}",
    "fork": f"multiverse fork {RUN} --from P3",
    "resume": f"multiverse resume {RUN}",
    "delete-row": "multiverse delete-row db/knowledge_base_catalog.md assets/old.md",
    "show": f"multiverse show {RUN}",
    "logs": f"multiverse logs {RUN} --follow",
    "doctor": "multiverse doctor --ping",
    "runs": "multiverse runs --status failed --since 7d",
    "archive": "multiverse archive --before 30d",
    "open": "multiverse open latest",
    "worker": "multiverse worker --broker redis://10.0.0.5:6379/0 --queue executor",
    "ui": "multiverse ui --port 8765",
}
EXIT_EPILOG = "Exit codes: " + "; ".join(f"{code} {what}" for code, what in EXIT_CODES) + "."


class PlainArgument(TyperArgument):
    """An argument shown by its metavar alone (its name in capitals): `RUN`, `[RUN]`."""

    @property
    def display_name_raw(self) -> str:
        """The metavar, else the parameter's name in capitals."""
        return self.metavar or (self.name or "").upper()

    def display_type_rich(self, ctx: Any) -> str | None:
        """No Python type beside the name."""
        return None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")


class PlainOption(TyperOption):
    """An option shown with its metavar, a flag with nothing."""

    def display_type_rich(self, ctx: Any) -> str | None:
        """The metavar, or nothing for a flag."""
        if self.is_flag or self.count:
            return None
        return self.metavar or super().display_type_rich(ctx)


def _plain(params: list[Any]) -> list[Any]:
    for param in params:
        if type(param) is TyperArgument:
            param.__class__ = PlainArgument
        elif type(param) is TyperOption:
            param.__class__ = PlainOption
    return params


class PlainCommand(TyperCommand):
    """A command whose help shows metavars, not Python types, and ends with an example."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        example = EXAMPLES.get(self.name or "")
        if example and not self.epilog:
            self.epilog = f"Example: {example}"

    def make_context(
        self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any
    ) -> Any:
        """Parse the arguments; under --json a usage error is a JSON object too."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except UsageError as error:
            if "--json" not in args:
                raise
            print_json({"error": error.format_message(), "code": error.exit_code})
            raise typer.Exit(error.exit_code) from None

    def get_params(self, ctx: Any) -> list[Any]:
        """The parameters, rendered plainly."""
        return _plain(super().get_params(ctx))


# Commands people type from other job CLIs (rq, simonw/llm, Prefect, Temporal, docker): what
# multiverse calls them.
SUBMIT = 'use `multiverse submit "TEXT"`'
ARCHIVE = (
    "use `multiverse archive RUN` (runs are never deleted; archived ones leave the live tables)"
)
GUESSES = {
    "ls": "use `multiverse runs`",
    "list": "use `multiverse runs`",
    "ps": "use `multiverse runs`",
    "history": "use `multiverse runs`",
    "info": "use `multiverse show RUN` (or status RUN)",
    "inspect": "use `multiverse show RUN` (or status RUN)",
    "describe": "use `multiverse show RUN` (or status RUN)",
    "result": "use `multiverse open RUN` (or show RUN)",
    "output": "use `multiverse open RUN` (or show RUN)",
    "run": SUBMIT,
    "enqueue": SUBMIT,
    "add": SUBMIT,
    "new": SUBMIT,
    "stop": "use `multiverse cancel RUN` (for a run; Ctrl-C stops `multiverse start`)",
    "kill": "use `multiverse cancel RUN`",
    "terminate": "use `multiverse cancel RUN`",
    "abort": "use `multiverse cancel RUN`",
    "suspend": "use `multiverse pause RUN`",
    "unpause": "use `multiverse resume RUN`",
    "continue": "use `multiverse resume RUN`",
    "requeue": "use `multiverse retry RUN`",
    "rerun": "use `multiverse retry RUN`",
    "clone": "use `multiverse fork RUN --from STEP`",
    "branch": "use `multiverse fork RUN --from STEP`",
    "rm": ARCHIVE,
    "delete": ARCHIVE,
    "clean": "use `multiverse archive --before DATE`",
    "prune": "use `multiverse archive --before DATE`",
    "tail": "use `multiverse logs --follow`",
    "log": "use `multiverse logs`",
    "serve": "use `multiverse start`",
    "daemon": "use `multiverse start`",
    "health": "use `multiverse doctor`",
    "check": "use `multiverse doctor`",
    "version": "use `multiverse --version`",
}


class PlainGroup(TyperGroup):
    """The root command, rendered plainly; a command named as other CLIs name it says ours."""

    def get_params(self, ctx: Any) -> list[Any]:
        """The parameters, rendered plainly."""
        return _plain(super().get_params(ctx))

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """The command `args` names; for a name other CLIs use, a usage error naming ours."""
        name = args[0] if args else ""
        if name in GUESSES and self.get_command(ctx, name) is None:
            message = f"there is no `multiverse {name}`: {GUESSES[name]}"
            if "--json" in args:
                print_json({"error": message, "code": 2})
                raise typer.Exit(2)
            raise UsageError(message, ctx)
        return super().resolve_command(ctx, args)


class App(typer.Typer):
    """`typer.Typer` whose commands render plainly, whoever adds them."""

    def command(
        self, *args: Any, **kwargs: Any
    ) -> Callable[[CommandFunctionType], CommandFunctionType]:
        """`typer.Typer.command` with `PlainCommand` as the default class."""
        kwargs.setdefault("cls", PlainCommand)
        return super().command(*args, **kwargs)


def print_json(data: Any) -> None:
    """One JSON document on stdout."""
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def fail(error: MultiverseError, as_json: bool = False) -> typer.Exit:
    """Say the error (on stderr, or as `{"error", "code"}` on stdout under --json); its exit."""
    if as_json:
        print_json({"error": str(error), "code": error.exit_code})
    else:
        typer.echo(f"error: {error}", err=True)
    return typer.Exit(error.exit_code)


@contextmanager
def errors_said(as_json: bool = False) -> Iterator[None]:
    """Within the block, a MultiverseError is said (`fail`) and the command exits with its code."""
    try:
        yield
    except MultiverseError as error:
        raise fail(error, as_json) from None


@contextmanager
def quiet_logging(console_level: int = logging.WARNING) -> Iterator[None]:
    """Within the block, log events go nowhere but warnings (or `console_level`) to stderr:
    stdout is the command's own. A daemon in this process (as in the tests) has configured its
    logging already and keeps it."""
    from multiverse.logs import close_logging, configure_logging, logging_configured

    # Our own handlers, not structlog's flag: a test's capture_logs configures structlog too.
    quiet = not logging_configured()
    if quiet:
        configure_logging(None, console_level)
    try:
        yield
    finally:
        if quiet:
            close_logging()


def wants_json(argv: list[str] | None = None) -> bool:
    """Whether the command line asked for --json (for errors raised outside a command)."""
    return "--json" in (sys.argv[1:] if argv is None else argv)


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
TimeoutOption = Annotated[
    float, typer.Option("--timeout", metavar="SECONDS", help="How long to wait at most.")
]


def complete_run(ctx: typer.Context, incomplete: str) -> list[str]:
    """The shell's completions of a run argument: `latest` and the home's run ids that hold
    what is typed, newest first (none where the home cannot be read)."""
    from multiverse.errors import MultiverseError
    from multiverse.home import resolve_home, run_ids

    try:
        known = run_ids(resolve_home(ctx.params.get("home")))
    except (MultiverseError, OSError):
        return []
    part = incomplete.removeprefix("run-")
    found = [run for run in reversed(known) if part in run.removeprefix("run-")]
    return (["latest"] if "latest".startswith(incomplete) else []) + found


RunArgument = Annotated[
    str, typer.Argument(metavar="RUN", autocompletion=complete_run, show_default=False)
]


def run_ref(home: str | None, run: str, as_json: bool = False) -> str:
    """The run id a short form names (`latest`, any unique part of it: multiverse.home)."""
    from multiverse.home import resolve_home, resolve_run

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
