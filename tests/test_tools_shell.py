"""run_shell_command: workspace cwd, allow-list, approval bridge, timeout, output cap."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from executor.tools import ToolContext, ToolLimits, ToolRefused, ToolRegistry
from multiverse.home import Home, init_home

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
    command = "sh -c 'while true; do echo tick >> ticks; sleep 0.05; done & wait'"
    result = registry.call("run_shell_command", {"command": command})
    assert not result.ok and "timed out" in str(result.error)
    assert result.data["exit_code"] is None
    # the background loop (a pid of the sandbox's own namespace) writes no more
    ticks = home.run(RUN).workspace / "ticks"
    assert ticks.exists()
    size = ticks.stat().st_size
    time.sleep(0.5)  # watching a file for writes: no condition to wait on but time
    assert ticks.stat().st_size == size


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




# -- the sandbox (issue 25) ---------------------------------------------------------------------


def _context(home: Home, **fields: Any) -> ToolRegistry:
    return ToolRegistry(ToolContext(home=home.root, run_id=RUN, **fields), ["run_shell_command"])


def test_a_command_writes_only_in_its_workspace(home: Home) -> None:
    """A real sandboxed command: writing outside the home fails and leaves nothing; what it
    writes to the home's other files (under the test's /tmp here) lands in the sandbox's
    private /tmp, never in the home; the workspace is writable."""
    outside = Path(f"/var/tmp/multiverse-sandbox-{uuid.uuid4().hex}.txt")
    registry = _context(home, shell_allow=("touch", "cp"))
    refused = registry.call("run_shell_command", {"command": f"touch {outside}"})
    assert not refused.ok and "Read-only file system" in refused.output
    assert not outside.exists()
    table = home.db / "intruder.md"
    registry.call("run_shell_command", {"command": f"touch {table}"})
    assert not table.exists()
    mapping = home.root / "runtime-mapping.yaml"
    before = mapping.read_bytes()
    registry.call("run_shell_command", {"command": f"cp /dev/null {mapping}"})
    assert mapping.read_bytes() == before
    assert registry.call("run_shell_command", {"command": "touch inside.txt"}).ok
    assert (home.run(RUN).workspace / "inside.txt").exists()


def test_an_interpreter_approved_still_cannot_escape(home: Home) -> None:
    """The case of issue 25: python3, approved, told by an asset to write outside the home."""
    outside = Path(f"/var/tmp/multiverse-escape-{uuid.uuid4().hex}.txt")
    approver = RecordingApprover(True)
    registry = _context(home, approver=approver)
    code = f"open({str(outside)!r}, 'w').write('x')"
    result = registry.call("run_shell_command", {"command": f'python3 -c "{code}"'})
    assert approver.asked and not result.ok and "Read-only file system" in result.output
    assert not outside.exists()


def test_the_network_is_off_unless_the_mapping_keeps_it(home: Home) -> None:
    """A loopback server of the test: unreachable from the sandbox, reachable with network."""
    import socket

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3)"
    command = {"command": f'python3 -c "{code}"'}
    try:
        closed = _context(home, shell_gated=True).call("run_shell_command", command)
        opened = _context(home, shell_gated=True, shell_network=True).call(
            "run_shell_command", command
        )
    finally:
        server.close()
    assert not closed.ok and "Connection refused" in closed.output
    assert opened.ok, opened.output


def test_requires_approval_asks_for_every_call_allow_listed_or_not(home: Home) -> None:
    """A binding with requires_approval: an allow-listed `ls` is asked too, and a "no" stops
    it; the mapping may list an interpreter only with requires_approval."""
    from executor.model.loop import gate_approvals, shell_policy
    from executor.tools import builtin_tools
    from multiverse.config import ToolBinding

    binding = ToolBinding(tool="run_shell_command", requires_approval=True,
                          options={"allow": ["ls", "python3"]})  # fmt: skip
    for decision in (True, False):
        approver = RecordingApprover(decision)
        context = ToolContext(home=home.root, run_id=RUN, approver=approver,
                              **shell_policy({"run_commands": binding}))  # fmt: skip
        gated = gate_approvals(builtin_tools(), {"run_commands": binding}, approver)
        if decision:
            assert gated["run_shell_command"].run(context, {"command": "ls"}).ok
        else:
            with pytest.raises(ToolRefused, match="did not approve"):
                gated["run_shell_command"].run(context, {"command": "ls"})
        assert approver.asked == ["ls"]  # asked once, though `ls` is on the allow-list
    with pytest.raises(ValueError, match="python3"):
        ToolBinding(tool="run_shell_command", options={"allow": ["ls", "python3"]})
    with pytest.raises(ValueError, match="env"):
        ToolBinding(tool="run_shell_command", options={"allow": ["/usr/bin/env"]})


def test_where_no_sandbox_can_be_made_the_shell_is_refused_and_doctor_says_so(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bubblewrap that cannot make a sandbox (a real program that fails, as under a kernel
    forbidding user namespaces): every command refused with the reason, never run unconfined."""
    failing = tmp_path / "bwrap"
    failing.write_text("#!/bin/sh\necho 'No permissions to create new namespace' >&2\nexit 1\n")
    failing.chmod(0o755)
    monkeypatch.setenv("MULTIVERSE_BWRAP", str(failing))
    result = _context(home, shell_allow=("touch",)).call(
        "run_shell_command", {"command": "touch made.txt"}
    )
    assert not result.ok and "run_shell_command is refused" in str(result.error)
    assert "namespace" in str(result.error)
    assert not (home.run(RUN).workspace / "made.txt").exists()
    from app.doctor import diagnose, render_doctor

    mapping = home.root / "runtime-mapping.yaml"
    mapping.write_text(mapping.read_text("utf-8") + "\n"
                       "tool_mapping:\n  run_commands: {tool: run_shell_command}\n", "utf-8")
    report = diagnose(home.root, {})
    assert report.shell_sandbox and not report.healthy
    assert "✗ run_shell_command is refused" in render_doctor(report)
