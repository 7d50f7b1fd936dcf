"""Calls in flight per model endpoint (the mapping's `concurrency`), across every run: the
gateway holds a slot for each HTTP exchange, against a real loopback server."""

from __future__ import annotations

import threading

import pytest
from test_gateway import KEY, KEY_ENV, make_call

from multiverse.config import TierConfig
from multiverse.gateway import Gateway
from multiverse.gateway.limits import CallLimits, endpoint_limits, model_key

from fake_openai import FakeOpenAI
from journey import wait_for


def test_a_model_served_by_several_tiers_gets_the_smallest_limit() -> None:
    tiers = [
        TierConfig(model="openai/m", api_base="http://a/v1", concurrency=3),
        TierConfig(model="openai/m", api_base="http://a/v1", concurrency=1),
        TierConfig(model="openai/m", api_base="http://b/v1", concurrency=5),
        TierConfig(),  # builtin: no calls, no limit
    ]
    assert endpoint_limits(tiers) == {"openai/m@http://a/v1": 1, "openai/m@http://b/v1": 5}


def test_calls_beyond_the_limit_wait_for_a_slot(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    held = threading.Event()
    fake_openai.hold = held
    key = model_key("openai/fake-model", fake_openai.base_url)
    limits = CallLimits({key: 2})
    gateway = Gateway(limits=limits)
    calls = [make_call(fake_openai, scope=f"run-x:T{n}") for n in range(6)]
    threads = [threading.Thread(target=gateway.complete, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda: fake_openai.count == 2 and limits.waiting(key) == 4, "2 sent, 4 waiting")
        assert fake_openai.count == 2  # the other four never reached the server
    finally:
        held.set()
        for thread in threads:
            thread.join(timeout=30)
    assert fake_openai.count == 6 and limits.waiting(key) == 0
