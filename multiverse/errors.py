"""One error hierarchy, split by whose fault it is (STYLE rule 6)."""

from __future__ import annotations

from pathlib import Path


class MultiverseError(Exception):
    """Base of every error this project raises on purpose."""

    exit_code = 1


class UserError(MultiverseError):
    """A person's bad input or command: shown as one clear line, never a traceback."""

    exit_code = 2


class HomeError(UserError):
    """The home folder is missing, not a directory, or not writable."""


class ConfigError(UserError):
    """A configuration file (runtime-mapping.yaml, an agent package) is malformed."""


class TableError(MultiverseError):
    """A markdown table that cannot be read or written; the file is never overwritten."""

    exit_code = 3

    def __init__(self, path: Path | str, line: int | None, problem: str) -> None:
        self.path = Path(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line is not None else str(self.path)
        super().__init__(f"{where}: {problem}")


class RowNotFoundError(TableError):
    """An update named a key that the table does not hold."""


class StaleRowError(TableError):
    """A compare-and-set update found the row's status changed under it."""
