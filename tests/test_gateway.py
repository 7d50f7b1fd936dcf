"""Tests of the LLM gateway, through litellm and a real loopback OpenAI-compatible server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import BaseModel
from structlog.testing import capture_logs

from multiverse.gateway import Budget, Gateway, LlmCache, ping_model
from multiverse.gateway.calls import (
    JsonGuardFailed,
    LlmCall,
    LlmError,
    LlmErrorCode,
    RetryPolicy,
    ToolSpec,
    parse_retry_after,
    sanitize_tool_names,
)

from fake_openai import (
    FakeOpenAI,
    drop,
    error,
    hang,
    length_cut,
    running_server,
    text,
    tools,
)
from fakes import RecordingSleep

KEY_ENV = "MULTIVERSE_TEST_API_KEY"
KEY = "sk-test-SECRET123"


class Memo(BaseModel):
    """A small schema for the JSON guard."""

    title: str
    count: int


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    """A running fake OpenAI server."""
    with running_server() as fake:
        yield fake


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fake key in the environment, as production reads it."""
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


def make_call(server: FakeOpenAI, **changes: object) -> LlmCall:
    """A call to the fake server; `changes` override any field."""
    fields: dict[str, object] = {
        "role": "planner",
        "agent_version": "1",
        "prompt_version": "p1",
        "scope": "run-x:tasks:P1-S01",
        "model": "openai/fake-model",
        "api_base": server.base_url,
        "api_key_env": KEY_ENV,
        "messages": [{"role": "user", "content": "Write a memo. 메모를 써 주세요."}],
        "max_tokens": 64,
        "timeout_seconds": 5.0,
    }
    fields.update(changes)
    return LlmCall.model_validate(fields)


def make_gateway(
    sleep: RecordingSleep,
    retry: RetryPolicy | None = None,
    cache: LlmCache | None = None,
    runs_root: Path | None = None,
    budget: Budget | None = None,
) -> Gateway:
    """A gateway with a recording sleep and a fixed jitter draw (no jitter at 0.5)."""
    return Gateway(
        cache=cache,
        runs_root=runs_root,
        budget=budget,
        retry=retry or RetryPolicy(base_delay=0.25, max_delay=2.0),
        sleep=sleep,
        jitter=lambda: 0.5,
    )


def files_text(folder: Path) -> str:
    """Everything written under a folder, as one string."""
    return "\n".join(
        path.read_text(encoding="utf-8", errors="replace")
        for path in folder.rglob("*")
        if path.is_file()
    )


def test_plain_answer(server: FakeOpenAI, sleep: RecordingSleep) -> None:
    """A plain answer comes back with its usage, and the request carries model and key."""
    server.script(text("Here is the memo.", prompt_tokens=30, completion_tokens=5))
    answer = make_gateway(sleep).complete(make_call(server))
    assert answer.text == "Here is the memo."
    assert (answer.prompt_tokens, answer.completion_tokens) == (30, 5)
    assert answer.finish_reason == "stop" and answer.attempts == 1 and not answer.cached
    assert server.requests[0]["model"] == "fake-model"
    assert server.requests[0]["messages"][0]["content"].endswith("메모를 써 주세요.")
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"
    assert "response_format" not in server.requests[0]


def test_stop_sequences_are_sent_where_the_model_takes_them(
    server: FakeOpenAI, sleep: RecordingSleep
) -> None:
    """A call's stop sequences reach a model that takes them; a model litellm says refuses
    them (OpenAI's gpt-5) is called without them rather than failing."""
    server.script(text("Here is the memo."), text("Here is the memo, again."))
    gateway = make_gateway(sleep)
    gateway.complete(make_call(server, stop=["```text"]))
    answer = gateway.complete(make_call(server, model="openai/gpt-5", stop=["```text"]))
    assert answer.text == "Here is the memo, again."
    assert server.requests[0]["stop"] == ["```text"]
    assert server.requests[1]["model"] == "gpt-5" and "stop" not in server.requests[1]


def test_json_mode_sends_response_format(server: FakeOpenAI, sleep: RecordingSleep) -> None:
    """A call that asks for JSON mode sends response_format json_object."""
    server.script(text('{"title": "a", "count": 1}'))
    make_gateway(sleep).complete(make_call(server, json_mode=True))
    assert server.requests[0]["response_format"] == {"type": "json_object"}


def test_tool_names_sanitised_and_mapped_back(server: FakeOpenAI, sleep: RecordingSleep) -> None:
    """Tool names go out provider-safe, also in earlier turns, and come back as the originals."""
    spec = ToolSpec(name="files.read/v2", description="Read a file", parameters={"type": "object"})
    earlier = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c0",
                "type": "function",
                "function": {"name": "files.read/v2", "arguments": "{}"},
            }
        ],
    }
    messages = [
        {"role": "user", "content": "read it"},
        earlier,
        {"role": "tool", "tool_call_id": "c0", "content": "text"},
    ]
    server.script(tools(("files_read_v2", {"path": "assets/a.md"})))
    answer = make_gateway(sleep).complete(make_call(server, tools=[spec], messages=messages))
    sent = server.requests[0]
    assert sent["tools"][0]["function"]["name"] == "files_read_v2"
    assert sent["messages"][1]["tool_calls"][0]["function"]["name"] == "files_read_v2"
    assert answer.tool_calls[0].name == "files.read/v2"
    assert answer.tool_calls[0].arguments == {"path": "assets/a.md"}
    assert answer.finish_reason == "tool_calls"


def test_malformed_json_repaired(server: FakeOpenAI, sleep: RecordingSleep) -> None:
    """Malformed JSON is repaired on the second answer, and the model is shown the errors."""
    server.script(text("Sure! {title: oops"), text('```json\n{"title": "Memo", "count": 2}\n```'))
    result = make_gateway(sleep).complete_json(make_call(server), Memo)
    assert result.value == Memo(title="Memo", count=2)
    assert result.used_repair and result.repair_attempts == 1
    repair = server.requests[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": "Sure! {title: oops"}
    assert "not valid JSON" in repair[-1]["content"]


def test_json_still_malformed_fails(
    server: FakeOpenAI, sleep: RecordingSleep, tmp_path: Path
) -> None:
    """After two failed repairs the guard fails with the last raw answer, and caches nothing."""
    server.script(text("no"), text("still no"), text('{"title": "x"}'))
    gateway = make_gateway(sleep, cache=LlmCache(tmp_path / "cache"))
    with pytest.raises(JsonGuardFailed) as caught:
        gateway.complete_json(make_call(server), Memo)
    assert caught.value.code is LlmErrorCode.INVALID_JSON
    assert caught.value.raw_answer == '{"title": "x"}'
    assert caught.value.attempts == 3 and server.count == 3
    assert any("count" in problem for problem in caught.value.errors)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.json"))


def test_semantic_check_errors_reach_the_model(server: FakeOpenAI, sleep: RecordingSleep) -> None:
    """Errors of the semantic check appear in the repair message the server received."""
    server.script(text('{"title": "x", "count": 3}'), text('{"title": "x", "count": 4}'))

    def even(memo: Memo) -> list[str]:
        return [] if memo.count % 2 == 0 else [f"count {memo.count} must be even"]

    result = make_gateway(sleep).complete_json(make_call(server), Memo, check=even)
    assert result.value.count == 4 and result.repair_attempts == 1
    assert "count 3 must be even" in server.requests[1]["messages"][-1]["content"]


def test_rate_limit_honours_retry_after(server: FakeOpenAI, sleep: RecordingSleep) -> None:
    """A 429 with Retry-After waits exactly that long, then succeeds."""
    server.script(error(429, "slow down", {"Retry-After": "1"}), text("ok"))
    answer = make_gateway(sleep).complete(make_call(server))
    assert answer.text == "ok" and answer.attempts == 2
    assert sleep.delays == [1.0]


def test_retry_after_beyond_deadline_gives_up(server: FakeOpenAI, sleep: RecordingSleep) -> None:
    """A Retry-After longer than the remaining deadline ends the call at once."""
    server.script(error(429, "come back tomorrow", {"Retry-After": "3600"}))
    gateway = make_gateway(sleep, retry=RetryPolicy(total_deadline=30))
    with pytest.raises(LlmError) as caught:
        gateway.complete(make_call(server))
    assert caught.value.code is LlmErrorCode.TRANSIENT_EXHAUSTED
    assert "deadline" in str(caught.value) and "HTTP 429" in str(caught.value)
    assert server.count == 1 and sleep.delays == []


def test_server_error_then_success(server: FakeOpenAI, sleep: RecordingSleep) -> None:
    """A 500 is retried after the backoff delay and the next answer is used."""
    server.script(error(500), text("recovered"))
    answer = make_gateway(sleep).complete(make_call(server))
    assert answer.text == "recovered" and answer.attempts == 2
    assert sleep.delays == [0.25]


def test_attempts_are_bounded(server: FakeOpenAI, sleep: RecordingSleep) -> None:
    """A server that always fails gets exactly max_attempts requests, then TRANSIENT_EXHAUSTED."""
    server.default = error(503, "overloaded")
    gateway = make_gateway(sleep, retry=RetryPolicy(max_attempts=3, base_delay=0.25))
    with pytest.raises(LlmError) as caught:
        gateway.complete(make_call(server))
    assert caught.value.code is LlmErrorCode.TRANSIENT_EXHAUSTED
    assert "HTTP 503" in str(caught.value) and "3 attempt" in str(caught.value)
    assert server.count == 3
    assert sleep.delays == [0.25, 0.5]


def test_hang_times_out_then_retry_succeeds(server: FakeOpenAI, sleep: RecordingSleep) -> None:
    """A request that hangs past its attempt's timeout is retried while the deadline allows."""
    server.script(hang(), text("awake"))
    gateway = make_gateway(sleep, retry=RetryPolicy(total_deadline=30))
    answer = gateway.complete(make_call(server, timeout_seconds=0.3))
    assert answer.text == "awake" and server.count == 2


def test_hangs_exhaust_into_timeout(server: FakeOpenAI, sleep: RecordingSleep) -> None:
    """Hangs on every attempt end in a TIMEOUT error."""
    server.default = hang()
    retry = RetryPolicy(max_attempts=2, base_delay=0.1, total_deadline=30)
    gateway = make_gateway(sleep, retry=retry)
    with pytest.raises(LlmError) as caught:
        gateway.complete(make_call(server, timeout_seconds=0.3))
    assert caught.value.code is LlmErrorCode.TIMEOUT
    assert server.count == 2


def test_dropped_connection_retried(server: FakeOpenAI, sleep: RecordingSleep) -> None:
    """A connection closed without an answer is retried."""
    server.script(drop(), text("second time lucky"))
    answer = make_gateway(sleep).complete(make_call(server))
    assert answer.text == "second time lucky" and server.count == 2


def test_client_error_not_retried(server: FakeOpenAI, sleep: RecordingSleep) -> None:
    """A 400 is a PROVIDER_ERROR at once, without retries."""
    server.script(error(400, "unknown parameter"))
    with pytest.raises(LlmError) as caught:
        make_gateway(sleep).complete(make_call(server))
    assert caught.value.code is LlmErrorCode.PROVIDER_ERROR
    assert "HTTP 400" in str(caught.value) and "unknown parameter" in str(caught.value)
    assert server.count == 1 and sleep.delays == []


def test_missing_key_variable(
    server: FakeOpenAI, sleep: RecordingSleep, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call whose key variable is unset fails clearly without a request."""
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(LlmError, match=KEY_ENV) as caught:
        make_gateway(sleep).complete(make_call(server))
    assert caught.value.code is LlmErrorCode.PROVIDER_ERROR and server.count == 0


def test_length_cut_retried_with_double_tokens(server: FakeOpenAI, sleep: RecordingSleep) -> None:
    """An empty answer cut by the length limit is retried once with twice max_tokens."""
    server.script(length_cut(), text("the full answer"))
    answer = make_gateway(sleep).complete(make_call(server, max_tokens=50))
    assert [body["max_tokens"] for body in server.requests] == [50, 100]
    assert answer.text == "the full answer" and answer.attempts == 2
    assert answer.prompt_tokens == 22  # both requests were paid for


def test_length_cut_retried_only_once(server: FakeOpenAI, sleep: RecordingSleep) -> None:
    """A second empty cut answer is returned as it is (the caller judges it)."""
    server.script(length_cut(), length_cut())
    answer = make_gateway(sleep).complete(make_call(server, max_tokens=50))
    assert answer.text == "" and answer.finish_reason == "length" and server.count == 2


def test_cache_survives_a_restart(
    server: FakeOpenAI, sleep: RecordingSleep, tmp_path: Path
) -> None:
    """A repeated call is served from the disk cache, also by a new gateway (a restart)."""
    server.script(text("first"), text('{"title": "t", "count": 1}'))
    call = make_call(server)
    first = make_gateway(sleep, cache=LlmCache(tmp_path / "cache")).complete(call)
    make_gateway(sleep, cache=LlmCache(tmp_path / "cache")).complete_json(call, Memo)
    assert server.count == 2
    restarted = make_gateway(sleep, cache=LlmCache(tmp_path / "cache"))
    again = restarted.complete(call)
    memo = restarted.complete_json(call, Memo)
    assert server.count == 2
    assert again.text == first.text and again.cached
    assert memo.value == Memo(title="t", count=1) and memo.answer.cached


def test_repaired_json_cached_as_final_answer(
    server: FakeOpenAI, sleep: RecordingSleep, tmp_path: Path
) -> None:
    """A repaired JSON result is re-used after a restart without any call."""
    server.script(text("nope"), text('{"title": "t", "count": 2}'))
    call = make_call(server)
    make_gateway(sleep, cache=LlmCache(tmp_path / "cache")).complete_json(call, Memo)
    again = make_gateway(sleep, cache=LlmCache(tmp_path / "cache")).complete_json(call, Memo)
    assert server.count == 2
    assert again.value.count == 2 and again.repair_attempts == 1 and again.answer.cached


def test_failures_not_cached(server: FakeOpenAI, sleep: RecordingSleep, tmp_path: Path) -> None:
    """A failed call leaves no cache entry, so the next identical call asks the model."""
    server.script(error(400, "bad"), text("fine"))
    gateway = make_gateway(sleep, cache=LlmCache(tmp_path / "cache"))
    with pytest.raises(LlmError):
        gateway.complete(make_call(server))
    assert gateway.complete(make_call(server)).text == "fine"
    assert server.count == 2


def test_usage_written_to_run_folder(
    server: FakeOpenAI, sleep: RecordingSleep, tmp_path: Path
) -> None:
    """Each call adds its tokens to runs/<run_id>/usage.json; cache hits are counted apart."""
    runs = tmp_path / "runs"
    gateway = make_gateway(sleep, runs_root=runs, cache=LlmCache(tmp_path / "cache"))
    call = make_call(server, run_id="run-20261121-000000-001")
    gateway.complete(call)
    gateway.complete(call)
    usage = json.loads((runs / "run-20261121-000000-001" / "usage.json").read_text())
    assert usage["calls"] == 1 and usage["cache_hits"] == 1
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (11, 7)
    assert usage["by_role"]["planner"]["calls"] == 1


def test_known_model_is_priced(server: FakeOpenAI, sleep: RecordingSleep) -> None:
    """A model in litellm's price list gets a cost; an unknown one costs 0 without a crash."""
    server.script(text("a"), text("b"))
    priced = make_gateway(sleep).complete(make_call(server, model="openai/gpt-4o-mini"))
    unknown = make_gateway(sleep).complete(make_call(server, model="openai/no-such-model-x"))
    assert priced.cost_usd > 0
    assert unknown.cost_usd == 0.0


def test_budget_exceeded_then_refused(
    server: FakeOpenAI, sleep: RecordingSleep, tmp_path: Path
) -> None:
    """The call that crosses the token budget fails, and the next is refused without a request."""
    gateway = make_gateway(sleep, runs_root=tmp_path / "runs", budget=Budget(max_tokens_per_run=30))
    call = make_call(server, run_id="run-20261121-000000-002")
    gateway.complete(call)  # 18 tokens
    with pytest.raises(LlmError) as crossed:
        gateway.complete(call.model_copy(update={"scope": "other"}))
    assert crossed.value.code is LlmErrorCode.BUDGET_EXCEEDED
    with pytest.raises(LlmError) as refused:
        gateway.complete(call.model_copy(update={"scope": "third"}))
    assert refused.value.code is LlmErrorCode.BUDGET_EXCEEDED
    assert server.count == 2


def test_keys_never_written_or_logged(
    server: FakeOpenAI, sleep: RecordingSleep, tmp_path: Path
) -> None:
    """No file, log event or error carries the key, even when the provider echoes it."""
    server.script(text(f"your key is {KEY}"), error(401, f"Incorrect API key provided: {KEY}"))
    gateway = make_gateway(sleep, cache=LlmCache(tmp_path / "cache"), runs_root=tmp_path / "runs")
    call = make_call(server, run_id="run-20261121-000000-003")
    with capture_logs() as events:
        gateway.complete(call)
        with pytest.raises(LlmError) as caught:
            gateway.complete(call.model_copy(update={"scope": "again"}))
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"  # the key was really used
    assert "SECRET123" not in str(caught.value) and "***" in str(caught.value)
    assert caught.value.__context__ is None and caught.value.__cause__ is None
    assert "SECRET123" not in repr(events)
    assert {"llm_call", "llm_call_failed"} <= {event["event"] for event in events}
    assert "SECRET123" not in files_text(tmp_path)


def test_call_event_logged(server: FakeOpenAI, sleep: RecordingSleep) -> None:
    """Each call logs one llm_call event with role, model, tokens, cost, latency and cache hit."""
    with capture_logs() as events:
        make_gateway(sleep).complete(make_call(server, run_id="run-1", tier="LOW"))
    (event,) = [event for event in events if event["event"] == "llm_call"]
    assert event["role"] == "planner" and event["model"] == "openai/fake-model"
    assert event["tier"] == "LOW" and event["run_id"] == "run-1"
    assert (event["prompt_tokens"], event["completion_tokens"]) == (11, 7)
    assert event["cache_hit"] is False and event["repairs"] == 0 and event["attempts"] == 1
    assert event["latency_ms"] >= 0 and event["cost_usd"] == 0.0


def test_import_does_not_load_litellm() -> None:
    """Importing the gateway module does not import litellm."""
    code = "import sys, multiverse.gateway; print('litellm' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_sanitize_tool_names_unique_and_valid() -> None:
    """Sanitised names match the provider pattern, stay unique, and keep valid names as they are."""
    names = ["read_file", "web.search", "web search", "x" * 80, "x" * 80 + "y", "ツール"]
    safe = sanitize_tool_names(names)
    assert safe["read_file"] == "read_file"
    assert len(set(safe.values())) == len(names)
    assert all(
        len(value) <= 64 and value.replace("_", "a").replace("-", "a").isalnum() and value.isascii()
        for value in safe.values()
    )


def test_parse_retry_after_forms() -> None:
    """Retry-After is read as seconds or as an HTTP date; junk is ignored."""
    now = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after("Sat, 21 Nov 2026 12:00:30 GMT", now) == 30.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_backoff_grows_and_is_capped() -> None:
    """Backoff doubles per attempt, stays under max_delay, and jitter spreads it."""
    policy = RetryPolicy(base_delay=0.5, max_delay=3.0, jitter=0.2)
    assert [policy.backoff(n, 0.5) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]
    assert policy.backoff(1, 0.0) == pytest.approx(0.4)
    assert policy.backoff(4, 0.999) <= 3.0


@dataclass
class Tier:
    """A tier's settings as the doctor hands them to the ping."""

    api_base: str | None
    api_key_env: str | None
    timeout_seconds: float = 5.0


def test_ping_answers(server: FakeOpenAI) -> None:
    """A reachable model pings as healthy (None)."""
    assert ping_model("openai/fake-model", Tier(server.base_url, KEY_ENV)) is None
    assert server.count == 1


def test_ping_reports_masked_error_without_retry(server: FakeOpenAI) -> None:
    """A failing model pings as its error, masked, after a single request."""
    server.script(error(401, f"Incorrect API key provided: {KEY}"))
    problem = ping_model("openai/fake-model", Tier(server.base_url, KEY_ENV))
    assert problem is not None and "HTTP 401" in problem and "SECRET123" not in problem
    assert server.count == 1
