"""How the model-backed Executor works for a tier: a native tool loop or one written answer.

Small self-hosted models often cannot call tools natively (llama.cpp serves their tool calls as
plain text), so `executor_mode: auto` asks litellm whether the model calls tools; a model litellm
does not know, served from an api_base, writes single-shot. The Orchestrator never knows which.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from multiverse.config import TierConfig

WorkMode = Literal["tools", "single_shot"]
DEFAULT_CONTEXT_WINDOW = 8192

Supports = Callable[[str, str | None, str], bool]
WindowLookup = Callable[[str], int | None]


def resolve_executor_mode(tier: TierConfig, supports: Supports) -> WorkMode:
    """The tier's mode: as configured, else tools when `supports(model, api_base, "tools")`."""
    if tier.executor_mode != "auto":
        return tier.executor_mode
    return "tools" if supports(tier.model, tier.api_base, "tools") else "single_shot"


def context_window(tier: TierConfig, lookup: WindowLookup) -> int:
    """Tokens one call may hold: the tier's, else what litellm knows of the model, else 8192."""
    if tier.context_window is not None:
        return tier.context_window
    known = lookup(tier.model)
    return known if known is not None and known > 0 else DEFAULT_CONTEXT_WINDOW
