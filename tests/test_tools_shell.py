"""run_shell_command: workspace cwd, allow-list, approval bridge, timeout, output cap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from executor.tools import ToolContext, ToolLimits, ToolRegistry
from multiverse.home import Home, init_home

from journey import wait_until

RUN = "run-20260101-000000-001"


class RecordingApprover:
    """A real approver: answers a fixed decision and remembers what it was asked."""

    def __init__(self, decision: bool) -> None:
        self.decision = decision
        self.asked: list[str] = []

    def __call__(self, tool: str, arguments: dict[str, Any]) -> bool:
        """Record the question (the command) and answer."""
        assert tool == "run_shell_command"
        self.asked.append(str(arguments["command"]))
        return self.decision


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """An initialised home with the run's workspace."""
    home = Home(tmp_path / "home")
    init_home(home)
    home.run(RUN).workspace.mkdir(parents=True)
    return home


def shell(
    home: Home,
    allow: tuple[str, ...] = ("echo", "pwd", "env", "sh", "sleep", "seq", "false"),
    approver: RecordingApprover | None = None,
    limits: ToolLimits | None = None,
) -> ToolRegistry:
    """A registry with only run_shell_command."""
    context = ToolContext(
        home=home.root,
        run_id=RUN,
        shell_allow=allow,
        approver=approver,
        limits=limits or ToolLimits(),
    )
    return ToolRegistry(context, ["run_shell_command"])


def test_allowed_command_runs_in_the_workspace(home: Home) -> None:
    """An allowed command runs with the run's workspace as cwd; exit code is in data."""
    result = shell(home).call("run_shell_command", {"command": "pwd"})
    assert result.ok and result.data["exit_code"] == 0
    assert str(home.run(RUN).workspace.resolve()) in result.output


def test_environment_is_scrubbed(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys in the daemon's environment are not handed to a command."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    result = shell(home).call("run_shell_command", {"command": "env"})
    assert result.ok
    assert "sk-should-not-leak" not in result.output
    assert "PATH=" in result.output


def test_not_allowed_without_approver_is_refused(home: Home) -> None:
    """A command off the allow-list with no approver is refused and never runs."""
    result = shell(home).call("run_shell_command", {"command": "touch marker"})
    assert not result.ok and "allow-list" in str(result.error)
    assert not (home.run(RUN).workspace / "marker").exists()


def test_denied_approval_refuses(home: Home) -> None:
    """The approver is asked; a 'no' refuses the command, which never runs."""
    approver = RecordingApprover(decision=False)
    result = shell(home, approver=approver).call("run_shell_command", {"command": "touch marker"})
    assert not result.ok and "did not approve" in str(result.error)
    assert approver.asked == ["touch marker"]
    assert not (home.run(RUN).workspace / "marker").exists()


def test_granted_approval_runs(home: Home) -> None:
    """A 'yes' from the approver runs the command."""
    approver = RecordingApprover(decision=True)
    result = shell(home, approver=approver).call("run_shell_command", {"command": "touch marker"})
    assert result.ok
    assert approver.asked == ["touch marker"]
    assert (home.run(RUN).workspace / "marker").exists()


def test_allowed_command_does_not_ask(home: Home) -> None:
    """A command on the allow-list runs without asking the approver."""
    approver = RecordingApprover(decision=False)
    assert shell(home, approver=approver).call("run_shell_command", {"command": "echo hi"}).ok
    assert approver.asked == []


def test_nonzero_exit_is_an_error_value(home: Home) -> None:
    """A failing command is a failed result carrying its exit code."""
    result = shell(home).call("run_shell_command", {"command": "false"})
    assert not result.ok and result.data["exit_code"] == 1
    assert "exited with code 1" in str(result.error)


def test_timeout_kills_the_process_group(home: Home) -> None:
    """On timeout the command and its background children are killed and the call returns."""
    registry = shell(home, limits=ToolLimits(shell_timeout_seconds=0.5))
    result = registry.call(
        "run_shell_command", {"command": "sh -c 'sleep 30 & echo $! > bg.pid; wait'"}
    )
    assert not result.ok and "timed out" in str(result.error)
    assert result.data["exit_code"] is None
    pid = int((home.run(RUN).workspace / "bg.pid").read_text().strip())
    assert wait_until(lambda: not alive(pid), seconds=10)


def test_timeout_of_a_plain_sleep(home: Home) -> None:
    """`sleep 30` with a short timeout comes back as a timed-out error value."""
    registry = shell(home, limits=ToolLimits(shell_timeout_seconds=0.3))
    result = registry.call("run_shell_command", {"command": "sleep 30"})
    assert not result.ok and "timed out" in str(result.error)


def test_output_is_capped(home: Home) -> None:
    """A chatty command's output is cut at the cap and marked truncated."""
    registry = shell(home, limits=ToolLimits(shell_max_output_bytes=1000))
    result = registry.call("run_shell_command", {"command": "seq 1 200000"})
    assert result.ok and result.data["truncated"] is True
    assert len(result.output) < 1300
    assert "[output truncated" in result.output


def test_unsplittable_empty_and_missing_commands_are_error_values(home: Home) -> None:
    """An unbalanced quote, an empty command and a missing program fail as values."""
    registry = shell(home, allow=("no-such-program-xyz",))
    assert "cannot split" in str(registry.call("run_shell_command", {"command": "echo 'x"}).error)
    assert "empty" in str(registry.call("run_shell_command", {"command": "  "}).error)
    missing = registry.call("run_shell_command", {"command": "no-such-program-xyz"})
    assert not missing.ok and "cannot start" in str(missing.error)


def alive(pid: int) -> bool:
    """Whether `pid` is a running (not zombie) process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[0] not in ("Z", "X")
