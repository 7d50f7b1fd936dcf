"""`multiverse doctor` as data (SPEC §13): the home, the mapping, each tier's model and key, agents.

The diagnosis never shows a key's value, only its variable's name and whether it is set, and
never imports litellm: a reachability check is injected by the CLI as `ping`.

Also here: `multiverse doctor` on the channels of runtime-mapping.yaml.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from app.doctor_services import (
    McpServerCheck,
    WorkersCheck,
    check_mcp_servers,
    check_workers,
    mcp_lines,
    workers_lines,
)
from multiverse.agent_package import ROLES, load_agent_package, role_package_dir
from multiverse.config import (
    ChannelConfig,
    CommandChannel,
    ProcessSpec,
    RuntimeMapping,
    Tier,
    TierConfig,
    WebhookChannel,
    effective_tiers,
    load_runtime_mapping,
    mode_summary,
    resolve_tier,
)
from multiverse.errors import ConfigError, TableError
from multiverse.home import Home, Serving, probe
from multiverse.logs import mask_secrets, secret_values_in


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


# (model name, its tier's settings) → None when the model answered, else the error text.
Ping = Callable[[str, TierConfig], str | None]
LAYOUT = (
    "inbox", "db", "runs", "outputs", "assets", "guidelines", "db/templates/default_phases.md",
)  # fmt: skip


class Finding(BaseModel):
    """Base of the report's parts: plain, immutable data."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class HomeCheck(Finding):
    """Whether the home exists, has its layout and can be written."""

    root: str
    exists: bool
    missing: list[str]
    writable: bool
    write_error: str | None = None

    @property
    def ok(self) -> bool:
        """The home is usable as it is."""
        return self.exists and not self.missing and self.writable


class MappingCheck(Finding):
    """Whether runtime-mapping.yaml loaded."""

    path: str
    present: bool
    error: str | None = None


class TierCheck(Finding):
    """One tier: its model, what serves it here and why, its key, and reachability."""

    tier: Tier
    model: str
    mode: str
    summary: str
    degraded: bool
    key_env: str | None
    key_set: bool
    pinged: bool = False
    ping_error: str | None = None
    adapter_type: str = "sdk"
    command_error: str | None = None  # a process tier whose command cannot be found
    # Calls in flight at once to its model, across all runs (None: builtin, no calls), whether
    # `concurrency` set it, and the rates per minute kept before each call (None: no limit).
    calls_at_once: int | None = None
    concurrency_set: bool = False
    remote: bool = False  # a remote provider (multiverse.config.serving), not a server nearby
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None

    @property
    def ok(self) -> bool:
        """The tier is served as configured, and answered when pinged."""
        return not self.degraded and self.ping_error is None and self.command_error is None


class PackageCheck(Finding):
    """Whether one role's agent package loads with this mapping."""

    role: str
    loaded: bool
    tier: Tier | None = None
    serves: str | None = None
    agent_version: str | None = None
    prompt_version: str | None = None
    tools: list[str] = []
    error: str | None = None
    notices: list[str] = []  # tools the mapping left to their default, or turned off


class DoctorReport(Finding):
    """Everything `multiverse doctor` found."""

    home: HomeCheck
    mapping: MappingCheck
    tiers: list[TierCheck]
    packages: list[PackageCheck]
    channels: list[ChannelCheck] = []
    daemon: Serving | None = None  # not part of `healthy`: doctor is also run before a start
    parallel_runs: int | None = None  # runs a daemon advances at once (None: no mapping)
    # run_shell_command, where it is mapped: "" when its sandbox can be made, else why not
    shell_sandbox: str | None = None
    promises: list[str] = []  # what is asked for and nothing here can do (`check_promises`)
    workers: list[WorkersCheck] = []  # the queues of remote tiers and who serves them
    mcp_servers: list[McpServerCheck] = []  # each MCP server: answered, its tools

    @property
    def healthy(self) -> bool:
        """Nothing needs the user's attention."""
        return (
            self.home.ok
            and self.mapping.error is None
            and all(tier.ok for tier in self.tiers)
            and all(package.loaded for package in self.packages)
            and all(channel.ok for channel in self.channels)
            and not self.shell_sandbox
            and not self.promises
            and all(check.ok for check in self.workers)
            and all(check.ok for check in self.mcp_servers)
        )


def check_home(home: Home) -> HomeCheck:
    """Existence, layout and a real write probe (a temporary file, removed at once)."""
    root = home.root
    if not root.is_dir():
        return HomeCheck(root=str(root), exists=False, missing=list(LAYOUT), writable=False)
    missing = [name for name in LAYOUT if not (root / name).exists()]
    try:
        descriptor, probe = tempfile.mkstemp(prefix=".doctor-", dir=root)
        os.close(descriptor)
        os.unlink(probe)
    except OSError as error:
        return HomeCheck(
            root=str(root), exists=True, missing=missing, writable=False,
            write_error=error.strerror or str(error),
        )  # fmt: skip
    return HomeCheck(root=str(root), exists=True, missing=missing, writable=True)


def mask_values(text: str, environ: Mapping[str, str]) -> str:
    """`text` with the secrets of `environ` (and key-shaped strings) replaced by ***."""
    return mask_secrets(text, secret_values_in(environ))


def _ping_once(ping: Ping, config: TierConfig, environ: Mapping[str, str]) -> str | None:
    try:
        error = ping(config.model, config)
    # Whatever breaks the probe is a finding to show, not a reason for doctor to crash.
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    return None if error is None else mask_values(error, environ)


def check_tiers(
    mapping: RuntimeMapping, environ: Mapping[str, str], ping: Ping | None
) -> list[TierCheck]:
    """Each tier's effective mode, key and (when `ping` is given) reachability."""
    checks: list[TierCheck] = []
    answers: dict[tuple[str, str | None], str | None] = {}
    for tier, effective in effective_tiers(mapping, environ).items():
        config = mapping.tier_mapping[tier]
        pinged, error = False, None
        spec = config.process_spec()
        calls = effective.mode != "builtin"
        rated = calls and spec is None  # a command has no provider rates (call_limits)
        # A process tier is not pinged: one prompt to an agent CLI is a whole agent run.
        if ping is not None and effective.mode == "model" and spec is None:
            # Tiers sharing a model and server are asked once.
            target = (config.model, config.api_base)
            if target not in answers:
                answers[target] = _ping_once(ping, config, environ)
            pinged, error = True, answers[target]
        checks.append(
            TierCheck(
                tier=tier,
                model=effective.model,
                mode=effective.mode,
                summary=mode_summary(effective),
                degraded=effective.degraded,
                key_env=effective.key_env,
                key_set=effective.key_set,
                pinged=pinged,
                ping_error=error,
                adapter_type=effective.adapter_type,
                command_error=_command_error(spec),
                calls_at_once=config.calls_at_once() if calls else None,
                concurrency_set=config.concurrency is not None,
                remote=config.hosted,
                requests_per_minute=config.requests_per_minute if rated else None,
                tokens_per_minute=config.tokens_per_minute if rated else None,
            )
        )
    return checks


def _command_error(spec: ProcessSpec | None) -> str | None:
    """Why a process tier's command cannot run here, or None."""
    if spec is None or spec.executable() is not None:
        return None
    return (
        f"{spec.argv[0]!r} is not found on PATH: install it, or give its absolute path as the "
        "first item of `command` in runtime-mapping.yaml"
    )


def check_package(role: str, mapping: RuntimeMapping, environ: Mapping[str, str]) -> PackageCheck:
    """Load one shipped agent package and say which model would serve it."""
    try:
        package = load_agent_package(role_package_dir(role), mapping)
    except ConfigError as error:
        return PackageCheck(role=role, loaded=False, error=str(error))
    effective = resolve_tier(mapping.tier_mapping[package.tier], environ, package.tier)
    return PackageCheck(
        role=role, loaded=True, tier=package.tier, serves=mode_summary(effective),
        agent_version=package.agent_version, prompt_version=package.prompt_version,
        tools=sorted(binding.tool for binding in package.tools.values()),
        notices=package.notices,
    )  # fmt: skip


def check_promises(home: Home, mapping: RuntimeMapping, environ: Mapping[str, str]) -> list[str]:
    """What the mapping or the guidelines ask for and nothing here can do: a search provider
    whose key is unset, a recipe step whose tool type nothing provides."""
    from app.team import tool_types
    from executor.search import search_problem
    from planner import MCP_FILE, load_mcps

    found = []
    try:
        problem = search_problem(mapping, environ)
    except ConfigError as error:
        problem = str(error)
    if problem:
        found.append(f"web search: {problem}: nothing will be searched until it is")
    provided = tool_types(mapping)
    try:
        recipes = load_mcps(home.root)
    except (ConfigError, TableError) as error:
        return [*found, f"{MCP_FILE}: {error}"]
    for recipe in recipes:
        missing = sorted({s.tool_type for s in recipe.steps} - set(provided))
        if missing:
            found.append(
                f"{MCP_FILE}: recipe {recipe.name!r} needs tool type {', '.join(missing)}, which "
                f"nothing provides (provided: {', '.join(provided) or 'none'}): it is never used"
            )
    return found


def diagnose(home_root: Path, environ: Mapping[str, str], ping: Ping | None = None) -> DoctorReport:
    """Diagnose a home: layout, mapping, tiers and keys, agent packages (and models, by `ping`)."""
    home = Home(home_root.expanduser().resolve())
    mapping_check = MappingCheck(path=str(home.mapping_file), present=home.mapping_file.is_file())
    try:
        mapping: RuntimeMapping | None = load_runtime_mapping(home.root)
    except ConfigError as error:
        mapping = None
        mapping_check = mapping_check.model_copy(update={"error": str(error)})
    if mapping is None:
        skipped = "not checked: runtime-mapping.yaml did not load"
        packages = [PackageCheck(role=role, loaded=False, error=skipped) for role in ROLES]
        tiers: list[TierCheck] = []
        channels: list[ChannelCheck] = []
    else:
        tiers = check_tiers(mapping, environ, ping)
        channels = [check_channel(c, environ, home.root) for c in mapping.channels]
        packages = [check_package(role, mapping, environ) for role in ROLES]
    promises = [] if mapping is None else check_promises(home, mapping, environ)
    return DoctorReport(
        home=check_home(home),
        mapping=mapping_check,
        tiers=tiers,
        packages=packages,
        channels=channels,
        daemon=probe(home.state),
        parallel_runs=None if mapping is None else mapping.daemon.max_parallel_runs,
        shell_sandbox=_shell_sandbox(mapping),
        promises=promises,
        workers=[] if mapping is None else check_workers(mapping),
        mcp_servers=[] if mapping is None else check_mcp_servers(mapping, home.root, environ),
    )


def _shell_sandbox(mapping: RuntimeMapping | None) -> str | None:
    """Where the shell is mapped: "" when its sandbox can be made here, else why not."""
    if mapping is None or not any(b.tool == "run_shell_command"
                                  for b in mapping.tool_mapping.values()):  # fmt: skip
        return None
    from executor.tools import sandbox_problem

    return sandbox_problem() or ""


def _mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def _home_lines(check: HomeCheck) -> list[str]:
    if not check.exists:
        return [f"✗ home {check.root} does not exist; create it with `multiverse init`"]
    lines = [f"✓ home {check.root}"]
    if check.missing:
        lines.append(f"✗ layout: missing {', '.join(check.missing)} (run `multiverse init`)")
    else:
        lines.append("✓ layout complete")
    lines.append("✓ writable" if check.writable else f"✗ not writable: {check.write_error}")
    return lines


def _mapping_lines(check: MappingCheck) -> list[str]:
    if check.error is not None:
        return [f"✗ {check.error}"]
    if not check.present:
        return [f"✓ {check.path} not found: documented defaults (all tiers builtin)"]
    return [f"✓ {check.path} loaded"]


def _tier_line(check: TierCheck) -> list[str]:
    lines = [f"{_mark(check.ok)} {check.tier.value:<6} {check.summary}"]
    lines.append(f"    adapter_type: {check.adapter_type}")
    if check.command_error is not None:
        lines.append(f"    ✗ {check.command_error}")
    if check.key_env is not None:
        state = "set" if check.key_set else "not set"
        lines.append(f"    key {check.key_env}: {state}")
    if check.pinged:
        lines.append(f"    {_mark(check.ping_error is None)} " + (check.ping_error or "reachable"))
    if check.calls_at_once is not None:
        lines.append(f"    calls at once: {check.calls_at_once} ({_concurrency_source(check)})")
    rates = [
        f"{value:,} {unit} a minute"
        for value, unit in (
            (check.requests_per_minute, "requests"), (check.tokens_per_minute, "tokens"),
        )
        if value is not None
    ]  # fmt: skip
    if rates:
        lines.append(f"    rate limits: {', '.join(rates)} (kept before each call)")
    return lines


def _concurrency_source(check: TierCheck) -> str:
    if check.concurrency_set:
        return "set by `concurrency`"
    if check.adapter_type == "process":
        return "default for a command"
    return "default for a " + (
        "remote provider" if check.remote else "server on this machine or network"
    )


def _package_line(check: PackageCheck) -> str:
    if not check.loaded:
        return f"✗ {check.role}: {check.error}"
    tools = ", ".join(check.tools) or "none"
    return (
        f"✓ {check.role}: agent {check.agent_version}, prompt {check.prompt_version}, "
        f"tier {check.tier} → {check.serves}; tools: {tools}"
    )


def render_doctor(report: DoctorReport) -> str:
    """The report as plain text lines marked ✓ or ✗, ending with a verdict."""
    lines = ["Home", *_home_lines(report.home)]
    if report.daemon is not None:
        lines.append(f"{_mark(report.daemon.serving)} daemon: {report.daemon.line()}")
    lines += ["", "Runtime mapping"]
    lines += _mapping_lines(report.mapping)
    if report.tiers:
        lines += ["", "Tiers"]
        for tier in report.tiers:
            lines += _tier_line(tier)
    if report.parallel_runs is not None:
        lines.append(
            f"runs advanced at once: {report.parallel_runs} (`daemon.max_parallel_runs` if set, "
            "else derived from the tiers)"
        )
    lines += channel_lines(report.channels)
    lines += workers_lines(report.workers)
    lines += mcp_lines(report.mcp_servers)
    if report.shell_sandbox is not None:
        lines += ["", "Shell", f"✗ run_shell_command is refused: {report.shell_sandbox}"
                  if report.shell_sandbox else "✓ run_shell_command runs in a sandbox (bubblewrap)"]
    lines += ["", "Agent packages", *(_package_line(p) for p in report.packages)]
    lines += [f"  notice: {said}" for p in report.packages for said in p.notices]
    if report.promises:
        lines += ["", "Asked for, not possible here", *(f"✗ {said}" for said in report.promises)]
    lines += ["", _verdict(report)]
    return "\n".join(lines) + "\n"


def _verdict(report: DoctorReport) -> str:
    if not report.healthy:
        return "✗ some checks need attention (see ✗ above)"
    if report.daemon is not None and not report.daemon.serving:
        return "✓ the setup is good; no daemon serves this home: run `multiverse start`"
    return "✓ all good"
