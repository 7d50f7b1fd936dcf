"""The `multiverse` executable under evaluation, driven through its CLI only (any version)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

FINAL = frozenset({"COMPLETED", "FAILED", "CANCELLED"})


@dataclass(frozen=True)
class Multiverse:
    """One executable serving one home: every command gets --home and MULTIVERSE_HOME."""

    exe: Path
    home: Path

    def _env(self) -> dict[str, str]:
        return {**os.environ, "MULTIVERSE_HOME": str(self.home)}

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run one command in the home; its output is returned, never raised on."""
        command = [str(self.exe), *args, "--home", str(self.home)]
        try:
            return subprocess.run(
                command, cwd=self.home, env=self._env(), capture_output=True, text=True,
                timeout=timeout, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            # A command stuck behind a busy machine is asked again at the next poll.
            return subprocess.CompletedProcess(command, 124, "", f"timed out after {timeout} s")

    def init(self) -> None:
        """Make the home (the folder must exist)."""
        done = subprocess.run(
            [str(self.exe), "init", str(self.home)],
            cwd=self.home, env=self._env(), capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"multiverse init failed: {done.stderr.strip() or done.stdout}")

    def status(self, run_id: str | None = None) -> Any:
        """`status --json` parsed, or None when the command fails (a busy table, an old CLI)."""
        done = self.run("status", *([run_id] if run_id else []), "--json", timeout=60)
        if done.returncode != 0:
            return None
        try:
            return json.loads(done.stdout)
        except ValueError:
            return None

    def start(self, output: IO[str]) -> subprocess.Popen[str]:
        """The daemon as a child process, its console going to `output`."""
        return subprocess.Popen(
            [str(self.exe), "start", "--home", str(self.home)],
            cwd=self.home, env=self._env(), stdout=output, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip


def stop(process: subprocess.Popen[str], grace_s: float) -> str:
    """SIGTERM, then SIGKILL after the grace: how the daemon ended, in words."""
    if process.poll() is not None:
        return f"had exited ({process.returncode})"
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
        return f"stopped by SIGTERM ({process.returncode})"
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return f"killed: SIGTERM not obeyed within {grace_s:.0f} s"
