"""Confinement: every path the engine reads resolves inside the home; it writes only into the
run's workspace and outputs folders."""

from __future__ import annotations

from pathlib import Path

from multiverse.errors import MultiverseError
from multiverse.home import Home


class TaskError(MultiverseError):
    """A task the builtin engine cannot perform as given; becomes a FAILED result signal."""


def inside(path: Path, folder: Path) -> bool:
    """Whether `path` (resolved, symlinks followed) lies in `folder`."""
    return path.resolve().is_relative_to(folder.resolve())


def resolve_reference(home: Path, reference: str) -> Path:
    """An existing file or folder named relative to the home; refused if it leaves the home."""
    candidate = Path(reference.strip())
    path = (candidate if candidate.is_absolute() else home / candidate).resolve()
    if not inside(path, home):
        raise TaskError(f"reference {reference!r} resolves outside the home; refused")
    if not path.exists():
        raise TaskError(f"reference {reference!r} does not exist (looked for {path})")
    return path


def resolve_output(home: Path, run_id: str, output_path: str) -> Path:
    """The task's output file; it must lie in runs/<run_id>/workspace/ or outputs/<run_id>/."""
    if not output_path.strip():
        raise TaskError("the task has no output_path to write to")
    candidate = Path(output_path.strip())
    path = (candidate if candidate.is_absolute() else home / candidate).resolve()
    run = Home(home).run(run_id)
    if not (inside(path, run.workspace) or inside(path, run.outputs)):
        raise TaskError(
            f"output_path {output_path!r} is outside runs/{run_id}/workspace/ and "
            f"outputs/{run_id}/; refused"
        )
    if path.is_dir() or output_path.endswith("/"):
        path = path / "report.md"
    return path


def in_outputs(home: Path, run_id: str, path: Path) -> bool:
    """Whether a path lies in the run's outputs folder (a deliverable)."""
    return inside(path, Home(home).run(run_id).outputs)


def relative(home: Path, path: Path) -> str:
    """A path as written in the tables: relative to the home, forward slashes."""
    return Home(home).relative(path)
