"""The runtime-mapping.yaml an evaluation home gets, and what a mapping says about its models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

LOCAL_API_BASE = "http://127.0.0.1:8088/v1"
LOCAL_ALIAS = "qwen2.5-coder-1.5b-instruct"
TIERS = ("HIGH", "MEDIUM", "LOW")


def local_tier(
    alias: str = LOCAL_ALIAS, api_base: str = LOCAL_API_BASE, context_window: int | None = None
) -> dict[str, Any]:
    """One tier on the local llama.cpp server, sized for ~15 tokens/s on two cores; with the
    server's context when known (else litellm's guess for an unknown model, which may exceed
    it, and a task's references would be fitted to a window the server refuses)."""
    window = {"context_window": context_window} if context_window else {}
    return {
        "model": f"openai/{alias}",
        "api_base": api_base,
        "max_tokens": 2048,
        "timeout_seconds": 900,
        "temperature": 0.2,
        "extra_body": {"repeat_penalty": 1.1},
        **window,
    }


def local_mapping_text(context_window: int | None = None) -> str:
    """The default mapping: every tier on the local model (with the server's context when
    known); tools and budgets as the defaults."""
    tiers = {tier: local_tier(context_window=context_window) for tier in TIERS}
    body = yaml.safe_dump({"tier_mapping": tiers}, sort_keys=False)
    return "# Written by evals (make eval-local): every tier on the local model.\n" + body


def tiers_of(text: str) -> dict[str, dict[str, Any]]:
    """Each tier's settings in a mapping (a bare model name becomes {model: name})."""
    data = yaml.safe_load(text) or {}
    tiers = data.get("tier_mapping") or {} if isinstance(data, dict) else {}
    return {
        str(tier): value if isinstance(value, dict) else {"model": str(value)}
        for tier, value in tiers.items()
    }


def local_servers(text: str) -> set[tuple[str, str]]:
    """(api_base, alias) of every tier served by an OpenAI-compatible server on this machine."""
    found = set()
    for tier in tiers_of(text).values():
        base, model = str(tier.get("api_base") or ""), str(tier.get("model") or "")
        if model.startswith("openai/") and ("127.0.0.1" in base or "localhost" in base):
            found.add((base, model.removeprefix("openai/")))
    return found


def read_text(path: Path) -> str:
    """A mapping file's text, checked to be YAML with a tier_mapping."""
    text = path.read_text(encoding="utf-8")
    if not tiers_of(text):
        raise ValueError(f"{path}: no tier_mapping in it")
    return text
