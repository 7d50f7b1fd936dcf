"""How many calls to one model may be in flight at once, across every run of the daemon.

Each tier of the mapping says its `concurrency`; a model served by several tiers gets the
smallest. The gateway holds a slot for the HTTP exchange only (not while it waits to retry), so
a run's retries never starve another run, and a slow local model is never sent more requests
than it can serve at once. The rates per minute each endpoint is held to are read here too
(`multiverse.rate_limits` honours them).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

from multiverse.config import TierConfig
from multiverse.rate_limits import Rates


def model_key(model: str, api_base: str | None) -> str:
    """One model endpoint: its name at its server."""
    return f"{model}@{api_base or ''}"


class CallLimits:
    """A bounded semaphore per model endpoint; endpoints not listed are not limited."""

    def __init__(self, limits: Mapping[str, int] | None = None) -> None:
        self._limits = dict(limits or {})
        self._slots = {key: threading.BoundedSemaphore(n) for key, n in self._limits.items()}
        self._guard = threading.Lock()
        self._waiting: dict[str, int] = dict.fromkeys(self._limits, 0)

    def limit(self, key: str) -> int | None:
        """The endpoint's limit, or None when it has none."""
        return self._limits.get(key)

    def waiting(self, key: str) -> int:
        """How many calls wait for a slot of the endpoint now."""
        with self._guard:
            return self._waiting.get(key, 0)

    @contextmanager
    def slot(self, key: str) -> Iterator[None]:
        """Hold one slot of the endpoint for the duration of the block."""
        semaphore = self._slots.get(key)
        if semaphore is None:
            yield
            return
        with self._guard:
            self._waiting[key] += 1
        try:
            semaphore.acquire()
        finally:
            with self._guard:
                self._waiting[key] -= 1
        try:
            yield
        finally:
            semaphore.release()


def tier_key(tier: TierConfig) -> str | None:
    """The endpoint a tier's calls go to (a process tier: its command), None for builtin."""
    spec = tier.process_spec()  # a process tier: its command, named as its calls name it
    if spec is None and not tier.calls_a_model:
        return None
    return model_key(spec.name if spec is not None else tier.model, tier.api_base)


def endpoint_limits(tiers: Iterable[TierConfig]) -> dict[str, int]:
    """Each model endpoint's limit (a process tier's command too): the smallest `concurrency`
    of the tiers it serves (unset: `multiverse.parallelism`'s default for where it is)."""
    limits: dict[str, int] = {}
    for tier in tiers:
        key = tier_key(tier)
        if key is not None:
            limit = tier.calls_at_once()
            limits[key] = min(limit, limits.get(key, limit))
    return limits


def endpoint_rates(tiers: Iterable[TierConfig]) -> dict[str, Rates]:
    """Each model endpoint's requests and tokens per minute: the smallest of the tiers that set
    them (a process tier has none); an endpoint with neither is not listed."""
    rates: dict[str, Rates] = {}
    for tier in tiers:
        key = tier_key(tier)
        if key is None or tier.adapter_type == "process":
            continue
        known = rates.get(key, Rates())
        rates[key] = Rates(
            _smallest(known.requests_per_minute, tier.requests_per_minute),
            _smallest(known.tokens_per_minute, tier.tokens_per_minute),
        )
    return {key: rate for key, rate in rates.items() if rate.limited}


def _smallest(one: int | None, other: int | None) -> int | None:
    given = [value for value in (one, other) if value is not None]
    return min(given) if given else None
