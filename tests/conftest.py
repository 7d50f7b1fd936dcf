"""Shared fixtures: every test gets its own home; nothing touches the repository's folders."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from multiverse.home import Home, init_home

from fake_openai import fake_openai  # noqa: F401  (the loopback OpenAI server fixture)
from fakes import RecordingSleep
from mappings import take_requests_at_once

REPO = Path(__file__).resolve().parent.parent

# Hypothesis fails an example slower than 200 ms by default: a timed assertion, which a loaded
# machine breaks (a first call importing pandas). Examples are judged by what they return.
settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")


@pytest.hookimpl(optionalhook=True)  # a run with `-p no:xdist` has no such hook to implement
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: two workers more than the cores (PYTEST_XDIST_AUTO_NUM_WORKERS still rules).

    Many tests wait on real processes (daemons killed and restarted, Celery workers, a browser,
    the 5-second grace of SPEC §17.2.3): with a worker per core the cores idle about a third of
    the time. Measured on 2 cores (BENCHMARKS.md): 4 workers fill that; 6 only contend.
    """
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 2


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point MULTIVERSE_HOME at a temporary folder and keep keys out of the environment."""
    target = tmp_path / "home"
    monkeypatch.setenv("MULTIVERSE_HOME", str(target))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "MULTIVERSE_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    yield target


@pytest.fixture
def home(_isolated_home: Path) -> Home:
    """An initialised, empty home in a temporary folder, taking a closed inbox file at once
    (`mappings.take_requests_at_once`)."""
    created = Home(_isolated_home)
    init_home(created)
    take_requests_at_once(created)
    return created


@pytest.fixture
def sleep() -> RecordingSleep:
    """An injected sleep (the gateway's, a retry's) that returns at once and records its waits."""
    return RecordingSleep()


@pytest.fixture
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Proxies off (httpx and requests both read them), so a test reaches loopback servers
    directly and never depends on the machine's settings."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
