"""The one door to models (SPEC §10.4): the only module that imports litellm, on first call.

It owns the retry loop (litellm and the OpenAI client are told not to retry), the JSON guard's
repair loop, the disk cache, the per-run ledger and the per-call log event.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, TypeVar

import structlog
from pydantic import BaseModel

from multiverse.jsonguard import judge, repair_messages
from multiverse.llm import (
    JsonGuardFailed,
    JsonResult,
    LlmAnswer,
    LlmCall,
    LlmError,
    LlmErrorCode,
    RetryPolicy,
    ToolCall,
    openai_request,
    parse_retry_after,
    sanitize_tool_names,
)
from multiverse.llm_cache import TEXT_MODE, CacheEntry, LlmCache
from multiverse.llm_usage import Budget, UsageLedger
from multiverse.secrets import mask_secrets, register_secret

log = structlog.get_logger(__name__)

T = TypeVar("T", bound=BaseModel)
MAX_REPAIRS = 2
MAX_ERROR_TEXT = 500
LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
PING_TIMEOUT = 30.0

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
            for name in LITELLM_LOGGERS:
                logger = logging.getLogger(name)
                logger.handlers.clear()
                logger.addHandler(logging.NullHandler())
                logger.propagate = False
            _litellm = litellm
    return _litellm


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


def _send(litellm: ModuleType, kwargs: dict[str, Any]) -> Any:
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
class _Reply:
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

    def after(self, earlier: _Reply | None) -> _Reply:
        """This reply, charged with what an earlier (cut) attempt used."""
        if earlier is None:
            return self
        return _Reply(
            self.text,
            self.tools,
            self.finish,
            self.prompt_tokens + earlier.prompt_tokens,
            self.completion_tokens + earlier.completion_tokens,
            self.cost + earlier.cost,
        )

    def answer(self, model: str, latency_ms: float, attempts: int) -> LlmAnswer:
        """The answer handed to the caller."""
        return LlmAnswer(
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


def _read_reply(litellm: ModuleType, response: Any, names: dict[str, str]) -> _Reply:
    choice = response.choices[0]
    back = {safe: original for original, safe in names.items()}
    usage = getattr(response, "usage", None)
    return _Reply(
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


class Gateway:
    """Model calls with retries, the JSON guard, the cache, the run ledger and a log event."""

    def __init__(
        self,
        cache: LlmCache | None = None,
        runs_root: Path | None = None,
        budget: Budget | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.cache = cache
        self.runs_root = runs_root
        self.budget = budget or Budget()
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._clock = clock
        self._jitter = jitter

    def ledger(self, run_id: str | None) -> UsageLedger | None:
        """The usage ledger of a run, or None when the call belongs to no run."""
        if run_id is None or self.runs_root is None:
            return None
        return UsageLedger(self.runs_root / run_id, self.budget)

    def complete(self, call: LlmCall) -> LlmAnswer:
        """One answer: from the cache, else from the model (retried, recorded, cached)."""
        entry = self.cache.get(call) if self.cache is not None else None
        if entry is not None:
            return self._serve_cached(call, entry)
        return self._paid(call, repairs=0, mode=TEXT_MODE)

    def complete_json(
        self, call: LlmCall, schema: type[T], check: Callable[[T], list[str]] | None = None
    ) -> JsonResult[T]:
        """A validated JSON answer; invalid answers are repaired up to twice, then it fails."""
        mode = f"json:{schema.__module__}.{schema.__qualname__}"
        entry = self.cache.get(call, mode) if self.cache is not None else None
        if entry is not None:
            verdict = judge(entry.answer.text, schema, check)
            # A cached answer that no longer passes the check (the world moved) is a miss.
            if verdict.value is not None:
                answer = self._serve_cached(call, entry)
                return JsonResult(
                    verdict.value, answer.text, entry.repairs > 0, entry.repairs, answer
                )
        attempt = call
        errors: list[str] = []
        answer_text = ""
        for repairs in range(MAX_REPAIRS + 1):
            answer = self._paid(attempt, repairs=repairs, mode=None)
            verdict = judge(answer.text, schema, check)
            if verdict.value is not None:
                if self.cache is not None:
                    self.cache.put(call, answer, mode, repairs)
                return JsonResult(verdict.value, answer.text, repairs > 0, repairs, answer)
            errors, answer_text = verdict.errors, answer.text
            log.info("llm_json_invalid", **_fields(call), repairs=repairs, errors=errors[:5])
            messages = [*attempt.messages, *repair_messages(answer.text, errors)]
            attempt = call.model_copy(update={"messages": messages})
        raise JsonGuardFailed(mask_secrets(answer_text), errors, MAX_REPAIRS + 1)

    def _serve_cached(self, call: LlmCall, entry: CacheEntry) -> LlmAnswer:
        began = self._clock()
        ledger = self.ledger(call.run_id)
        if ledger is not None:
            ledger.record_cache_hit(call.role)
        latency = (self._clock() - began) * 1000
        answer = entry.answer.model_copy(update={"cached": True, "latency_ms": latency})
        self._log(call, answer, entry.repairs)
        return answer

    def _paid(self, call: LlmCall, repairs: int, mode: str | None) -> LlmAnswer:
        """A real call: budget check, request, log, cache (when `mode`), then the ledger."""
        ledger = self.ledger(call.run_id)
        if ledger is not None:
            ledger.ensure_within_budget()
        answer = self._request(call)
        self._log(call, answer, repairs)
        if mode is not None and self.cache is not None:
            # Cached before the budget verdict: a paid answer is never paid for again.
            self.cache.put(call, answer, mode)
        if ledger is not None:
            ledger.record_call(call.role, answer)
        return answer

    def _request(self, call: LlmCall) -> LlmAnswer:
        """Attempts until an answer, a fatal error, no attempt left or the deadline."""
        litellm = load_litellm()
        names = sanitize_tool_names([tool.name for tool in call.tools])
        api_key = _api_key(call)
        began = self._clock()
        deadline = began + self.retry.total_deadline
        max_tokens, failures, requests = call.max_tokens, 0, 0
        earlier: _Reply | None = None
        while True:
            requests += 1
            timeout = max(0.001, min(call.timeout_seconds, deadline - self._clock()))
            kwargs = openai_request(call, names, api_key, max_tokens, timeout)
            response = _send(litellm, kwargs)
            if isinstance(response, Fault):
                failures += 1
                self._sleep(self._delay(call, response, failures, deadline))
                continue
            reply = _read_reply(litellm, response, names).after(earlier)
            if reply.cut_empty and earlier is None:
                # An empty answer cut by the limit: once more with twice the room.
                earlier, max_tokens = reply, max_tokens * 2
                log.info("llm_retry", **_fields(call), reason="length", max_tokens=max_tokens)
                continue
            latency = (self._clock() - began) * 1000
            return reply.answer(call.model, latency, requests)

    def _delay(self, call: LlmCall, fault: Fault, failures: int, deadline: float) -> float:
        """How long to wait before the next attempt; raises when no attempt is left."""
        where = f"HTTP {fault.status}" if fault.status is not None else "no HTTP status"
        if not fault.retryable:
            raise self._failure(
                call,
                LlmErrorCode.PROVIDER_ERROR,
                failures,
                f"{call.model} refused the call ({where}): {fault.message}",
            )
        delay = (
            fault.retry_after
            if fault.retry_after is not None
            else self.retry.backoff(failures, self._jitter())
        )
        remaining = deadline - self._clock()
        if failures < self.retry.max_attempts and delay < remaining:
            delay_s = round(delay, 3)
            log.info(
                "llm_retry", **_fields(call), status=fault.status, attempt=failures, delay_s=delay_s
            )
            return delay
        code = LlmErrorCode.TIMEOUT if fault.timeout else LlmErrorCode.TRANSIENT_EXHAUSTED
        why = (
            "no attempt left"
            if failures >= self.retry.max_attempts
            else f"waiting {delay:.1f} s would pass the {self.retry.total_deadline:.0f} s deadline"
        )
        raise self._failure(
            call,
            code,
            failures,
            f"{call.model} failed after {failures} attempt(s), {why}; "
            f"last error ({where}): {fault.message}",
        )

    def _failure(self, call: LlmCall, code: LlmErrorCode, attempts: int, message: str) -> LlmError:
        log.warning(
            "llm_call_failed", **_fields(call), code=code.value, attempts=attempts, error=message
        )
        return LlmError(code, message)

    def _log(self, call: LlmCall, answer: LlmAnswer, repairs: int) -> None:
        log.info(
            "llm_call",
            **_fields(call),
            prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens,
            cost_usd=answer.cost_usd,
            latency_ms=round(answer.latency_ms, 3),
            cache_hit=answer.cached,
            repairs=repairs,
            attempts=answer.attempts,
            finish_reason=answer.finish_reason,
        )


def _fields(call: LlmCall) -> dict[str, Any]:
    """What every log event of a call says about it."""
    return {
        "role": call.role,
        "model": call.model,
        "tier": call.tier,
        "run_id": call.run_id,
        "scope": call.scope,
    }


def _api_key(call: LlmCall) -> str | None:
    """The key, read from the environment at call time and registered for masking."""
    if not call.api_key_env:
        return None
    value = os.environ.get(call.api_key_env, "")
    if not value:
        raise LlmError(
            LlmErrorCode.PROVIDER_ERROR,
            f"the environment variable {call.api_key_env} (the key for {call.model}) is not set",
        )
    register_secret(value)
    return value


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
