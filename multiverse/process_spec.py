"""A tier served by an external command (SPEC §11, seed 001 §17): its command line and presets.

Pure: from the tier's settings to the argv of one session. The prompt goes to the child's
standard input, or into an argument written `{prompt}`; `{session_id}` in an argument receives
the session's UUID, so a CLI that keeps sessions is pinned to this one and never resumes "the
latest session here".

Each preset runs its CLI non-interactively with its permission mode set explicitly, so a child
never waits for an answer no one will give:
- `claude-code`: `claude -p --output-format text --permission-mode acceptEdits
  --session-id {session_id}` (file edits allowed; anything that would ask is refused by -p).
- `codex`: `codex exec --skip-git-repo-check --sandbox workspace-write
  -c approval_policy="never" -` (the prompt from stdin; exec never asks, approvals off).
- `gemini-cli`: `gemini --approval-mode auto_edit -p <a line pointing at stdin>` (edits
  allowed without asking; gemini appends -p to the prompt read on stdin).
`args` are added before the prompt argument (e.g. `-m`, a model provider of codex).
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
