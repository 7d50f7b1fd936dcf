"""`multiverse doctor`'s look at the MCP servers of runtime-mapping.yaml (issue 26): does each
answer, and which of its tools the Executor is given (and which not, and why)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from multiverse.agent_package import load_agent_package, role_package_dir
from multiverse.config import RuntimeMapping, excluded_tools
from multiverse.errors import ConfigError
from multiverse.logs import mask_secrets, secret_values_in

EXECUTOR = "executor"


class McpServerCheck(BaseModel):
    """One MCP server: where it is, whether it answered, the tools given and those withheld."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    transport: Literal["stdio", "http"]
    target: str  # the program, or the URL without its query
    answered: bool
    tools: list[str] = []  # given to the Executor, under these names
    approval: list[str] = []  # of those, the ones each call of which asks the user
    withheld: dict[str, str] = {}  # listed by the server, not given: tool → why
    unset: list[str] = []  # variables the server's `env` or `header_envs` name that are not set
    error: str | None = None

    @property
    def ok(self) -> bool:
        """The server answered with its tools."""
        return self.answered


def check_mcp_servers(
    mapping: RuntimeMapping, home_root: Path, environ: Mapping[str, str]
) -> list[McpServerCheck]:
    """Open each configured server (in the home), list its tools, and close it again."""
    if not mapping.mcp_servers:
        return []
    from executor.tools import McpPlace, McpToolSet, builtin_tools

    try:
        card = load_agent_package(role_package_dir(EXECUTOR), mapping).card
        excluded = excluded_tools(mapping, card.forbidden_actions)
    except ConfigError:
        excluded = {}  # said in the Agent packages section
    with McpToolSet(mapping.mcp_servers, McpPlace(home=home_root), excluded, builtin_tools(),
                    environ=environ) as found:  # fmt: skip
        servers = list(found.servers)
    secrets = secret_values_in(environ)
    checks = []
    for server in servers:
        config = server.config
        named = [*config.env, *config.header_envs.values()]
        checks.append(McpServerCheck(
            name=server.name, transport=config.transport, target=config.target(),
            answered=server.error is None, tools=[tool.name for tool in server.tools],
            approval=[tool.name for tool in server.tools if tool.requires_approval],
            withheld=server.withheld, unset=[name for name in named if not environ.get(name)],
            error=None if server.error is None else mask_secrets(server.error, secrets),
        ))  # fmt: skip
    return checks


def mcp_lines(checks: list[McpServerCheck]) -> list[str]:
    """The doctor's lines about MCP servers (none without one)."""
    if not checks:
        return []
    lines = ["", "MCP servers (tools of the Executor)"]
    for check in checks:
        where = f"{check.name} ({check.transport}: {check.target})"
        if not check.answered:
            lines.append(f"✗ {where}: {check.error}")
        else:
            lines.append(f"✓ {where}: tools {', '.join(check.tools) or 'none'}")
        if check.approval:
            lines.append(f"    asks before each call: {', '.join(check.approval)}")
        lines += [f"    not given: {tool}: {why}" for tool, why in check.withheld.items()]
        lines += [f"    {name}: not set" for name in check.unset]
    return lines
