"""Choosing each role's implementation from runtime-mapping.yaml (SPEC §15: roles behind
interfaces). The Orchestrator receives its `Collaborators` and never learns which
implementation it has.

Each role's agent card names its tier; a tier whose effective mode is a model gets the
model-backed role, any other the builtin one. Model-backed roles are imported only when needed,
and importing this module never imports litellm (the gateway loads it on the first call).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import structlog

from communicator import BuiltinCommunicator, Speaker, print_to_console
from communicator.channels import open_channels
from executor.builtin import BuiltinExecutor
from multiverse.agent_package import load_agent_package, role_package_dir
from multiverse.config import (
    PROCESS_GATE,
    EffectiveTier,
    OnceGate,
    RuntimeMapping,
    Tier,
    TierConfig,
    debug_enabled,
    debug_mode_line_once,
    effective_tiers,
    parse_runtime_mapping,
    read_config_text,
    warn_degraded_once,
)
from multiverse.errors import ConfigError, MultiverseError
from multiverse.home import Home
from multiverse.roles import CommunicatorRole, ExecutorRole, PlannerRole
from orchestrator.crew import DEFAULT_TOOL_TYPES, Collaborators, Team
from planner.builtin import BuiltinPlanner

if TYPE_CHECKING:
    from executor.search import WebSetup
    from multiverse.gateway import CallLimits, Gateway, RateLimits

log = structlog.get_logger(__name__)
ROLE_NAMES = ("planner", "executor", "communicator")


def tool_types(mapping: RuntimeMapping) -> tuple[str, ...]:
    """The specialised tool types the mapping provides."""
    return tuple(name for name in DEFAULT_TOOL_TYPES if mapping.binding(name) is not None)


def print_to_stderr(text: str) -> None:
    """The channel of the MULTIVERSE_DEBUG line: standard error, flushed."""
    sys.stderr.write(text.rstrip("\n") + "\n")
    sys.stderr.flush()


def role_tiers(
    mapping: RuntimeMapping,
    gate: OnceGate = PROCESS_GATE,
    notice: Callable[[str], None] = print_to_stderr,
) -> dict[str, Tier]:
    """Each role's tier, read from its agent card (the package is loaded afresh); what the
    mapping left to a default or turned off is said once (`notice`)."""
    tiers = {}
    for role in ROLE_NAMES:
        package = load_agent_package(role_package_dir(role), mapping)
        for said in package.notices:
            log.info("tool_notice", role=role, notice=said)
            if gate.first(("tool_notice", said)):
                notice(f"notice: {said}")
        tiers[role] = package.tier
    return tiers


def model_backed_roles(
    tiers: Mapping[str, Tier], effective: Mapping[Tier, EffectiveTier]
) -> frozenset[str]:
    """The roles whose tier is effectively served by a model (pure)."""
    return frozenset(role for role, tier in tiers.items() if effective[tier].mode == "model")


def make_gateway(
    home: Home,
    mapping: RuntimeMapping,
    limits: CallLimits | None = None,
    rates: RateLimits | None = None,
) -> Gateway:
    """The process's one gateway: disk cache in the home's state, per-run ledger and budget,
    calls in flight and rates per minute per model endpoint, shared by every run (on a worker:
    the daemon's, through its desk)."""
    from multiverse.gateway import (
        Budget,
        CallLimits,
        Gateway,
        LlmCache,
        RateLimits,
        endpoint_limits,
        endpoint_rates,
    )

    budget = Budget(
        max_tokens_per_run=mapping.budget.max_tokens_per_run,
        max_cost_per_run_usd=mapping.budget.max_cost_per_run_usd,
    )
    return Gateway(
        cache=LlmCache(home.state / "llm_cache"),
        runs_root=home.runs,
        budget=budget,
        pending_root=home.pending_usage,
        state_root=home.state,
        limits=limits or CallLimits(endpoint_limits(mapping.tier_mapping.values())),
        rates=rates or RateLimits(endpoint_rates(mapping.tier_mapping.values())),
    )


def _planner(
    home: Home, mapping: RuntimeMapping, served: Mapping[Tier, TierConfig], gateway: Gateway | None
) -> PlannerRole:
    if gateway is None:
        return BuiltinPlanner(home.root)
    from planner.model import ModelPlanner

    # Every model-backed tier: the mode decision (LOW) and escalation use them as well.
    return ModelPlanner(gateway, mapping, served, home.root)


def asked_mode(config: TierConfig) -> str:
    """What a tier's configuration asks to serve it with (pure): builtin, model or process."""
    if config.adapter_type == "process":
        return "process"
    return "model" if config.calls_a_model else "builtin"


def executor_role(
    home: Home,
    mapping: RuntimeMapping,
    tier: Tier,
    gateway: Gateway | None,
    web: WebSetup,
    served: Mapping[Tier, TierConfig] | None = None,
) -> ExecutorRole:
    """The Executor of this tier: on `multiverse worker`s for a remote tier; else served by its
    command, its model (with a gateway) or the builtin engine; a model-backed one escalates
    to the `served` tiers its card names."""
    builtin = BuiltinExecutor(web.research, web.unavailable)
    config = mapping.tier_mapping[tier]
    if config.remote is not None:
        from multiverse.remote import WORKERS_EXTRA, missing_packages

        missing = missing_packages()
        if missing:
            raise ConfigError(
                f"tier {tier} is remote (`remote:` in runtime-mapping.yaml), which needs "
                f"{' and '.join(missing)}: {WORKERS_EXTRA}, or remove `remote:`"
            )
        from executor.remote import RemoteExecutor
        from multiverse.remote import Exchange, RateDesk

        # The worker's environment, not the daemon's, decides whether a key is there; the
        # daemon's limits admit the workers' calls.
        asked = asked_mode(config)
        desk = None
        if asked != "builtin":
            limits = gateway if gateway is not None else make_gateway(home, mapping)
            desk = RateDesk(Exchange(config.remote.broker), limits.limits, limits.rates)
        return RemoteExecutor(home.root, mapping, tier, asked, fallback=builtin, desk=desk)
    if gateway is None:
        return builtin
    spec = mapping.tier_mapping[tier].process_spec()
    if spec is not None:
        from executor.process import ProcessExecutor

        return ProcessExecutor(spec, home.root, fallback=builtin)
    from executor.model import ModelExecutor

    return ModelExecutor(gateway, mapping, mapping.tier_mapping[tier], home.root,
                         fallback=builtin, web_search_provider=web.provider,
                         web_research=web.research, served=served)  # fmt: skip


def _communicator(
    home: Home,
    mapping: RuntimeMapping,
    tier: Tier,
    gateway: Gateway | None,
    served: Mapping[Tier, TierConfig],
) -> CommunicatorRole:
    if gateway is None:
        return BuiltinCommunicator()
    from communicator.model import ModelCommunicator

    return ModelCommunicator(home, gateway, mapping, mapping.tier_mapping[tier], served=served)


def build_team(
    home: Home,
    mapping: RuntimeMapping,
    environ: Mapping[str, str],
    gate: OnceGate = PROCESS_GATE,
    debug_channel: Callable[[str], None] = print_to_stderr,
) -> Team:
    """The roles for this mapping: model-backed where a tier's model is usable, builtin
    elsewhere; a wrong option is a ConfigError before any role is made."""
    effective = effective_tiers(mapping, environ)
    warn_degraded_once(effective, gate=gate)
    if debug_enabled(environ):
        line = debug_mode_line_once(effective, gate=gate)
        if line is not None:
            debug_channel(line)
    tiers = role_tiers(mapping, gate, debug_channel)
    backed = model_backed_roles(tiers, effective)
    served = {
        tier: mapping.tier_mapping[tier] for tier, item in effective.items() if item.mode == "model"
    }
    gateway = make_gateway(home, mapping) if backed else None
    from executor.search import web_setup

    web = web_setup(mapping, environ)  # a wrong web option is a ConfigError before any work

    def serving(role: str) -> Gateway | None:
        return gateway if role in backed else None

    log.info("crew_built", model_backed=sorted(backed), gateway=gateway is not None)
    return Team(
        planner=_planner(home, mapping, served, serving("planner")),
        executor=executor_role(
            home, mapping, tiers["executor"], serving("executor"), web, served
        ),
        communicator=_communicator(
            home, mapping, tiers["communicator"], serving("communicator"), served
        ),
        tool_types=tool_types(mapping),
        search_provider=web.research.provider_label if web.research is not None else None,
    )


def build_collaborators(
    home: Home,
    mapping: RuntimeMapping,
    environ: Mapping[str, str],
    console: Callable[[str], None] = print_to_console,
    debug_channel: Callable[[str], None] = print_to_stderr,
    gate: OnceGate = PROCESS_GATE,
) -> Collaborators:
    """The Orchestrator's collaborators for this home, with the mapping's roles."""
    team = build_team(home, mapping, environ, gate, debug_channel)
    channels = open_channels(home, mapping.channels, environ)
    return Collaborators(
        home=home,
        planner=team.planner,
        executor=team.executor,
        speaker=Speaker(home, team.communicator, console, channels),
        tool_types=team.tool_types,
        search_provider=team.search_provider,
    )


class Reloader:
    """runtime-mapping.yaml read again when it changes: the roles of a valid edit for the
    steps that start after it; an invalid edit said once, the last good mapping kept."""

    def __init__(self, home: Home, environ: Mapping[str, str]) -> None:
        self.home, self.environ = home, environ
        self._text = self._read()  # as the daemon started with it
        self._refused: str | None = None

    def _read(self) -> str | None:
        """The file's text (None: no file, the defaults); ConfigError if it cannot be read."""
        path = self.home.mapping_file
        return read_config_text(path) if path.exists() else None

    def __call__(self) -> tuple[Team, RuntimeMapping] | str | None:
        """The new team and mapping; the reason an edit was refused (said once: then None);
        None when the file did not change."""
        try:
            text = self._read()
            if text == self._text:
                return None
            source = str(self.home.mapping_file)
            mapping = RuntimeMapping() if text is None else parse_runtime_mapping(text, source)
            team = build_team(self.home, mapping, self.environ)
        except MultiverseError as error:
            reason = str(error)
            said, self._refused = self._refused, reason
            return None if reason == said else reason
        self._text, self._refused = text, None
        return team, mapping
