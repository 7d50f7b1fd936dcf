"""What a model can do, asked of litellm once per model, and what a server refused.

Structured output (a JSON schema in `response_format`) and native tool calls differ by model and
server; litellm knows the hosted models, and self-hosted servers all decode with a schema.
"""

from __future__ import annotations

import threading

from multiverse.litellm_loader import load_litellm
from multiverse.llm import LlmCall
from multiverse.provider_keys import provider_of
from multiverse.provider_reply import Fault

# Self-hosted servers that decode with a JSON schema (llama.cpp, vLLM, Ollama, LM Studio, …).
SELF_HOSTED = frozenset({"ollama", "ollama_chat", "lm_studio", "vllm", "hosted_vllm", "llamafile"})
OPENAI_COMPATIBLE = frozenset({"openai", "text-completion-openai"})
SCHEMA_WORDS = ("response_format", "json_schema", "schema", "grammar")

_SCHEMA_REFUSED: set[tuple[str, str | None]] = set()
_SUPPORT_LOCK = threading.Lock()
_SUPPORT: dict[tuple[str, str | None, str], bool] = {}


def model_supports(model: str, api_base: str | None, feature: str) -> bool:
    """Whether litellm knows `model` to support `feature` ("schema" or "tools").

    A self-hosted server (Ollama, vLLM, llama.cpp or any OpenAI-compatible api_base) decodes
    with a JSON schema even when litellm does not know the model's name.
    """
    key = (model, api_base, feature)
    with _SUPPORT_LOCK:
        if key in _SUPPORT:
            return _SUPPORT[key]
    litellm = load_litellm()
    if feature == "schema":
        check = litellm.supports_response_schema
    else:
        check = litellm.supports_function_calling
    try:
        known = bool(check(model=model))
    except Exception:  # an unknown model name: litellm raises rather than answer no
        known = False
    if feature == "schema" and not known:
        provider = provider_of(model)
        known = provider in SELF_HOSTED or (provider in OPENAI_COMPATIBLE and bool(api_base))
    with _SUPPORT_LOCK:
        _SUPPORT[key] = known
    return known


def model_context_window(model: str) -> int | None:
    """litellm's max_input_tokens for `model`; None when it does not know the model."""
    try:
        info = load_litellm().get_model_info(model)
    except Exception:  # an unknown model name: litellm raises rather than answer None
        return None
    value = info.get("max_input_tokens") if isinstance(info, dict) else None
    return value if isinstance(value, int) else None


def constrained(call: LlmCall) -> bool:
    """Whether this call's answer is decoded with its schema."""
    if call.structured_output == "off" or (call.model, call.api_base) in _SCHEMA_REFUSED:
        return False
    return call.structured_output == "on" or model_supports(call.model, call.api_base, "schema")


def refuses_schema(fault: Fault) -> bool:
    """A server's refusal of the response_format itself (not of the rest of the call)."""
    text = fault.message.lower()
    return fault.status in (400, 422) and any(word in text for word in SCHEMA_WORDS)


def refuse_schema(call: LlmCall) -> None:
    """Remember that this call's server refused a schema: the JSON guard alone from now on."""
    _SCHEMA_REFUSED.add((call.model, call.api_base))
