"""How fast and how many: requests and tokens per minute per model endpoint, honoured before each
call, and how many calls to one model may be in flight at once across the daemon.

Also here: the disk cache of finished calls, so that a restarted daemon never pays for a call
twice. What calls cost a run is kept in `multiverse.gateway.usage`.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import structlog
from pydantic import ValidationError

from multiverse.atomic import atomic_write_text
from multiverse.config import TierConfig
from multiverse.gateway.calls import LlmAnswer, LlmCall, LlmData
from multiverse.logs import mask_secrets

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
    of the tiers it serves (unset: `multiverse.config.serving`'s default for where it is)."""
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


TEXT_MODE = "text"


class CacheEntry(LlmData):
    """One cached answer and what it answered."""

    key: str
    role: str
    scope: str
    model: str
    mode: str
    answer: LlmAnswer
    repairs: int = 0
    created_at: str


def input_hash(call: LlmCall, mode: str = TEXT_MODE) -> str:
    """sha256 of everything the model sees and how the answer is used."""
    material = {
        "model": call.model,
        "messages": call.messages,
        "tools": [tool.model_dump() for tool in call.tools],
        "max_tokens": call.max_tokens,
        "sampling": call.sampling,
        "extra_body": call.extra_body,
        "stop": call.stop,
        "json_mode": call.json_mode,
        "structured_output": call.structured_output,
        "mode": mode,
    }
    if call.stop_repeats:
        # Where the stream is closed shapes the answer as much as max_tokens does.
        material["closed_at"] = [call.stop_at_words, call.stop_at_rows]
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def cache_key(call: LlmCall, mode: str = TEXT_MODE) -> str:
    """The entry's key: sha256 of role:agent_version:variant:prompt_version:scope:input_hash."""
    parts = (
        call.role,
        call.agent_version,
        call.variant,
        call.prompt_version,
        call.scope,
        input_hash(call, mode),
    )
    return hashlib.sha256(":".join(parts).encode("utf-8")).hexdigest()


class LlmCache:
    """Finished answers on disk, one file per key."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path_for(self, key: str) -> Path:
        """Where the entry of `key` lives (fanned out by the key's first two characters)."""
        return self.folder / key[:2] / f"{key}.json"

    def get(self, call: LlmCall, mode: str = TEXT_MODE) -> CacheEntry | None:
        """The cached entry for this call, or None (a missing or unreadable entry is a miss)."""
        key = cache_key(call, mode)
        path = self.path_for(key)
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("llm_cache_unreadable", path=str(path), error=str(exc))
            return None
        try:
            entry = CacheEntry.model_validate_json(raw)
        except ValidationError as exc:
            log.warning("llm_cache_unreadable", path=str(path), error=str(exc).splitlines()[0])
            return None
        return entry if entry.key == key else None

    def put(
        self, call: LlmCall, answer: LlmAnswer, mode: str = TEXT_MODE, repairs: int = 0
    ) -> Path:
        """Store a successful answer; returns the entry's file."""
        key = cache_key(call, mode)
        entry = CacheEntry(
            key=key,
            role=call.role,
            scope=call.scope,
            model=call.model,
            mode=mode,
            answer=answer.model_copy(update={"cached": False}),
            repairs=repairs,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        path = self.path_for(key)
        # The mask is a last line of defence: an answer that echoes a key never reaches disk.
        atomic_write_text(path, mask_secrets(entry.model_dump_json(indent=1)))
        return path
