"""What a provider answered, made plain: its faults classified, its reply read (SPEC §10.4).

Pure functions over litellm's response and exception objects; the gateway owns the loop.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from multiverse.llm import LlmAnswer, ToolCall, parse_retry_after
from multiverse.secrets import mask_secrets

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


def send(litellm: ModuleType, kwargs: dict[str, Any]) -> Any:
    """The provider's response, or the Fault it raised."""
    # Returned, not raised: our error must not chain the provider's, whose text may echo a key.
    try:
        return litellm.completion(**kwargs)
    except Exception as exc:
        fault = classify(exc)
        if fault is None:
            raise
        return fault


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
            completion_tokens=self.completion_tokens,
            cost_usd=self.cost,
            latency_ms=latency_ms,
            attempts=attempts,
        )


def read_reply(litellm: ModuleType, response: Any, names: dict[str, str]) -> Reply:
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
    )


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
