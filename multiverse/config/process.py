"""A tier served by an external command (SPEC §11, seed 001 §17): the presets of known agent
CLIs, and how one session of such a command is started and bounded.
"""

from __future__ import annotations

import shutil
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Preset = Literal["claude-code", "codex", "gemini-cli"]
PROMPT = "{prompt}"
SESSION = "{session_id}"
DPS_VERSION = "rawp-dps-1.0"
GRACE_SECONDS = 5.0

PRESETS: dict[str, tuple[list[str], list[str]]] = {
    # preset: (the command, the arguments that end it: the prompt's place)
    "claude-code": (
        ["claude", "-p", "--output-format", "text", "--permission-mode", "acceptEdits",
         "--session-id", SESSION],
        [],
    ),
    "codex": (
        ["codex", "exec", "--skip-git-repo-check", "--sandbox", "workspace-write",
         "-c", 'approval_policy="never"'],
        ["-"],
    ),
    "gemini-cli": (
        ["gemini", "--approval-mode", "auto_edit"],
        ["-p", "Do what the instructions above (on standard input) say."],
    ),
}  # fmt: skip


class ProcessSpec(BaseModel):
    """How to start one session of a tier's command, and its limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    argv: list[str] = Field(min_length=1)
    preset: Preset | None = None
    timeout_seconds: float = Field(gt=0)
    # A child that prints nothing on stdout or stderr for this long is stopped (None: never).
    no_output_timeout_seconds: float | None = Field(default=None, gt=0)
    # Environment variables passed through besides the basics and the provider keys.
    pass_env: list[str] = Field(default_factory=list)

    @property
    def name(self) -> str:
        """What the tier is called in logs and reports: the command's name."""
        return f"process:{self.argv[0]}"

    def prompt_on_stdin(self) -> bool:
        """Whether the prompt goes to standard input (no `{prompt}` argument)."""
        return not any(PROMPT in argument for argument in self.argv)

    def command_line(self, prompt: str, session_id: str) -> list[str]:
        """The argv of one session: `{prompt}` and `{session_id}` filled in."""
        return [
            argument.replace(SESSION, session_id).replace(PROMPT, prompt) for argument in self.argv
        ]

    def executable(self) -> str | None:
        """The command's absolute path if it can be found (on PATH or as a path), else None."""
        return shutil.which(self.argv[0])


def process_argv(command: list[str] | None, preset: Preset | None, args: list[str]) -> list[str]:
    """The argv a tier's `command` / `preset` / `args` describe (the command wins)."""
    if command:
        return [*command, *args]
    if preset is None:
        raise ValueError("a process tier needs a command or a preset")
    head, tail = PRESETS[preset]
    return [*head, *args, *tail]
