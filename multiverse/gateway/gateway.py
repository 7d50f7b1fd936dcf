"""The one door to models (SPEC §10.4): every model call goes through here.

litellm is loaded on the first call (multiverse.gateway.provider). The gateway owns the retry loop
(litellm and the OpenAI client are told not to retry), the JSON guard's repair loop, what
becomes of an answer cut by the limit (multiverse.gateway.stream), the disk cache, the per-run
ledger and the per-call log event.

Also here: a model call served by a process tier.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import structlog
from pydantic import BaseModel

from multiverse.config import own_host
from multiverse.errors import StepInterrupted
from multiverse.gateway.calls import (
    Attempt,
    JsonGuardFailed,
    JsonResult,
    LlmAnswer,
    LlmCall,
    LlmError,
    LlmErrorCode,
    RetryPolicy,
    answer_schema,
    json_schema_format,
    judge,
    openai_request,
    repair_messages,
    sanitize_tool_names,
)
from multiverse.gateway.limits import (
    TEXT_MODE,
    CacheEntry,
    CallLimits,
    LlmCache,
    RateLimits,
    estimated_tokens,
    model_key,
)
from multiverse.gateway.provider import (
    Fault,
    Reply,
    constrained,
    load_litellm,
    model_context_window,
    model_supports,
    read_reply,
    refuse_schema,
    refuses_schema,
    send,
)
from multiverse.gateway.stream import (
    continuable,
    continuation_messages,
    cut_failure,
    join_parts,
    joined,
    more_room,
    repetition,
)
from multiverse.gateway.usage import Budget, UsageLedger
from multiverse.logs import mask_secrets, register_secret
from multiverse.processes import RECORDS, Place, ProcessSession

PROCESS_CODES = {
    "TIMEOUT": LlmErrorCode.TIMEOUT,
    "NO_OUTPUT": LlmErrorCode.NO_OUTPUT,
    "SIGNAL_EXIT": LlmErrorCode.SIGNAL_EXIT,
    "PROCESS_EXIT": LlmErrorCode.PROCESS_EXIT,
}


def process_prompt(call: LlmCall, response_format: dict[str, Any] | None) -> str:
    """The call's messages as one text, each under its role; then the answer's schema."""
    parts = [f"## {message['role']}\n\n{message['content']}" for message in call.messages]
    if response_format is not None:
        schema = response_format.get("json_schema", {}).get("schema", response_format)
        parts.append(
            "## answer format\n\nAnswer with one JSON object only (no prose, no code fence) "
            f"that validates against this JSON schema:\n\n{json.dumps(schema, ensure_ascii=False)}"
        )
    return "\n\n".join(parts) + "\n"


def process_place(call: LlmCall, runs_root: Path | None, state_root: Path | None) -> Place:
    """Where the call's session works: its run's folder, else the home's state."""
    if call.run_id is not None and runs_root is not None:
        run = runs_root / call.run_id
        cwd, events, logs, records = run / "workspace", run / "events.jsonl", run / "logs", run
    else:
        base = state_root or Path.cwd() / ".multiverse"
        cwd, events, logs, records = base / "sessions", base / "events.jsonl", base / "logs", base
    cwd.mkdir(parents=True, exist_ok=True)
    home = runs_root.parent if runs_root is not None else cwd
    return Place(home=home, cwd=cwd, events=events, logs=logs, records=records / RECORDS,
                 run_id=call.run_id, role=call.role)  # fmt: skip


log = structlog.get_logger(__name__)

T = TypeVar("T", bound=BaseModel)
MAX_REPAIRS = 2
# Sent as the key to a server named by api_base when no key is meant for it: the OpenAI client
# needs some key, and the provider's own key (e.g. OPENAI_API_KEY) must never go to another host.
PLACEHOLDER_KEY = "no-key"
# Re-exported: the roles ask the gateway what a model can do.
__all__ = ["Gateway", "load_litellm", "model_context_window", "model_supports"]


def capability_failure(error: LlmError) -> bool:
    """Whether a failed call is the model's want of capability, which a higher tier may
    overcome: its answer stayed invalid after the repairs, or ran away. A budget, a timeout,
    a provider's or a process's error is not: another tier would meet it the same way."""
    return error.code in (LlmErrorCode.INVALID_JSON, LlmErrorCode.RUNAWAY)


class ModelCalls(Protocol):
    """What a model-backed role needs of the gateway (`Gateway` is it; a test's scripted
    gateway another): text answers and validated JSON answers, each recorded and cached, and
    the record of an escalation."""

    def complete(self, call: LlmCall) -> LlmAnswer:
        """One answer to one call; raises LlmError when the call fails."""
        ...

    def complete_json(
        self, call: LlmCall, schema: type[T], check: Callable[[T], list[str]] | None = None
    ) -> JsonResult[T]:
        """A JSON answer validated against `schema` (and `check`), repaired when it is not;
        raises LlmError when it cannot be had."""
        ...

    def escalated(
        self,
        role: str,
        from_tier: str,
        to_tier: str,
        reason: str,
        run_id: str | None = None,
        pending_ledger: str | None = None,
    ) -> None:
        """Record that a role's work is tried once more on a higher tier (SPEC §10.2)."""
        ...


class Gateway:
    """Model calls with retries, the JSON guard, the cache, the run ledger and a log event."""

    def __init__(
        self,
        cache: LlmCache | None = None,
        runs_root: Path | None = None,
        budget: Budget | None = None,
        pending_root: Path | None = None,
        retry: RetryPolicy | None = None,
        state_root: Path | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = random.random,
        limits: CallLimits | None = None,
        rates: RateLimits | None = None,
    ) -> None:
        self.cache = cache
        self.limits = limits or CallLimits()
        self.rates = rates or RateLimits()
        self.runs_root = runs_root
        self.pending_root = pending_root
        # Where a process tier's sessions of no run keep their traces (the home's state).
        self.state_root = state_root
        self.budget = budget or Budget()
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._clock = clock
        self._jitter = jitter

    def ledger(self, call: LlmCall) -> UsageLedger | None:
        """The usage ledger the call is charged to: its run's, a pending one, or none."""
        return self._ledger(call.run_id, call.pending_ledger)

    def _ledger(self, run_id: str | None, pending: str | None) -> UsageLedger | None:
        if run_id is not None and self.runs_root is not None:
            return UsageLedger(self.runs_root / run_id, self.budget)
        if pending is not None and self.pending_root is not None:
            return UsageLedger(self.pending_root / pending, self.budget)
        return None

    def escalated(
        self,
        role: str,
        from_tier: str,
        to_tier: str,
        reason: str,
        run_id: str | None = None,
        pending_ledger: str | None = None,
    ) -> None:
        """Record that a role's work is tried once more on a higher tier: a log event, and a
        count in the usage of the run (or of the request not yet a run) it is done for."""
        log.info("role_escalated", role=role, from_tier=from_tier, to_tier=to_tier,
                 run_id=run_id, reason=mask_secrets(reason[:500]))  # fmt: skip
        ledger = self._ledger(run_id, pending_ledger)
        if ledger is not None:
            ledger.record_escalation(role)

    def complete(self, call: LlmCall) -> LlmAnswer:
        """One answer: from the cache, else from the model (retried, recorded, cached)."""
        entry = self.cache.get(call) if self.cache is not None else None
        if entry is not None:
            return self._serve_cached(call, entry)
        answer = self._paid(call, repairs=0, mode=TEXT_MODE)
        return self._continued(call, answer) if continuable(call, answer, 1) else answer

    def _continued(self, call: LlmCall, first: LlmAnswer) -> LlmAnswer:
        """A text answer cut by the limit, asked to go on where it stopped (its text put back as
        the assistant's turn) up to `call.continuations` times: at most that many more times
        the call's max_tokens, itself at most the tier's; the run's budget is checked before
        each part, each is a call of its own in the ledger and the log."""
        parts, text = [first], first.text
        while continuable(call, parts[-1], len(parts)) and repetition(text) is None:
            more = call.model_copy(update={"messages": continuation_messages(call.messages, text)})
            log.info("llm_continue", **_fields(call), continuation=len(parts), chars=len(text))
            answer = self._paid(more, repairs=0, mode=None, continuation=len(parts))
            text = join_parts(text, answer.text)
            parts.append(answer)
        whole = joined(parts, text)
        if self.cache is not None and whole.finish_reason != "length":
            # The joined answer, under the call that asked for it: never paid for again.
            self.cache.put(call, whole, TEXT_MODE)
        return whole

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
        shape = json_schema_format(schema.__name__, answer_schema(schema))
        attempt, regrown, repairs = call, False, 0
        while True:
            answer = self._paid(attempt, repairs=repairs, mode=None, response_format=shape,
                                regrown=regrown)  # fmt: skip
            verdict = judge(answer.text, schema, check)
            if verdict.value is not None:
                if self.cache is not None:
                    self.cache.put(call, answer, mode, repairs)
                return JsonResult(verdict.value, answer.text, repairs > 0, repairs, answer)
            log.info("llm_json_invalid", **_fields(call), repairs=repairs,
                     errors=verdict.errors[:5], finish_reason=answer.finish_reason)  # fmt: skip
            if answer.finish_reason == "length" and not answer.tool_calls:
                # Cut by the limit, not wrong: the same question once more with more room (a
                # repair would show the model a broken half and ask for less).
                room = None if regrown or repetition(answer.text) else more_room(attempt)
                if room is None:
                    raise self._cut(attempt, answer)
                log.info("llm_retry", **_fields(call), reason="length", max_tokens=room)
                attempt, regrown = attempt.model_copy(update={"max_tokens": room}), True
                continue
            if repairs == MAX_REPAIRS:
                raise JsonGuardFailed(mask_secrets(answer.text), verdict.errors, repairs + 1)
            repairs += 1
            messages = [*attempt.messages, *repair_messages(answer.text, verdict.errors)]
            attempt = attempt.model_copy(update={"messages": messages})

    def _cut(self, call: LlmCall, answer: LlmAnswer) -> LlmError:
        """The failure of an answer still cut by the limit (a loop: RUNAWAY), logged."""
        error = cut_failure(call, answer)
        return self._failure(call, error.code, answer.attempts, error.detail)

    def _serve_cached(self, call: LlmCall, entry: CacheEntry) -> LlmAnswer:
        began = self._clock()
        ledger = self.ledger(call)
        if ledger is not None:
            ledger.record_cache_hit(call.role)
        latency = (self._clock() - began) * 1000
        answer = entry.answer.model_copy(update={"cached": True, "latency_ms": latency})
        self._log(call, answer, entry.repairs)
        return answer

    def _paid(
        self,
        call: LlmCall,
        repairs: int,
        mode: str | None,
        response_format: dict[str, Any] | None = None,
        continuation: int = 0,
        regrown: bool = False,
    ) -> LlmAnswer:
        """A real call: budget check, request, log, cache (when `mode`), then the ledger."""
        ledger = self.ledger(call)
        if ledger is not None:
            ledger.ensure_within_budget()
        answer = self._request(call, response_format)
        self._log(call, answer, repairs, continuation, regrown)
        if mode is not None and self.cache is not None and answer.finish_reason != "length":
            # Cached before the budget verdict: a paid answer is never paid for again. An answer
            # cut by the limit is not kept: served again, a runaway would fail every retry.
            self.cache.put(call, answer, mode)
        if ledger is not None:
            ledger.record_call(call.role, answer)
        return answer

    def _request(self, call: LlmCall, response_format: dict[str, Any] | None = None) -> LlmAnswer:
        """Attempts until an answer, a fatal error, no attempt left or the deadline.

        Each attempt first waits for the endpoint's rate budget (not counted against the
        deadline: that is the model's time), then for a slot, then is sent.
        """
        key = model_key(call.model, call.api_base)
        if call.process is not None:
            with self.limits.slot(key):
                return self._process_answer(call, response_format)
        litellm = load_litellm()
        names = sanitize_tool_names([tool.name for tool in call.tools])
        api_key = _api_key(call)
        began = self._clock()
        deadline = began + self.retry.deadline(call)
        max_tokens, failures, requests = call.max_tokens, 0, 0
        earlier: Reply | None = None
        while True:
            requests += 1
            reserved = self.rates.reserve(key, estimated_tokens(call, max_tokens))
            deadline += reserved.waited
            timeout = max(0.001, min(call.timeout_seconds, deadline - self._clock()))
            shape = response_format if constrained(call) else None
            attempt = Attempt(api_key, max_tokens, timeout, shape)
            # Only a plain text answer is read as a stream (a tool call or a schema is not).
            stream = call.stop_repeats and not call.tools and shape is None and not call.json_mode
            with self.limits.slot(key):
                response = send(litellm, openai_request(call, names, attempt), stream,
                                call.stop_at_words, call.stop_at_rows)  # fmt: skip
            if isinstance(response, Fault):
                if shape is not None and refuses_schema(response):
                    # The server cannot decode with a schema: the JSON guard alone, from now on.
                    refuse_schema(call)
                    log.warning(
                        "structured_output_refused", **_fields(call), error=response.message
                    )
                    continue
                failures += 1
                self._sleep(self._delay(call, response, failures, deadline))
                continue
            reply = read_reply(litellm, response, names)
            self.rates.settle(reserved, reply.prompt_tokens + reply.completion_tokens)
            reply = reply.after(earlier)
            if reply.cut_empty and earlier is None:
                # An empty answer cut by the limit: once more with twice the room.
                earlier, max_tokens = reply, max_tokens * 2
                log.info("llm_retry", **_fields(call), reason="length", max_tokens=max_tokens)
                continue
            latency = (self._clock() - began) * 1000
            return reply.answer(call.model, latency, requests, shape is not None)

    def _process_answer(self, call: LlmCall, response_format: dict[str, Any] | None) -> LlmAnswer:
        """A process tier's answer: the command's stdout (one session, one prompt)."""
        assert call.process is not None
        place = process_place(call, self.runs_root, self.state_root)
        turn = ProcessSession(call.process, place).prompt(process_prompt(call, response_format))
        if turn.interrupted:
            raise StepInterrupted(turn.message)
        if turn.error_code is not None:
            code = PROCESS_CODES.get(turn.error_code, LlmErrorCode.PROVIDER_ERROR)
            raise self._failure(call, code, 1, turn.message)
        return LlmAnswer(
            text=turn.outcome.stdout.strip(),
            finish_reason="stop",
            model=call.model,
            latency_ms=turn.outcome.seconds * 1000,
        )

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
            else f"waiting {delay:.1f} s would pass the {self.retry.deadline(call):.0f} s deadline"
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

    def _log(
        self, call: LlmCall, answer: LlmAnswer, repairs: int, continuation: int = 0,
        regrown: bool = False,
    ) -> None:  # fmt: skip
        # A replay from our cache sent no prompt: the provider's prompt cache served nothing.
        provider_cached = 0 if answer.cached else answer.cached_tokens
        log.info(
            "llm_call",
            **_fields(call),
            prompt_tokens=answer.prompt_tokens,
            cached_tokens=provider_cached,
            completion_tokens=answer.completion_tokens,
            cost_usd=answer.cost_usd,
            latency_ms=round(answer.latency_ms, 3),
            cache_hit=answer.cached,
            repairs=repairs,
            continuation=continuation,
            more_room=regrown,
            attempts=answer.attempts,
            finish_reason=answer.finish_reason,
            constrained=answer.constrained,
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
    """The key to send, read at call time and registered for masking; None: litellm's own.

    A key goes only where it belongs: the tier's `api_key_env` to its server; a provider's own
    key (read by litellm) only to that provider's own host. A server named by `api_base` that
    is not the provider's own host gets a placeholder, never the provider's key.
    """
    if not call.api_key_env:
        if call.api_base and not own_host(call.model, call.api_base):
            return PLACEHOLDER_KEY
        return None
    value = os.environ.get(call.api_key_env, "")
    if not value:
        raise LlmError(
            LlmErrorCode.PROVIDER_ERROR,
            f"the environment variable {call.api_key_env} (the key for {call.model}) is not set",
        )
    register_secret(value)
    return value
