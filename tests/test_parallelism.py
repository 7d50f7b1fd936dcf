"""How much overlaps when the mapping does not say: a model's calls in flight by where it is
served, and the daemon's parallel runs derived from the tiers (an explicit value wins)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from app.team import build_collaborators
from multiverse.config.mapping import TierConfig, parse_runtime_mapping
from multiverse.config.serving import default_parallel_runs, is_remote
from multiverse.gateway import endpoint_limits
from multiverse.home import Home
from orchestrator.daemon import Daemon


@pytest.mark.parametrize(
    ("model", "api_base", "remote"),
    [
        ("openai/gpt-4.1-mini", None, True),
        ("anthropic/claude-sonnet-4-5", "https://api.anthropic.com", True),
        ("openai/qwen", "http://127.0.0.1:8088/v1", False),
        ("openai/qwen", "http://localhost:8088/v1", False),
        ("openai/qwen", "http://[::1]:8088/v1", False),
        ("openai/qwen", "http://192.168.1.20:8000/v1", False),
        ("openai/qwen", "http://10.0.0.5/v1", False),
        ("openai/qwen", "https://models.example.com/v1", True),
        ("ollama/llama3.1", None, False),
        ("lm_studio/qwen", None, False),
    ],
)
def test_a_model_is_remote_unless_served_from_this_machine_or_network(
    model: str, api_base: str | None, remote: bool
) -> None:
    """Loopback, private and link-local addresses, localhost and keyless local providers are
    local; a provider's own host or any other name is remote."""
    assert is_remote(model, api_base) is remote


def test_parallel_runs_from_the_tiers() -> None:
    """None: 4; a remote model: at least 8, or its larger concurrency; local only: theirs."""
    assert default_parallel_runs([]) == 4
    assert default_parallel_runs([(True, 8), (False, 1)]) == 8
    assert default_parallel_runs([(True, 12)]) == 12
    assert default_parallel_runs([(False, 1)]) == 1
    assert default_parallel_runs([(False, 2), (False, 6)]) == 6


def mapping_of(tiers: dict[str, Any], daemon: dict[str, Any] | None = None) -> Any:
    """The mapping parsed from these sections, as the daemon loads it."""
    data: dict[str, Any] = {"tier_mapping": tiers, **({"daemon": daemon} if daemon else {})}
    return parse_runtime_mapping(json.dumps(data), "runtime-mapping.yaml")


LOCAL = {"model": "openai/qwen", "api_base": "http://127.0.0.1:8088/v1"}


@pytest.mark.parametrize(
    ("tiers", "daemon", "runs"),
    [
        ({}, None, 4),  # all builtin
        ({"LOW": "openai/gpt-4.1-mini"}, None, 8),
        ({"LOW": {"model": "openai/gpt-4.1-mini", "concurrency": 16}}, None, 16),
        ({"HIGH": LOCAL, "LOW": LOCAL}, None, 4),
        ({"HIGH": {**LOCAL, "concurrency": 1}}, None, 1),
        ({"MEDIUM": {"command": ["my-agent"]}}, None, 4),
        ({"LOW": "openai/gpt-4.1-mini"}, {"max_parallel_runs": 3}, 3),  # explicit wins
    ],
)
def test_max_parallel_runs_is_derived_when_not_set(
    tiers: dict[str, Any], daemon: dict[str, Any] | None, runs: int
) -> None:
    """The loaded mapping carries max_parallel_runs: given, or derived from its tiers."""
    assert mapping_of(tiers, daemon).daemon.max_parallel_runs == runs


def test_unset_concurrency_depends_on_where_the_model_is() -> None:
    """A remote model gets 8 calls at once, a local server 4, unless the tier says."""
    tiers = [
        TierConfig(model="openai/gpt-4.1-mini"),
        TierConfig(**LOCAL),
        TierConfig(model="openai/other", api_base="http://10.0.0.5/v1", concurrency=2),
    ]
    assert endpoint_limits(tiers) == {
        "openai/gpt-4.1-mini@": 8,
        "openai/qwen@http://127.0.0.1:8088/v1": 4,
        "openai/other@http://10.0.0.5/v1": 2,
    }


def test_the_daemon_advances_as_many_runs_as_the_mapping_derives(home: Home) -> None:
    """A daemon built from a mapping with a remote model advances 8 runs at once; one built
    without a mapping, 4."""
    mapping = mapping_of({"LOW": "openai/gpt-4.1-mini"})
    crew = build_collaborators(home, mapping, os.environ, lambda text: None)
    assert Daemon(crew, mapping.daemon).parallel_runs == 8
    assert Daemon(crew).parallel_runs == 4
