"""The environment of a third-party engine a bench compares with (LangGraph, Celery): its own
venv under bench/, made from its requirements file, never a dependency of the project."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def quiet(command: Sequence[str | Path]) -> None:
    """Run a command, its output shown only if it fails."""
    done = subprocess.run([str(part) for part in command], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(map(str, command))} failed:\n{done.stdout}{done.stderr}")


def side_python(venv: Path, requirements: Path, name: str) -> Path:
    """The engine's interpreter, its environment created or updated when the pins changed."""
    python = venv / "bin" / "python"
    stamp = venv / "requirements.sha256"
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()
    if python.exists() and stamp.exists() and stamp.read_text() == digest:
        return python
    print(f"installing {name} into {venv} …", file=sys.stderr)
    if not python.exists():
        quiet([sys.executable, "-m", "venv", venv])
    quiet([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r", requirements])
    stamp.write_text(digest)
    return python
