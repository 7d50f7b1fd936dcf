"""Whether a tier's model answers at all: `doctor`'s reachability check (no retry, no cache)."""

from __future__ import annotations

from typing import Protocol

from multiverse.gateway.calls import LlmCall, LlmError, RetryPolicy
from multiverse.gateway.gateway import Gateway

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
