"""The docs (issue 27): the pages made from the code match it, the site builds strict and
offline, and the README stays short and names every command."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from app.cli import app

ROOT = Path(__file__).resolve().parent.parent
REGENERATE = "run `make docs-ref` (or `python docs/generate.py`) and commit what it writes"


def _command_names() -> list[str]:
    root = typer.main.get_command(app)
    context = root.context_class(root, info_name="multiverse")
    return list(root.list_commands(context))  # type: ignore[attr-defined]


def test_generated_pages_match_the_code(tmp_path: Path) -> None:
    """The CLI and configuration references and the README's command table, written again from
    the code, are the committed files byte for byte."""
    subprocess.run(
        [sys.executable, str(ROOT / "docs" / "generate.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
        text=True,
    )
    written = sorted(path for path in tmp_path.rglob("*") if path.is_file())
    assert {path.relative_to(tmp_path).as_posix() for path in written} >= {
        "README.md",
        "docs/reference/cli.md",
        "docs/reference/configuration.md",
    }
    for path in written:
        relative = path.relative_to(tmp_path)
        committed = ROOT / relative
        assert committed.is_file(), f"{relative} is missing: {REGENERATE}"
        assert committed.read_text(encoding="utf-8") == path.read_text(encoding="utf-8"), (
            f"{relative} no longer matches the code: {REGENERATE}"
        )


def test_the_site_builds_strict_and_offline(tmp_path: Path) -> None:
    """`mkdocs build --strict` succeeds: every page in the nav, every link, anchor and include
    found (no network is asked for)."""
    if importlib.util.find_spec("mkdocs") is None:
        pytest.fail("mkdocs is not installed: `make install` installs the docs extra")
    environment = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_PROXY": "*"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
         "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()
    benchmarks = (tmp_path / "site" / "benchmarks" / "index.html").read_text(encoding="utf-8")
    assert "make bench-store" in benchmarks  # BENCHMARKS.md included, not linked


def test_the_readme_is_short_and_names_every_command() -> None:
    """The README has at most 150 lines and names each command of the typer app."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    missing = [
        name for name in _command_names() if not re.search(rf"`(?:multiverse )?{name}\b", readme)
    ]
    assert not missing, f"the README does not name {missing}: {REGENERATE}"
