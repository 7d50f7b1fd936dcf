"""The `multiverse` command line (SPEC §13): parse, build, call one function, map errors.

Heavy modules are imported inside the commands that need them, so `--help`, `init`, `status`
and the answers to a proposal start fast and never import litellm. The commands are defined by
concept in `cli_home` and `cli_runs`, each adding itself to `app`
(`cli_app`); importing them here, in this order, is what registers them and orders `--help`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import typer

from app import cli_home, cli_runs, cli_serving  # noqa: F401  (each adds its commands)
from app.cli_app import app, fail, print_json, wants_json
from multiverse.errors import MultiverseError, StorageError, storage_advice

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
        app(args=argv, prog_name=prog_name)
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


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUTF8", "1")
    main()
