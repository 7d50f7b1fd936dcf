"""Shared fixtures: every test gets its own home; nothing touches the repository's folders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from multiverse.home import Home, init_home

from fake_openai import fake_openai  # noqa: F401  (the loopback OpenAI server fixture)

REPO = Path(__file__).resolve().parent.parent


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
    """An initialised, empty home in a temporary folder."""
    created = Home(_isolated_home)
    init_home(created)
    return created
