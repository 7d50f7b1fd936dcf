"""The LLM gateway (SPEC §10.4): the one door to models, the data of a call, its cache, usage,
limits and the JSON guard. Only this package imports litellm, lazily.

The public face of the gateway; its modules are private to it.

Whether a tier's model answers at all: `doctor`'s reachability check (no retry, no cache).
"""

from __future__ import annotations

from typing import Protocol

from multiverse.gateway.calls import (
    ChatMessage,
    JsonGuardFailed,
    JsonResult,
    LlmAnswer,
    LlmCall,
    LlmError,
    LlmErrorCode,
    LooseJsonError,
    PromptError,
    PromptTemplate,
    RetryPolicy,
    ToolCall,
    ToolSpec,
    load_prompt,
    loose_parse,
    parse_prompt,
)
from multiverse.gateway.gateway import Gateway, ModelCalls, capability_failure
from multiverse.gateway.limits import (
    CallLimits,
    LlmCache,
    RateLimits,
    Reservation,
    endpoint_limits,
    endpoint_rates,
)
from multiverse.gateway.provider import load_litellm, model_context_window, model_supports
from multiverse.gateway.stream import (
    ENOUGH_FINISH,
    REPEAT_FINISH,
    TABLE_FINISH,
    cut_failure,
    paragraph_key,
    paragraphs,
    repetition,
    unwrap_document,
    without_repeats,
)
from multiverse.gateway.usage import (
    Budget,
    RoleUsage,
    UsageLedger,
    UsageTotals,
    carry_pending,
    combined,
    over_budget,
)

PING_TIMEOUT = 30.0


class PingTarget(Protocol):
    """What a reachability check needs of a tier's settings (config.TierConfig has it)."""

    api_base: str | None
    api_key_env: str | None
    timeout_seconds: float


def ping_model(model: str, settings: PingTarget) -> str | None:
    """Ask `model` for a few tokens once (no retry, no cache): None if it answered, else why."""
    call = LlmCall(
        role="doctor",
        agent_version="0",
        prompt_version="ping",
        scope="doctor:ping",
        model=model,
        api_base=settings.api_base,
        api_key_env=settings.api_key_env,
        messages=[{"role": "user", "content": "Reply with the word: ok"}],
        max_tokens=8,
        timeout_seconds=min(settings.timeout_seconds, PING_TIMEOUT),
    )
    retry = RetryPolicy(max_attempts=1, total_deadline=PING_TIMEOUT + 5)
    try:
        Gateway(retry=retry).complete(call)
    except LlmError as exc:
        return str(exc)
    return None


__all__ = [
    "ENOUGH_FINISH",
    "REPEAT_FINISH",
    "TABLE_FINISH",
    "Budget",
    "CallLimits",
    "ChatMessage",
    "Gateway",
    "JsonGuardFailed",
    "JsonResult",
    "LlmAnswer",
    "LlmCache",
    "LlmCall",
    "LlmError",
    "LlmErrorCode",
    "LooseJsonError",
    "ModelCalls",
    "PromptError",
    "PromptTemplate",
    "RateLimits",
    "Reservation",
    "RoleUsage",
    "ToolCall",
    "ToolSpec",
    "UsageLedger",
    "UsageTotals",
    "capability_failure",
    "carry_pending",
    "combined",
    "cut_failure",
    "endpoint_limits",
    "endpoint_rates",
    "load_litellm",
    "load_prompt",
    "loose_parse",
    "model_context_window",
    "model_supports",
    "over_budget",
    "paragraph_key",
    "paragraphs",
    "parse_prompt",
    "ping_model",
    "repetition",
    "unwrap_document",
    "without_repeats",
]
