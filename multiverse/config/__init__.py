"""runtime-mapping.yaml (SPEC §10.2): tiers, budgets, tools, channels, and what serves each
tier here.

The public face of the configuration; its modules are private to it.
"""

from __future__ import annotations

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
    DaemonConfig,
    RuntimeMapping,
    Tier,
    TierConfig,
    ToolBinding,
    concrete_tools,
    describe_validation_error,
    excluded_tools,
    load_runtime_mapping,
    load_yaml,
    parse_runtime_mapping,
    read_config_text,
)
from multiverse.config.serving import (
    DPS_VERSION,
    GRACE_SECONDS,
    PROVIDER_KEYS,
    ProcessSpec,
    RemoteConfig,
    default_parallel_runs,
    own_host,
    provider_of,
    worker_time_limit,
    worker_visibility_seconds,
)
from multiverse.config.tiers import (
    PROCESS_GATE,
    EffectiveTier,
    OnceGate,
    debug_enabled,
    debug_mode_line_once,
    effective_tiers,
    mode_summary,
    resolve_tier,
    warn_degraded_once,
)

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
    "provider_of",
    "read_config_text",
    "resolve_tier",
    "server_reference",
    "warn_degraded_once",
    "worker_time_limit",
    "worker_visibility_seconds",
]
