"""The CLI stays light: commands that call no model never import litellm."""

from __future__ import annotations

import subprocess
import sys

import pytest

from journey import cli
from multiverse.home import Home

PROBE = """
import sys
from multiverse.cli import app
try:
    app(sys.argv[1:], standalone_mode=False)
except SystemExit:
    pass
except Exception as error:  # a user error of the probe's arguments is fine here
    print(type(error).__name__, file=sys.stderr)
print("litellm" in sys.modules)
"""


@pytest.mark.parametrize(
    "args",
    [["--help"], ["init"], ["status"], ["status", "--json"], ["confirm", "run-20990101-000000-001"],
     ["submit", "hello"], ["show", "run-20990101-000000-001"]],
)
def test_commands_without_a_model_never_import_litellm(home: Home, args: list[str]) -> None:
    """`--help`, `init`, `status`, `confirm`, `submit`, `show` leave litellm unimported."""
    result = subprocess.run([sys.executable, "-c", PROBE, *args, "--home", str(home.root)]
                            if args != ["--help"] else [sys.executable, "-c", PROBE, *args],
                            capture_output=True, text=True, timeout=60)
    assert result.stdout.strip().splitlines()[-1] == "False", result.stdout + result.stderr


def test_status_json_lists_every_column(home: Home) -> None:
    """`status --json` prints the runs with every process_runs column."""
    cli(home, "submit", "Write a memo about the market.")
    cli(home, "start", "--once")
    result = cli(home, "status", "--json")
    assert result.returncode == 0
    assert '"current_task_id"' in result.stdout and '"user_request"' in result.stdout
    tree = cli(home, "status", result.stdout.split('"run_id": "')[1].split('"')[0])
    assert "P0" in tree.stdout and "T00" in tree.stdout
