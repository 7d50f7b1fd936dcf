"""`multiverse doctor` on the channels of runtime-mapping.yaml: target, secrets set, program found.

Never a secret's value: a webhook shows its URL without credentials or query (or the name of the
variable holding it), and each secret variable only as set or not set.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from multiverse.channel_config import ChannelConfig, CommandChannel, WebhookChannel


class ChannelCheck(BaseModel):
    """One configured channel as doctor sees it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    type: str
    target: str
    kinds: list[str]
    signed: bool = False
    secrets: dict[str, bool] = {}  # variable name → whether it is set
    program_found: bool = True

    @property
    def ok(self) -> bool:
        """Every secret it needs is set and its program exists."""
        return all(self.secrets.values()) and self.program_found


def _program_found(command: list[str], home_root: Path) -> bool:
    program = command[0]
    if "/" in program:  # run in the home folder, so a relative path starts there
        path = home_root / program
        return path.is_file() and os.access(path, os.X_OK)
    return shutil.which(program) is not None


def check_channel(
    channel: ChannelConfig, environ: Mapping[str, str], home_root: Path
) -> ChannelCheck:
    """What doctor reports of one channel."""
    secrets = {name: bool(environ.get(name, "").strip()) for name in channel.secret_envs()}
    found = True
    if isinstance(channel, CommandChannel):
        found = _program_found(channel.command, home_root)
    signed = isinstance(channel, WebhookChannel) and channel.secret_env is not None
    return ChannelCheck(
        name=channel.name, type=channel.type, target=channel.target(),
        kinds=[kind.value for kind in channel.kinds], signed=signed, secrets=secrets,
        program_found=found,
    )  # fmt: skip


def channel_lines(checks: list[ChannelCheck]) -> list[str]:
    """The report's Channels section (empty when none is configured)."""
    if not checks:
        return []
    lines = ["", "Channels"]
    for check in checks:
        kinds = ", ".join(check.kinds) or "all messages"
        signed = ", signed" if check.signed else ""
        lines.append(
            f"{'✓' if check.ok else '✗'} {check.name}: {check.type} → {check.target} "
            f"({kinds}{signed})"
        )
        if not check.program_found:
            lines.append(f"    program not found: {check.target}")
        for name, is_set in check.secrets.items():
            lines.append(f"    {name}: {'set' if is_set else 'not set'}")
    return lines
