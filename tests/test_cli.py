"""The CLI stays light: commands that call no model never import litellm."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from multiverse.home import Home

from journey import cli

PROBE = """
import sys
from app.cli import app
try:
    app(sys.argv[1:], standalone_mode=False)
except SystemExit:
    pass
except Exception as error:  # a user error of the probe's arguments is fine here
    print(type(error).__name__, file=sys.stderr)
print("litellm" in sys.modules)
"""
KERNEL = (
    "print(sorted(name for name in sys.modules if name == 'pydantic' or name.split('.')[:2] in"
    " (['multiverse', 'home'], ['multiverse', 'store'], ['multiverse', 'runs'],"
    " ['multiverse', 'config'])))"
)


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--version"],
        ["init"],
        ["status"],
        ["status", "--json"],
        ["confirm", "run-20990101-000000-001"],
        ["submit", "hello"],
        ["show", "run-20990101-000000-001"],
        ["resume", "run-20990101-000000-001"],
        ["logs"],
        ["logs", "run-20990101-000000-001", "--json"],
    ],
)
def test_commands_without_a_model_never_import_litellm(home: Home, args: list[str]) -> None:
    """`--help`, `init`, `status`, `confirm`, `submit`, `show`, `resume`, `logs`: no litellm."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *args, "--home", str(home.root)]
        if args not in (["--help"], ["--version"])
        else [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip().splitlines()[-1] == "False", result.stdout + result.stderr


@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_help_and_version_import_no_kernel(args: list[str]) -> None:
    """`--help` and `--version` build the command line alone: no home, store, run records,
    mapping or pydantic is imported (together they had doubled the start, 0.2 s to 0.4 s)."""
    probe = PROBE.replace('print("litellm" in sys.modules)', KERNEL)
    assert probe != PROBE
    result = subprocess.run([sys.executable, "-c", probe, *args],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout + result.stderr


def test_status_json_lists_every_column(home: Home) -> None:
    """`status --json` prints the runs with every process_runs column."""
    cli(home, "submit", "Write a memo about the market.")
    cli(home, "start", "--once")
    result = cli(home, "status", "--json")
    assert result.returncode == 0
    assert '"current_task_id"' in result.stdout and '"user_request"' in result.stdout
    tree = cli(home, "status", result.stdout.split('"run_id": "')[1].split('"')[0])
    assert "P0" in tree.stdout and "T00" in tree.stdout


def test_submit_file_show_and_watch(home: Home, tmp_path: Path) -> None:
    """`submit --file` copies a request; `show` prints proposal and messages; `--watch` ends."""
    request = tmp_path / "brief.md"
    request.write_text("---\ntitle: Brief\n---\nWrite a memo about the market.\n", encoding="utf-8")
    assert cli(home, "submit", "--file", str(request)).returncode == 0
    assert (home.inbox / "brief.md").read_bytes() == request.read_bytes()
    cli(home, "start", "--once")
    run_id = json.loads(cli(home, "status", "--json").stdout)[0]["run_id"]
    shown = cli(home, "show", run_id)
    assert shown.returncode == 0 and "## Proposal" in shown.stdout and "PROPOSAL" in shown.stdout
    cli(home, "cancel", run_id)
    cli(home, "start", "--once")
    watched = cli(home, "status", run_id, "--watch")
    assert watched.returncode == 0 and "CANCELLED" in watched.stdout


def test_doctor_on_a_fresh_home(home: Home) -> None:
    """`doctor` explains that every tier runs on the builtin engine, and exits 0."""
    result = cli(home, "doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "builtin" in result.stdout


def test_start_says_which_engine_serves(home: Home) -> None:
    """The daemon's first line says it runs on the offline engine when no model is configured."""
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "start", "--home", str(home.root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert "builtin offline engine" in first
    finally:
        process.terminate()
        assert process.wait(timeout=60) == 0


COMPLETE_PROBE = """
import sys
from app.cli import app
try:
    app(prog_name="multiverse")
except SystemExit:
    pass
print("litellm" in sys.modules)
"""


@pytest.mark.parametrize(
    ("typed", "offered"),
    [
        ("multiverse --ver", "--version"),
        ("multiverse --he", "--help"),
        ("multiverse sta", "status"),
    ],
)
def test_shell_completion_answers_without_importing_litellm(typed: str, offered: str) -> None:
    """typer's bash completion (as `--show-completion` installs it) offers the word, no litellm."""
    environ = {
        **os.environ,
        "_MULTIVERSE_COMPLETE": "complete_bash",
        "COMP_WORDS": typed,
        "COMP_CWORD": str(len(typed.split()) - 1),
    }
    result = subprocess.run(
        [sys.executable, "-c", COMPLETE_PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        env=environ,
    )
    *offers, imported = result.stdout.split()
    assert offered in offers and imported == "False", result.stdout + result.stderr
