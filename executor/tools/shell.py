"""run_shell_command (SPEC §12, §11): a bounded command in the run's workspace.

No shell interprets the command: it is split with shlex and run as an argument vector, so the
allow-list check on its first word is the whole truth (`ls; rm -rf x` is the program "ls;",
not two commands; pipes and redirections are not available). A command not on the allow-list
runs only if the approver (the approval bridge) says yes. The child gets a new session, so on
timeout its whole process group is killed, and a scrubbed environment, so keys in the daemon's
environment are not handed to it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, ClassVar

import structlog
from pydantic import Field

from executor.tools.base import Arguments, ModelTool, ToolContext, ToolResult

log = structlog.get_logger(__name__)

# Variables passed through to the child; everything else (API keys included) is dropped.
PASSED_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
_READ_CHUNK = 65536
_DRAIN_GRACE_SECONDS = 2.0


class _CappedReader(threading.Thread):
    """Drains a pipe, keeping at most `cap` bytes so a chatty child never blocks or floods."""

    def __init__(self, stream: IO[bytes], cap: int) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.cap = cap
        self.kept = bytearray()
        self.truncated = False

    def run(self) -> None:
        while chunk := os.read(self.stream.fileno(), _READ_CHUNK):
            room = self.cap - len(self.kept)
            if len(chunk) > room:
                self.truncated = True
            self.kept += chunk[: max(room, 0)]
        self.stream.close()


@dataclass(frozen=True)
class Outcome:
    """How a bounded child process ended."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool
    truncated: bool


def child_environment(workspace: Path) -> dict[str, str]:
    """The scrubbed environment a command runs with."""
    env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    env["HOME"] = str(workspace)
    return env


def run_bounded(argv: list[str], cwd: Path, timeout: float, cap: int) -> Outcome:
    """Run `argv` in `cwd` with a timeout and capped output; kills its process group on timeout."""
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=child_environment(cwd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert process.stdout is not None and process.stderr is not None
    readers = [_CappedReader(process.stdout, cap), _CappedReader(process.stderr, cap)]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        # Killed before it is reaped, so the group id cannot belong to anyone else yet.
        _kill_group(process.pid)
        process.wait()
    for reader in readers:
        reader.join(_DRAIN_GRACE_SECONDS)
    if any(reader.is_alive() for reader in readers):
        # Pipes still open: a background child of the command lives on in its group (whose id
        # Linux does not reuse while the group has members). Bounded means it goes too.
        _kill_group(process.pid)
        for reader in readers:
            reader.join(_DRAIN_GRACE_SECONDS)
    return Outcome(
        exit_code=None if timed_out else process.returncode,
        stdout=bytes(readers[0].kept),
        stderr=bytes(readers[1].kept),
        timed_out=timed_out,
        truncated=any(reader.truncated for reader in readers),
    )


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


class RunShellCommandArgs(Arguments):
    """Arguments of run_shell_command."""

    command: str = Field(
        description="A command line, split like a shell would split words; no pipes, no "
        "redirections, no ';' or '&&'."
    )


class RunShellCommand(ModelTool[RunShellCommandArgs]):
    """Runs one command in the run's workspace with a timeout and capped output."""

    name: ClassVar[str] = "run_shell_command"
    description: ClassVar[str] = (
        "Run one command (no shell: no pipes, redirections or chaining) in this run's "
        "workspace folder, with a timeout and capped output. Commands not on the allow-list "
        "need the user's approval."
    )
    arguments_model: ClassVar[type[Arguments]] = RunShellCommandArgs

    def execute(self, context: ToolContext, args: RunShellCommandArgs) -> ToolResult:
        """Run the command if allowed or approved."""
        try:
            argv = shlex.split(args.command)
        except ValueError as error:
            return ToolResult.failure(f"cannot split the command: {error}")
        if not argv:
            return ToolResult.failure("the command is empty")
        refusal = _permission(context, argv[0], args.command)
        if refusal is not None:
            return ToolResult.failure(refusal)
        context.workspace.mkdir(parents=True, exist_ok=True)
        limits = context.limits
        try:
            outcome = run_bounded(
                argv, context.workspace, limits.shell_timeout_seconds, limits.shell_max_output_bytes
            )
        except (FileNotFoundError, PermissionError) as error:
            return ToolResult.failure(f"cannot start {argv[0]!r}: {error.strerror}")
        return _result(outcome, limits.shell_timeout_seconds)


def _permission(context: ToolContext, program: str, command: str) -> str | None:
    if program in context.shell_allow:
        return None
    if context.approver is None:
        log.info("shell_command_denied", run_id=context.run_id, program=program, approver=False)
        return f"{program!r} is not on the allow-list and no approval is possible; refused"
    approved = context.approver("run_shell_command", {"command": command})
    log.info("shell_command_approval", run_id=context.run_id, program=program, approved=approved)
    if not approved:
        return f"{program!r} is not on the allow-list and the user did not approve it; refused"
    return None


def _result(outcome: Outcome, timeout: float) -> ToolResult:
    stdout = outcome.stdout.decode("utf-8", errors="replace")
    stderr = outcome.stderr.decode("utf-8", errors="replace")
    parts = [f"exit code: {outcome.exit_code}", "--- stdout ---", stdout, "--- stderr ---", stderr]
    if outcome.truncated:
        parts.append("[output truncated at the size cap]")
    output = "\n".join(parts)
    data = {"exit_code": outcome.exit_code, "truncated": outcome.truncated}
    if outcome.timed_out:
        error = f"timed out after {timeout:g} s; the command and its children were killed"
        return ToolResult(ok=False, output=output, error=error, data=data)
    if outcome.exit_code != 0:
        error = f"the command exited with code {outcome.exit_code}"
        return ToolResult(ok=False, output=output, error=error, data=data)
    return ToolResult(ok=True, output=output, data=data)
