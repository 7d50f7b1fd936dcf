"""Requests and tokens per minute per model endpoint, honoured before each call, not learned
from 429s. One `RateLimits` serves every run of the daemon, as `CallLimits` does.

Each budget is a bucket holding one minute's worth, full at start, refilled evenly. A call
reserves one request and an estimate of its tokens (prompt characters / 4, plus the answer's
max_tokens) and sleeps until the bucket covers it; a reservation may overdraw the bucket, so
callers are served in the order they came, each sleeping once. The answer's reported usage then
settles the estimate (a refund, or a further debit); a failed attempt keeps what it reserved.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import structlog

from multiverse.llm import LlmCall

log = structlog.get_logger(__name__)
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Bucket:
    """A per-minute budget: `level` units available at time `at` (below zero: owed)."""

    per_minute: int
    level: float
    at: float

    def reserve(self, amount: float, now: float) -> tuple[Bucket, float]:
        """Take `amount` (at most a minute's worth) at `now`: the bucket after, and the
        seconds to wait until the bucket covers it (pure)."""
        rate = self.per_minute / 60
        level = min(self.per_minute, self.level + max(0.0, now - self.at) * rate)
        level -= min(amount, self.per_minute)
        return Bucket(self.per_minute, level, max(now, self.at)), max(0.0, -level / rate)

    def settle(self, change: float) -> Bucket:
        """Give back (positive `change`) or take more (negative) of a reservation."""
        return replace(self, level=min(self.per_minute, self.level + change))


@dataclass(frozen=True)
class Rates:
    """An endpoint's limits per minute; None: not limited."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None

    @property
    def limited(self) -> bool:
        """Whether either limit is set."""
        return self.requests_per_minute is not None or self.tokens_per_minute is not None


@dataclass(frozen=True)
class Reservation:
    """What one attempt reserved of its endpoint's budgets, and how long it waited for them."""

    key: str
    tokens: int
    waited: float


def estimated_tokens(call: LlmCall, max_tokens: int) -> int:
    """A call's tokens before it is made: its prompt's characters / 4, plus its answer's room."""
    prompt = json.dumps(call.messages, ensure_ascii=False, default=str)
    tools = json.dumps([tool.model_dump() for tool in call.tools], ensure_ascii=False)
    return (len(prompt) + len(tools)) // CHARS_PER_TOKEN + max_tokens


class RateLimits:
    """The buckets of every limited endpoint; endpoints not listed are not limited."""

    def __init__(
        self,
        rates: Mapping[str, Rates] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._rates = dict(rates or {})
        self._clock, self._sleep = clock, sleep
        self._buckets: dict[tuple[str, str], Bucket] = {}
        self._guard = threading.Lock()

    def limit(self, key: str) -> Rates | None:
        """The endpoint's rates, or None when it has none."""
        return self._rates.get(key)

    def reserve(self, key: str, tokens: int) -> Reservation:
        """Reserve one request and `tokens` of the endpoint's budgets; sleeps until covered."""
        rates = self._rates.get(key, Rates())
        if not rates.limited:
            return Reservation(key, 0, 0.0)
        with self._guard:
            now = self._clock()
            wait = max(
                self._take(key, "requests", rates.requests_per_minute, 1, now),
                self._take(key, "tokens", rates.tokens_per_minute, tokens, now),
            )
        if wait > 0:
            log.info("llm_rate_wait", endpoint=key, wait_s=round(wait, 3))
            self._sleep(wait)
        return Reservation(key, tokens if rates.tokens_per_minute else 0, wait)

    def settle(self, reservation: Reservation, used: int) -> None:
        """Replace the reservation's token estimate by the tokens the answer used (0: unknown)."""
        if not reservation.tokens or used <= 0:
            return
        with self._guard:
            slot = (reservation.key, "tokens")
            self._buckets[slot] = self._buckets[slot].settle(reservation.tokens - used)

    def _take(self, key: str, kind: str, per_minute: int | None, amount: int, now: float) -> float:
        if per_minute is None:
            return 0.0
        bucket = self._buckets.get((key, kind), Bucket(per_minute, per_minute, now))
        self._buckets[(key, kind)], wait = bucket.reserve(amount, now)
        return wait
