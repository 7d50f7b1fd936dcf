"""What a provider answered, made plain (its faults classified, its reply read), what a model can
do, asked of litellm once per model, and the one place litellm is imported (SPEC §10.4).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from multiverse.config import provider_of
from multiverse.gateway.calls import LlmAnswer, LlmCall, ToolCall, parse_retry_after
from multiverse.gateway.stream import streamed
from multiverse.logs import mask_secrets

MAX_ERROR_TEXT = 500
RETRYABLE_STATUS = frozenset({408, 409, 425, 429})


@dataclass(frozen=True)
class Fault:
    """A provider error, classified: may it be retried, was it a timeout, how long to wait."""

    retryable: bool
    timeout: bool
    status: int | None
    retry_after: float | None
    message: str


def classify(exc: Exception) -> Fault | None:
    """The fault behind a litellm exception; None if it is not a provider error (our bug)."""
    import openai  # already loaded by litellm; every litellm provider error derives from it

    if not isinstance(exc, openai.APIError):
        return None
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    timeout = isinstance(exc, openai.APITimeoutError)
    retryable = (
        timeout
        or isinstance(exc, openai.APIConnectionError)
        or (status is not None and (status in RETRYABLE_STATUS or status >= 500))
    )
    message = mask_secrets(str(exc))[:MAX_ERROR_TEXT]
    return Fault(retryable, timeout, status, _retry_after(exc), message)


def send(
    litellm: ModuleType, kwargs: dict[str, Any], stop_repeats: bool = False,
    words: int | None = None, rows: int | None = None,
) -> Any:  # fmt: skip
    """The provider's response, or the Fault it raised; `stop_repeats`: read as a stream and
    stopped where the answer starts writing itself again, has `words`, or a table past `rows`
    (gateway.stream)."""
    if "stop" in kwargs and not _takes_stop(litellm, str(kwargs["model"])):
        # Stop sequences are a saving, not a need: a model that refuses them (OpenAI's
        # reasoning models) writes without them rather than failing the call.
        kwargs = {key: value for key, value in kwargs.items() if key != "stop"}
    base = kwargs.get("api_base")
    if stop_repeats and reports_timings(base):
        # A stream closed early gets no usage: llama-server, asked, puts its `timings` (the
        # prompt tokens its cache served among them) in every chunk. Asked only of a server
        # that has sent them already; another server may refuse a field it does not know.
        extra = {**(kwargs.get("extra_body") or {}), "timings_per_token": True}
        kwargs = {**kwargs, "extra_body": extra}
    # Returned, not raised: our error must not chain the provider's, whose text may echo a key.
    try:
        response = (streamed(litellm, kwargs, words, rows) if stop_repeats
                    else litellm.completion(**kwargs))  # fmt: skip
    except Exception as exc:
        fault = classify(exc)
        if fault is None:
            raise
        return fault
    if isinstance(getattr(response, "timings", None), dict):
        with _SUPPORT_LOCK:
            _TIMINGS.add(base)
    return response


_TIMINGS: set[object] = set()  # api_bases whose answers carried llama-server's `timings`


def reports_timings(api_base: object) -> bool:
    """Whether the server at `api_base` has answered with llama-server's `timings` object."""
    with _SUPPORT_LOCK:
        return api_base in _TIMINGS


def _takes_stop(litellm: ModuleType, model: str) -> bool:
    """Whether litellm says the model takes stop sequences (True when it does not know)."""
    try:
        params = litellm.get_supported_openai_params(model=model)
    except Exception:  # an unknown provider prefix: let the provider answer for itself
        return True
    return params is None or "stop" in params


def _retry_after(exc: Exception) -> float | None:
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        seconds = parse_retry_after(str(milliseconds))
        return None if seconds is None else seconds / 1000
    value = headers.get("retry-after") or headers.get("Retry-After")
    return parse_retry_after(None if value is None else str(value))


@dataclass(frozen=True)
class Reply:
    """The useful part of one provider response, with usage summed over earlier attempts."""

    text: str
    tools: list[ToolCall]
    finish: str
    prompt_tokens: int
    completion_tokens: int
    cost: float
    # Of prompt_tokens, those the provider's prompt cache served.
    cached_tokens: int = 0

    @property
    def cut_empty(self) -> bool:
        """An answer with nothing in it because the token limit cut it."""
        return self.finish == "length" and not self.text.strip() and not self.tools

    def after(self, earlier: Reply | None) -> Reply:
        """This reply, charged with what an earlier (cut) attempt used."""
        if earlier is None:
            return self
        return Reply(
            self.text,
            self.tools,
            self.finish,
            self.prompt_tokens + earlier.prompt_tokens,
            self.completion_tokens + earlier.completion_tokens,
            self.cost + earlier.cost,
            self.cached_tokens + earlier.cached_tokens,
        )

    def answer(self, model: str, latency_ms: float, attempts: int, constrained: bool) -> LlmAnswer:
        """The answer handed to the caller."""
        return LlmAnswer(
            constrained=constrained,
            text=self.text,
            tool_calls=self.tools,
            finish_reason=self.finish,
            model=model,
            prompt_tokens=self.prompt_tokens,
            cached_tokens=self.cached_tokens,
            completion_tokens=self.completion_tokens,
            cost_usd=self.cost,
            latency_ms=latency_ms,
            attempts=attempts,
        )


def read_reply(litellm: ModuleType, response: Any, names: dict[str, str]) -> Reply:
    """The text, tool calls, finish and usage of one provider response."""
    choice = response.choices[0]
    back = {safe: original for original, safe in names.items()}
    usage = getattr(response, "usage", None)
    return Reply(
        text=choice.message.content or "",
        tools=[
            _tool_call(item, number, back)
            for number, item in enumerate(getattr(choice.message, "tool_calls", None) or [])
        ],
        finish=str(choice.finish_reason or "stop"),
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cost=_cost(litellm, response),
        cached_tokens=cached_tokens(response),
    )


def cached_tokens(response: Any) -> int:
    """The prompt tokens the provider's own prompt cache served, as the provider reports them.

    litellm puts OpenAI's `usage.prompt_tokens_details.cached_tokens` there, and maps Anthropic's
    `cache_read_input_tokens` and DeepSeek's `prompt_cache_hit_tokens` into it. llama-server
    (older builds have no prompt_tokens_details) reports `timings.cache_n` in a top-level object
    of its own, which litellm keeps as an extra attribute of the response.
    """
    details = getattr(getattr(response, "usage", None), "prompt_tokens_details", None)
    reported = getattr(details, "cached_tokens", None)
    if isinstance(reported, int) and not isinstance(reported, bool):
        return max(0, reported)
    timings = getattr(response, "timings", None)
    cache_n = timings.get("cache_n") if isinstance(timings, dict) else None
    if isinstance(cache_n, int) and not isinstance(cache_n, bool):
        return max(0, cache_n)
    return 0


def _tool_call(item: Any, number: int, back: dict[str, str]) -> ToolCall:
    """One tool call of the answer, under the tool's original name."""
    name = str(item.function.name or "")
    arguments: dict[str, Any] = {}
    problem = None
    try:
        parsed = json.loads(item.function.arguments or "{}")
        if isinstance(parsed, dict):
            arguments = parsed
        else:
            problem = "tool arguments are not a JSON object"
    except ValueError as exc:
        problem = f"tool arguments are not valid JSON: {exc}"
    return ToolCall(
        id=str(item.id or f"call_{number}"),
        name=back.get(name, name),
        arguments=arguments,
        arguments_error=problem,
    )


def _cost(litellm: ModuleType, response: Any) -> float:
    hidden = getattr(response, "_hidden_params", None) or {}
    if "response_cost" in hidden:
        # litellm already priced it; None means the model is not in its price list.
        return float(hidden["response_cost"] or 0.0)
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # an unknown model has no price: free, never a crash
        return 0.0


LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")

_litellm: ModuleType | None = None
_import_lock = threading.Lock()


def load_litellm() -> ModuleType:
    """Import litellm once, offline and silent (see DEPENDENCY_NOTES)."""
    global _litellm
    if _litellm is not None:
        return _litellm
    with _import_lock:
        if _litellm is None:
            # Without it the import downloads a price list, and hangs on a hanging network.
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            import litellm

            litellm.suppress_debug_info = True
            if hasattr(litellm, "disable_hf_tokenizer_download"):
                litellm.disable_hf_tokenizer_download = True
            if hasattr(litellm, "telemetry"):
                litellm.telemetry = False
            # We register no litellm callback; its logging of each stream would start a thread
            # and an event loop per call (a third of a call's CPU) to feed none. The response's
            # price is set all the same.
            litellm.disable_streaming_logging = True
            for name in LITELLM_LOGGERS:
                logger = logging.getLogger(name)
                logger.handlers.clear()
                logger.addHandler(logging.NullHandler())
                logger.propagate = False
            _litellm = litellm
    return _litellm


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
