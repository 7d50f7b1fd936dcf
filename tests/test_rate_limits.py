"""Requests and tokens per minute per model endpoint, honoured before each call: the pure wait
decision, and the real gateway against a real loopback server with a clock the test drives."""

from __future__ import annotations

import json

import pytest
from test_gateway import KEY, KEY_ENV, make_call

from app.team import make_gateway
from multiverse.config.mapping import TierConfig, parse_runtime_mapping
from multiverse.gateway import Gateway
from multiverse.gateway.calls import RetryPolicy
from multiverse.gateway.limits import (
    Bucket,
    RateLimits,
    Rates,
    endpoint_rates,
    estimated_tokens,
    model_key,
)
from multiverse.home import Home

from fake_openai import FakeOpenAI, error, text


class Clock:
    """Time the test drives: sleeping moves it on at once, and each sleep is remembered with
    how many requests the server had seen when it began."""

    def __init__(self, server: FakeOpenAI | None = None) -> None:
        self.now = 1000.0
        self.server = server
        self.sleeps: list[tuple[float, int]] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append((seconds, self.server.count if self.server is not None else -1))
        self.now += seconds


# -- the pure decision ------------------------------------------------------------------------


def test_a_full_bucket_serves_a_minutes_worth_at_once_then_the_rate() -> None:
    """60 requests a minute: 60 go at once, the 61st waits one second, the 62nd two."""
    bucket, waits = Bucket(60, 60, 0.0), []
    for _ in range(62):
        bucket, wait = bucket.reserve(1, 0.0)
        waits.append(wait)
    assert waits[:60] == [0.0] * 60
    assert waits[60:] == pytest.approx([1.0, 2.0])


def test_the_bucket_refills_evenly_and_never_beyond_a_minutes_worth() -> None:
    """Spent at 0, half refilled 30 s later; an hour idle refills one minute's worth only."""
    bucket, _ = Bucket(100, 100, 0.0).reserve(100, 0.0)
    assert bucket.reserve(50, 30.0)[1] == pytest.approx(0.0)
    assert bucket.reserve(60, 30.0)[1] == pytest.approx(6.0)
    _, wait = bucket.reserve(100, 3600.0)
    assert wait == 0.0
    assert Bucket(100, 100, 0.0).reserve(101, 3600.0)[0].level == pytest.approx(0.0)


def test_a_call_larger_than_the_budget_waits_for_a_full_bucket_only() -> None:
    """A call estimated beyond a minute's tokens is not held forever: it waits for a full bucket."""
    bucket, _ = Bucket(1000, 1000, 0.0).reserve(500, 0.0)
    assert bucket.reserve(5000, 0.0)[1] == pytest.approx(30.0)


def test_settling_gives_back_or_takes_more() -> None:
    """An estimate settled lower shortens the next wait; settled higher lengthens it."""
    spent, _ = Bucket(600, 600, 0.0).reserve(600, 0.0)
    assert spent.settle(+300).reserve(300, 0.0)[1] == pytest.approx(0.0)
    assert spent.settle(-600).reserve(10, 0.0)[1] == pytest.approx(61.0)
    assert spent.settle(+10_000).level == 600


def test_tiers_sharing_a_model_share_the_smallest_rates() -> None:
    """Rates per endpoint: the smallest each tier sets; an endpoint with none is not limited."""
    tiers = [
        TierConfig(model="openai/m", api_base="http://a/v1", requests_per_minute=50),
        TierConfig(model="openai/m", api_base="http://a/v1", requests_per_minute=20,
                   tokens_per_minute=9000),
        TierConfig(model="openai/m", api_base="http://b/v1"),
        TierConfig(),
    ]  # fmt: skip
    assert endpoint_rates(tiers) == {"openai/m@http://a/v1": Rates(20, 9000)}


def test_the_estimate_is_prompt_characters_over_four_plus_the_answer_room(
    fake_openai: FakeOpenAI,
) -> None:
    """A call's estimate grows with its prompt (a quarter token per character) and max_tokens."""
    short = make_call(fake_openai, messages=[{"role": "user", "content": "x"}])
    long = make_call(fake_openai, messages=[{"role": "user", "content": "x" * 4000}])
    assert estimated_tokens(long, 100) - estimated_tokens(short, 100) == pytest.approx(1000, 1)
    assert estimated_tokens(short, 500) - estimated_tokens(short, 100) == 400


# -- through the gateway and a real server ----------------------------------------------------


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake key in the environment, as production reads it."""
    monkeypatch.setenv(KEY_ENV, KEY)


def limited(server: FakeOpenAI, clock: Clock, rates: Rates, attempts: int = 1) -> Gateway:
    """A gateway whose endpoint on `server` is held to `rates`, on the test's clock (a retry's
    back-off returns at once)."""
    key = model_key("openai/fake-model", server.base_url)
    return Gateway(
        clock=clock,
        sleep=lambda seconds: None,
        jitter=lambda: 0.5,
        rates=RateLimits({key: rates}, clock=clock, sleep=clock.sleep),
        retry=RetryPolicy(max_attempts=attempts, base_delay=0.25),
    )


def test_a_call_beyond_the_requests_per_minute_waits_before_it_is_sent(
    fake_openai: FakeOpenAI,
) -> None:
    """At one request a minute the second call sleeps 60 s before reaching the server."""
    clock = Clock(fake_openai)
    gateway = limited(fake_openai, clock, Rates(requests_per_minute=1))
    gateway.complete(make_call(fake_openai, scope="a"))
    assert clock.sleeps == [] and fake_openai.count == 1
    gateway.complete(make_call(fake_openai, scope="b"))
    assert clock.sleeps == [(pytest.approx(60.0), 1)]  # slept while the server had seen one
    assert fake_openai.count == 2


def test_waiting_for_the_budget_is_not_taken_from_the_calls_deadline(
    fake_openai: FakeOpenAI,
) -> None:
    """Each retry waits for the budget too, and a call whose 5 s deadline passed while it waited
    60 s for its budget is still retried: the deadline counts the model's time only."""
    clock = Clock(fake_openai)
    gateway = limited(fake_openai, clock, Rates(requests_per_minute=1), attempts=2)
    gateway.complete(make_call(fake_openai, scope="a"))
    fake_openai.script(error(500))
    answer = gateway.complete(make_call(fake_openai, scope="b", timeout_seconds=5.0))
    assert answer.text == "default answer" and answer.attempts == 2
    assert clock.sleeps == [(pytest.approx(60.0), 1), (pytest.approx(60.0), 2)]


def test_tokens_are_reserved_by_estimate_and_settled_by_the_reported_usage(
    fake_openai: FakeOpenAI,
) -> None:
    """tpm 2000: a 1500-token estimate that used 18 leaves room for the next at once; one that
    reported 5000 makes the next call wait until the debt is paid back."""
    clock = Clock(fake_openai)
    gateway = limited(fake_openai, clock, Rates(tokens_per_minute=2000))
    fake_openai.script(text("small", prompt_tokens=11, completion_tokens=7))
    gateway.complete(make_call(fake_openai, scope="a", max_tokens=1500))
    fake_openai.script(text("large", prompt_tokens=4990, completion_tokens=10))
    gateway.complete(make_call(fake_openai, scope="b", max_tokens=1500))
    assert clock.sleeps == []  # the first call gave back what it did not use
    gateway.complete(make_call(fake_openai, scope="c", max_tokens=1500))
    ((slept, seen),) = clock.sleeps
    assert seen == 2
    # Owed after the second: 2000 - 18 - 5000 < 0; the third's ~1500 more at 2000/60 per s.
    assert slept == pytest.approx((5000 + 18 - 2000 + 1500) * 60 / 2000, abs=3)


def test_the_mapping_gives_the_gateway_its_rates(home: Home, fake_openai: FakeOpenAI) -> None:
    """requests_per_minute and tokens_per_minute of a tier reach the daemon's one gateway."""
    tier = {"model": "openai/fake-model", "api_base": fake_openai.base_url,
            "requests_per_minute": 30, "tokens_per_minute": 40000}  # fmt: skip
    text_ = json.dumps({"tier_mapping": {"LOW": tier}})
    mapping = parse_runtime_mapping(text_, "runtime-mapping.yaml")
    gateway = make_gateway(home, mapping)
    key = model_key("openai/fake-model", fake_openai.base_url)
    assert gateway.rates.limit(key) == Rates(30, 40000)
