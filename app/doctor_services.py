"""`multiverse doctor`'s look at the services runtime-mapping.yaml names.

The MCP servers (issue 26): does each answer, and which of its tools the Executor is given (and
which not, and why). The remote tiers (issue 28): is each broker reachable, and which live
workers serve each queue the tiers send steps to.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from multiverse.agent_package import load_agent_package, role_package_dir
from multiverse.config import RuntimeMapping, Tier, excluded_tools, worker_visibility_seconds
from multiverse.errors import ConfigError, MultiverseError
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


class WorkersCheck(BaseModel):
    """One queue remote tiers send to: its broker, whether it answers, who serves it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tiers: list[Tier]
    broker: str  # shown without its password
    queue: str
    reachable: bool
    workers: list[str] = []
    error: str | None = None

    @property
    def ok(self) -> bool:
        """The broker answers and at least one live worker serves the queue."""
        return self.reachable and bool(self.workers)


def check_workers(mapping: RuntimeMapping) -> list[WorkersCheck]:
    """Each (broker, queue) of the remote tiers: reachable, and the live workers serving it."""
    places: dict[tuple[str, str], list[Tier]] = {}
    for tier, config in mapping.tier_mapping.items():
        if config.remote is not None:
            places.setdefault((config.remote.broker, config.remote.queue), []).append(tier)
    if not places:
        return []
    from multiverse.remote import (
        WORKERS_EXTRA,
        Exchange,
        celery_app,
        live_queues,
        missing_packages,
        shown_url,
    )

    missing = missing_packages()
    if missing:
        why = f"{' and '.join(missing)} missing: {WORKERS_EXTRA}"
        return [WorkersCheck(tiers=tiers, broker=shown_url(broker), queue=queue, reachable=False,
                             error=why) for (broker, queue), tiers in places.items()]  # fmt: skip
    checks = []
    serving: dict[str, dict[str, list[str]]] = {}
    for (broker, queue), tiers in places.items():
        shown = shown_url(broker)
        try:
            Exchange(broker).ping()
        except MultiverseError as error:
            checks.append(WorkersCheck(tiers=tiers, broker=shown, queue=queue, reachable=False,
                                       error=str(error)))  # fmt: skip
            continue
        if broker not in serving:
            serving[broker] = live_queues(celery_app(broker, worker_visibility_seconds([])))
        names = sorted(name for name, queues in serving[broker].items() if queue in queues)
        checks.append(WorkersCheck(tiers=tiers, broker=shown, queue=queue, reachable=True,
                                   workers=names))  # fmt: skip
    return checks


def workers_lines(checks: list[WorkersCheck]) -> list[str]:
    """The doctor's lines about remote tiers (none without one)."""
    if not checks:
        return []
    lines = ["", "Remote workers"]
    for check in checks:
        tiers = ", ".join(tier.value for tier in check.tiers)
        where = f"queue {check.queue!r} of {check.broker} ({tiers})"
        if not check.reachable:
            lines.append(f"✗ {where}: {check.error}")
        elif not check.workers:
            lines.append(f"✗ {where}: no live worker serves it; start one: "
                         f"multiverse worker --queue {check.queue}")  # fmt: skip
        else:
            lines.append(f"✓ {where}: served by {', '.join(check.workers)}")
    return lines
