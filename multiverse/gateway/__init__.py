"""The LLM gateway (SPEC §10.4): the one door to models, the data of a call, its cache, usage,
limits and the JSON guard. Only this package imports litellm, lazily.

The public face of the gateway; its modules are private to it.
"""

from __future__ import annotations

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
    ToolCall,
    ToolSpec,
    load_prompt,
    loose_parse,
    parse_prompt,
)
from multiverse.gateway.cuts import cut_failure, repetition
from multiverse.gateway.gateway import Gateway, ModelCalls, capability_failure
from multiverse.gateway.limits import (
    CallLimits,
    LlmCache,
    RateLimits,
    Reservation,
    endpoint_limits,
    endpoint_rates,
)
from multiverse.gateway.ping import ping_model
from multiverse.gateway.provider import load_litellm, model_context_window, model_supports
from multiverse.gateway.stream import (
    ENOUGH_FINISH,
    REPEAT_FINISH,
    paragraph_key,
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

__all__ = [
    "ENOUGH_FINISH",
    "REPEAT_FINISH",
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
    "parse_prompt",
    "ping_model",
    "repetition",
    "without_repeats",
]
