"""runtime-mapping.yaml (SPEC §10.2): tiers, budgets, tools, channels, and what serves each
tier here.

The public face of the configuration; its modules are private to it.

What actually serves each tier in this environment (SPEC §10.4): its effective mode.

Decided without importing litellm: a tier whose model needs a key that is not set degrades to
`builtin`, with one warning per process, never a crash.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Mapping
from typing import Any, Literal

import structlog

from multiverse.config.connections import (
    ChannelConfig,
    ChannelSettings,
    CommandChannel,
    McpServerConfig,
    WebhookChannel,
    excluding_action,
    server_reference,
)
from multiverse.config.mapping import (
    BUILTIN,
    DEBUG_ENV,
    DaemonConfig,
    RuntimeMapping,
    Settings,
    Tier,
    TierConfig,
    ToolBinding,
    concrete_tools,
    describe_validation_error,
    excluded_tools,
    load_runtime_mapping,
    load_yaml,
    parse_runtime_mapping,
    parse_yaml,
    read_config_text,
)
from multiverse.config.serving import (
    DPS_VERSION,
    GRACE_SECONDS,
    KEYLESS_PROVIDERS,
    OPENAI_COMPATIBLE,
    PROVIDER_KEYS,
    ProcessSpec,
    RemoteConfig,
    default_parallel_runs,
    own_host,
    provider_of,
    worker_time_limit,
    worker_visibility_seconds,
)

log = structlog.get_logger(__name__)


Mode = Literal["builtin", "model"]


class EffectiveTier(Settings):
    """What actually serves a tier in this environment, and why."""

    tier: Tier | None = None
    model: str
    mode: Mode
    reason: str
    key_env: str | None = None
    key_set: bool = False
    api_base: str | None = None
    adapter_type: Literal["sdk", "process"] = "sdk"

    @property
    def degraded(self) -> bool:
        """A model was configured but the builtin engine serves instead."""
        return self.mode == BUILTIN and self.model.lower() != BUILTIN


def _decide(config: TierConfig, environ: Mapping[str, str]) -> tuple[Mode, str, str | None, bool]:
    """(mode, reason, key env var named, whether it is set) for a non-builtin model."""
    provider = provider_of(config.model)
    if config.api_base and not config.api_key_env and not own_host(config.model, config.api_base):
        # The gateway never sends a provider's key to another host: this server gets none.
        reason = f"api_base is set; calling {config.api_base} without a key"
        return "model", reason, None, False
    names = (config.api_key_env,) if config.api_key_env else PROVIDER_KEYS.get(provider)
    names = names or ()
    found = next((name for name in names if environ.get(name, "").strip()), None)
    if found is not None:
        return "model", f"{found} is set", found, True
    key_env = names[0] if names else None
    if provider in KEYLESS_PROVIDERS:
        return "model", f"{provider} needs no key", key_env, False
    # An explicit api_key_env means a key is expected even on a self-hosted server.
    keyless_server = provider in OPENAI_COMPATIBLE and not config.api_key_env
    if config.api_base and (keyless_server or key_env is None):
        reason = f"api_base is set; calling {config.api_base} without a key"
        return "model", reason, key_env, False
    if key_env is None:
        what = f"provider {provider!r}" if provider else f"the provider of {config.model!r}"
        return "model", f"no key is known for {what}; credentials not checked", None, False
    return "builtin", f"{key_env} is not set", key_env, False


def resolve_tier(
    tier_config: TierConfig, environ: Mapping[str, str], tier: Tier | None = None
) -> EffectiveTier:
    """Decide whether a tier's model can be used here or degrades to builtin."""
    mode: Mode
    spec = tier_config.process_spec()
    if spec is not None:
        found = spec.executable()
        return EffectiveTier(
            tier=tier, model=spec.name, mode="model", adapter_type="process",
            reason=f"runs `{' '.join(spec.argv)}`"
            + ("" if found else f"; {spec.argv[0]!r} is not found on PATH"),
        )  # fmt: skip
    if tier_config.model.lower() == BUILTIN:
        mode, reason, key_env, key_set = "builtin", "configured as builtin", None, False
    else:
        mode, reason, key_env, key_set = _decide(tier_config, environ)
    return EffectiveTier(
        tier=tier, model=tier_config.model, mode=mode, reason=reason, key_env=key_env,
        key_set=key_set, api_base=tier_config.api_base,
    )  # fmt: skip


def effective_tiers(
    mapping: RuntimeMapping, environ: Mapping[str, str]
) -> dict[Tier, EffectiveTier]:
    """The effective mode of every tier."""
    return {tier: resolve_tier(mapping.tier_mapping[tier], environ, tier) for tier in Tier}


def mode_summary(effective: EffectiveTier) -> str:
    """One phrase: what serves the tier and why (never a key's value)."""
    if effective.degraded:
        return f"builtin instead of {effective.model} ({effective.reason})"
    if effective.mode == BUILTIN:
        return f"builtin ({effective.reason})"
    return f"{effective.model} ({effective.reason})"


class OnceGate:
    """Remembers what was already said in this process, so a warning is said once."""

    def __init__(self) -> None:
        self._seen: set[Hashable] = set()
        self._lock = threading.Lock()

    def first(self, key: Hashable) -> bool:
        """True the first time `key` is seen, False ever after."""
        with self._lock:
            if key in self._seen:
                return False
            self._seen.add(key)
            return True


PROCESS_GATE = OnceGate()


def warn_degraded_once(
    effective: Mapping[Tier, EffectiveTier] | Iterable[EffectiveTier],
    log: Any = log,
    gate: OnceGate = PROCESS_GATE,
) -> list[EffectiveTier]:
    """One warning line per process for the tiers that degrade to builtin; returns them."""
    tiers = list(effective.values()) if isinstance(effective, Mapping) else list(effective)
    warned = [
        item for item in tiers
        if item.degraded and gate.first(("degraded", item.tier, item.model, item.reason))
    ]  # fmt: skip
    if warned:
        log.warning(
            "tier_degraded_to_builtin",
            tiers={str(item.tier): f"{item.model} ({item.reason})" for item in warned},
            hint="set the key or change runtime-mapping.yaml; the offline engine serves meanwhile",
        )
    return warned


def debug_enabled(environ: Mapping[str, str]) -> bool:
    """MULTIVERSE_DEBUG=1 asks for the effective-mode line."""
    return environ.get(DEBUG_ENV, "").strip() == "1"


def debug_mode_line_once(
    effective: Mapping[Tier, EffectiveTier], gate: OnceGate = PROCESS_GATE
) -> str | None:
    """The one line per process listing each tier's effective mode; None once said."""
    if not gate.first("debug_mode_line"):
        return None
    parts = [f"{tier}={mode_summary(item)}" for tier, item in effective.items()]
    return "multiverse effective modes: " + "; ".join(parts)


__all__ = [
    "DPS_VERSION",
    "GRACE_SECONDS",
    "PROCESS_GATE",
    "PROVIDER_KEYS",
    "ChannelConfig",
    "ChannelSettings",
    "CommandChannel",
    "DaemonConfig",
    "EffectiveTier",
    "McpServerConfig",
    "OnceGate",
    "ProcessSpec",
    "RemoteConfig",
    "RuntimeMapping",
    "Tier",
    "TierConfig",
    "ToolBinding",
    "WebhookChannel",
    "concrete_tools",
    "debug_enabled",
    "debug_mode_line_once",
    "default_parallel_runs",
    "describe_validation_error",
    "effective_tiers",
    "excluded_tools",
    "excluding_action",
    "load_runtime_mapping",
    "load_yaml",
    "mode_summary",
    "own_host",
    "parse_runtime_mapping",
    "parse_yaml",
    "provider_of",
    "read_config_text",
    "resolve_tier",
    "server_reference",
    "warn_degraded_once",
    "worker_time_limit",
    "worker_visibility_seconds",
]
