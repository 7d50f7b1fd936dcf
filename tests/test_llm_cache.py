"""Tests of the disk cache of model answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from multiverse.gateway import LlmAnswer, LlmCall, ToolSpec
from multiverse.gateway.limits import LlmCache, cache_key

BASE = LlmCall(
    role="planner",
    agent_version="1",
    prompt_version="p1",
    scope="run-1:tasks:P1-S01",
    model="openai/m",
    messages=[{"role": "user", "content": "분석해 주세요"}],
)
ANSWER = LlmAnswer(
    text="답변 ✓",
    finish_reason="stop",
    model="openai/m",
    prompt_tokens=3,
    completion_tokens=2,
    latency_ms=120.0,
)


@pytest.mark.parametrize(
    "change",
    [
        {"role": "executor"},
        {"agent_version": "2"},
        {"variant": "terse"},
        {"prompt_version": "p2"},
        {"scope": "run-1:tasks:P1-S02"},
        {"model": "openai/other"},
        {"messages": [{"role": "user", "content": "different"}]},
        {"tools": [ToolSpec(name="read_file")]},
        {"max_tokens": 2048},
        {"sampling": {"temperature": 0.7}},
        {"extra_body": {"repeat_penalty": 1.1}},
        {"stop": ["\n\n"]},
        {"structured_output": "off"},
    ],
)
def test_key_covers_every_identifying_field(change: dict[str, object]) -> None:
    """Changing any identifying field of the call changes the key."""
    assert cache_key(BASE.model_copy(update=change)) != cache_key(BASE)


def test_key_ignores_run_bookkeeping() -> None:
    """Fields that do not change the answer (timeout, key variable, base URL) keep the key."""
    other = BASE.model_copy(
        update={"timeout_seconds": 5.0, "api_key_env": "X_API_KEY", "api_base": "http://h/v1"}
    )
    assert cache_key(other) == cache_key(BASE)


def test_mode_separates_text_and_json_entries() -> None:
    """The same call used as text and as JSON has two entries."""
    assert cache_key(BASE, "text") != cache_key(BASE, "json:app.Plan")


def test_put_then_get(tmp_path: Path) -> None:
    """A stored answer comes back equal, from a new cache object over the same folder."""
    LlmCache(tmp_path).put(BASE, ANSWER, repairs=1)
    entry = LlmCache(tmp_path).get(BASE)
    assert entry is not None
    assert entry.answer == ANSWER and entry.repairs == 1 and entry.role == "planner"


def test_miss(tmp_path: Path) -> None:
    """An unknown call is a miss."""
    assert LlmCache(tmp_path).get(BASE) is None


def test_unreadable_entry_is_a_miss(tmp_path: Path) -> None:
    """A damaged entry file is treated as a miss, not a crash."""
    cache = LlmCache(tmp_path)
    path = cache.put(BASE, ANSWER)
    path.write_text("{ not json", encoding="utf-8")
    assert cache.get(BASE) is None


def test_entry_under_wrong_name_ignored(tmp_path: Path) -> None:
    """An entry whose recorded key is not its file's key is not served."""
    cache = LlmCache(tmp_path)
    other = BASE.model_copy(update={"scope": "elsewhere"})
    source = cache.put(other, ANSWER)
    target = cache.path_for(cache_key(BASE))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(source.read_bytes())
    assert cache.get(BASE) is None


def test_keys_masked_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An answer echoing a key is stored masked."""
    monkeypatch.setenv("SOME_PROVIDER_API_KEY", "supersecretvalue42")
    answer = ANSWER.model_copy(update={"text": "key supersecretvalue42 and sk-abcdefghijkl"})
    path = LlmCache(tmp_path).put(BASE, answer)
    stored = path.read_text(encoding="utf-8")
    assert "supersecretvalue42" not in stored and "sk-abcdefghijkl" not in stored


def test_one_file_per_entry_and_no_temp_left(tmp_path: Path) -> None:
    """Each entry is one JSON file; atomic writes leave no temporary files."""
    cache = LlmCache(tmp_path)
    cache.put(BASE, ANSWER)
    cache.put(BASE.model_copy(update={"scope": "s2"}), ANSWER)
    files = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert len(files) == 2 and all(path.suffix == ".json" for path in files)
