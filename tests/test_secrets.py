"""Tests of key masking in text and in structlog events."""

from __future__ import annotations

import io
import json

import pytest
import structlog

from multiverse.logs import MASK, mask_processor, mask_secrets, register_secret, secret_values_in


def test_env_secret_values_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Values of variables named *_API_KEY, *_TOKEN, *_SECRET are masked wherever they appear."""
    monkeypatch.setenv("ACME_API_KEY", "acme-key-123456")
    monkeypatch.setenv("GITHUB_TOKEN", "tok-abcdefgh")
    monkeypatch.setenv("WEBHOOK_SECRET", "hushhush99")
    text = "a acme-key-123456 b tok-abcdefgh c hushhush99"
    assert mask_secrets(text) == f"a {MASK} b {MASK} c {MASK}"


def test_secrets_set_or_changed_between_events_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A variable added after earlier masking, and a new value of a known one, are both masked."""
    monkeypatch.setenv("FIRST_TOKEN", "first-value-1")
    assert mask_secrets("first-value-1") == MASK
    monkeypatch.setenv("LATER_API_KEY", "later-value-2")
    monkeypatch.setenv("FIRST_TOKEN", "first-value-3")
    assert mask_secrets("later-value-2 first-value-3") == f"{MASK} {MASK}"
    monkeypatch.delenv("LATER_API_KEY")
    assert mask_secrets("later-value-2") == "later-value-2"


def test_secrets_of_a_given_environment_follow_the_same_rule() -> None:
    """`secret_values_in` (doctor's) uses the log masking's rule: names, minimum length, order."""
    environ = {
        "MY_KEY": "custom-key-value",
        "api_key": "lower-case-value-long",
        "SERVICE_ACCESS_KEY": "access-value",
        "SHORT_TOKEN": "abc",
        "EDITOR": "vimvimvim",
    }
    found = secret_values_in(environ)
    assert {"lower-case-value-long", "custom-key-value", "access-value"} <= set(found)
    assert "vimvimvim" not in found and "abc" not in found
    assert [len(value) for value in found] == sorted(map(len, found), reverse=True)


def test_short_and_ordinary_values_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """Short secret values and ordinary variables are not masked (they would wreck text)."""
    monkeypatch.setenv("LOCAL_API_KEY", "x")
    monkeypatch.setenv("EDITOR", "vimvimvim")
    assert mask_secrets("x marks vimvimvim") == "x marks vimvimvim"


@pytest.mark.parametrize(
    "key",
    [
        "sk-test-SECRET123",
        "sk-ant-api03-AbCdEf012345",
        "sk-proj-abcdefghijklmnop",
        "AIzaSyA-abcdefghijklmnopqrstuv",
        "ghp_abcdefghijklmnopqrstuvwxyz0123",
    ],
)
def test_key_shapes_masked(key: str) -> None:
    """Common key shapes are masked even when no variable holds them."""
    masked = mask_secrets(f"error: invalid key {key}.")
    assert key not in masked and MASK in masked


def test_bearer_token_masked() -> None:
    """An Authorization header value is masked."""
    assert "abcdef0123456789" not in mask_secrets("Authorization: Bearer abcdef0123456789")


def test_registered_secret_masked() -> None:
    """A key read from a custom-named variable is masked once registered."""
    register_secret("custom-credential-777")
    assert mask_secrets("custom-credential-777!") == f"{MASK}!"


def test_text_without_secrets_unchanged() -> None:
    """Ordinary text, including CJK and emoji, passes unchanged."""
    text = "시장 진입 메모 ✓ — task-skeleton sk- risk"
    assert mask_secrets(text) == text


def test_processor_masks_nested_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """The structlog processor masks strings inside dicts, lists and exceptions."""
    monkeypatch.setenv("ACME_API_KEY", "acme-key-123456")
    event = {
        "event": "llm_call_failed",
        "error": "bad acme-key-123456",
        "headers": {"auth": ["Bearer acme-key-123456"]},
        "problem": ValueError("acme-key-123456 rejected"),
        "count": 3,
    }
    masked = mask_processor(None, "info", event)
    assert "acme-key-123456" not in repr(masked)
    assert masked["count"] == 3 and masked["event"] == "llm_call_failed"


def test_rendered_traceback_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a JSON pipeline, a logged exception's traceback is masked too."""
    monkeypatch.setenv("ACME_API_KEY", "acme-key-123456")
    out = io.StringIO()
    logger = structlog.wrap_logger(
        structlog.PrintLogger(out),
        processors=[
            structlog.processors.format_exc_info,
            mask_processor,
            structlog.processors.JSONRenderer(),
        ],
    )
    try:
        raise RuntimeError("provider said: acme-key-123456 is invalid")
    except RuntimeError:
        logger.exception("call_failed")
    line = out.getvalue()
    assert "acme-key-123456" not in line
    assert "RuntimeError" in json.loads(line)["exception"]
