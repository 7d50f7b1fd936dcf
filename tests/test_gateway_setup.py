"""The set-up a user writes, through litellm and a real loopback server: keys, deadlines,
sampling, schema-constrained answers, cut and runaway answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from multiverse.config.mapping import parse_runtime_mapping
from multiverse.gateway import Gateway, UsageLedger, carry_pending
from multiverse.gateway.calls import LlmCall, LlmError, LlmErrorCode, RetryPolicy

from fake_openai import FakeOpenAI, error, length_cut, running_server, text

SECRET = "sk-real-openai-SECRET-0123456789"
VALID = '{"mode": "INITIAL_RUN", "reason": "a memo"}'


class Verdict(BaseModel):
    """A small structured answer."""

    mode: str
    reason: str


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    """A running fake OpenAI-compatible server."""
    with running_server() as fake:
        yield fake


def tier_call(server: FakeOpenAI, yaml_tier: str, **changes: object) -> LlmCall:
    """A call built exactly as the roles build it, from a tier written in YAML."""
    mapping = parse_runtime_mapping(
        f"tier_mapping:\n  HIGH:\n    model: openai/local-model\n"
        f"    api_base: {server.base_url}\n{yaml_tier}",
        "runtime-mapping.yaml",
    )
    tier = mapping.tier_mapping["HIGH"]  # type: ignore[index]
    fields: dict[str, object] = {
        "role": "planner",
        "agent_version": "1",
        "prompt_version": "p1",
        "scope": "run-x:mode",
        "messages": [{"role": "user", "content": "Decide."}],
        **tier.call_fields(),
        "max_tokens": tier.answer_tokens(200),
    }
    fields.update(changes)
    return LlmCall.model_validate(fields)


def quick(**retry: float) -> Gateway:
    """A gateway that never waits between attempts."""
    return Gateway(retry=RetryPolicy(**retry), sleep=lambda _: None)  # type: ignore[arg-type]


def test_keyless_api_base_reaches_its_server_without_the_providers_key(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No key configured: the call arrives; a real OPENAI_API_KEY never goes to that host."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server.script(text("fine"))
    answer = quick().complete(tier_call(server, ""))
    assert answer.text == "fine"
    sent = " ".join(f"{k}: {v}" for k, v in server.headers[0].items())
    assert SECRET not in sent
    assert "authorization: bearer no-key" in sent.lower()


def test_a_key_named_by_the_tier_goes_to_its_server(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`api_key_env` sends that variable's key to the tier's api_base, and only it."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("MY_SERVER_KEY", "server-key-42")
    server.script(text("fine"))
    quick().complete(tier_call(server, "    api_key_env: MY_SERVER_KEY\n"))
    headers = {k.lower(): v for k, v in server.headers[0].items()}
    assert headers["authorization"] == "Bearer server-key-42"


def test_timeout_of_600_gives_a_600_second_deadline(server: FakeOpenAI) -> None:
    """The total deadline of a call follows from the tier's timeout_seconds, whatever its size."""
    call = tier_call(server, "    timeout_seconds: 600\n")
    assert call.timeout_seconds == 600
    assert RetryPolicy().deadline(call) == 600
    # A retry whose wait would pass the deadline names it (computed, never waited for).
    clock = iter([0.0, 0.0, 599.9, 599.9, 599.9])
    gateway = Gateway(retry=RetryPolicy(), sleep=lambda _: None, clock=lambda: next(clock))
    server.script(error(503))
    with pytest.raises(LlmError) as caught:
        gateway.complete(call)
    assert "the 600 s deadline" in str(caught.value)


def test_sampling_and_extra_body_arrive_in_the_request(server: FakeOpenAI) -> None:
    """temperature, top_p, penalties, seed and extra_body are sent as the mapping gives them."""
    tier = (
        "    temperature: 0.3\n    top_p: 0.9\n    presence_penalty: 0.5\n    seed: 7\n"
        "    extra_body: {repeat_penalty: 1.1, top_k: 40}\n"
    )
    server.script(text("ok"))
    quick().complete(tier_call(server, tier))
    body = server.requests[0]
    assert body["temperature"] == 0.3 and body["top_p"] == 0.9
    assert body["presence_penalty"] == 0.5 and body["seed"] == 7
    assert body["repeat_penalty"] == 1.1 and body["top_k"] == 40


def test_unset_sampling_is_not_sent(server: FakeOpenAI) -> None:
    """A setting left out of the mapping leaves the server's default in place."""
    server.script(text("ok"))
    quick().complete(tier_call(server, ""))
    assert "temperature" not in server.requests[0] and "top_p" not in server.requests[0]


def test_structured_call_sends_its_json_schema(server: FakeOpenAI) -> None:
    """A self-hosted api_base decodes with the answer's schema (auto), inlined and strict."""
    server.script(text('{"mode": "INITIAL_RUN", "reason": "a memo"}'))
    result = quick().complete_json(tier_call(server, ""), Verdict)
    shape = server.requests[0]["response_format"]
    assert shape["type"] == "json_schema"
    schema = shape["json_schema"]["schema"]
    assert schema["required"] == ["mode", "reason"]
    assert result.answer.constrained is True


def test_structured_output_off_sends_no_schema(server: FakeOpenAI) -> None:
    """`structured_output: off` leaves the answer to the JSON guard alone."""
    server.script(text('{"mode": "INITIAL_RUN", "reason": "a memo"}'))
    result = quick().complete_json(tier_call(server, "    structured_output: off\n"), Verdict)
    assert "response_format" not in server.requests[0]
    assert result.answer.constrained is False


def test_a_server_refusing_the_schema_is_asked_again_without_it(server: FakeOpenAI) -> None:
    """An HTTP 400 about response_format drops the schema; the JSON guard carries on."""
    call = tier_call(server, "", model="openai/schema-refusing-model")
    server.script(
        error(400, "response_format json_schema is not supported"),
        text('{"mode": "INITIAL_RUN", "reason": "a memo"}'),
    )
    result = quick().complete_json(call, Verdict)
    assert result.value.mode == "INITIAL_RUN"
    assert "response_format" in server.requests[0]
    assert "response_format" not in server.requests[1]


def test_a_cut_answer_is_asked_again_with_more_room_not_repaired(server: FakeOpenAI) -> None:
    """A JSON answer cut at the limit is the same question again with all the tier's
    max_tokens: no repair, no broken half shown to the model."""
    server.script(
        length_cut('{"mode": "INITIAL_RUN", "reason": "because the request asks', 200),
        text('{"mode": "INITIAL_RUN", "reason": "a memo"}'),
    )
    result = quick().complete_json(tier_call(server, ""), Verdict)
    assert result.value.reason == "a memo"
    assert result.repair_attempts == 0 and not result.used_repair
    first, again = server.requests
    assert (first["max_tokens"], again["max_tokens"]) == (200, 4096)
    assert again["messages"] == first["messages"]


def test_more_room_never_passes_the_tiers_max_tokens(server: FakeOpenAI) -> None:
    """The re-ask of a cut answer gets at most the tier's max_tokens."""
    server.script(length_cut('{"mode": "INITIAL_RUN", "reason": "long', 200), text(VALID))
    call = tier_call(server, "    max_tokens: 300\n")
    quick().complete_json(call, Verdict)
    assert [body["max_tokens"] for body in server.requests] == [200, 300]


def test_a_cut_without_more_room_fails_naming_the_size_and_the_fix(server: FakeOpenAI) -> None:
    """Cut at the tier's own max_tokens: LENGTH_LIMIT at once, saying the size and what to
    change, never that the model ran away."""
    server.default = length_cut('{"mode": "INITIAL_RUN", "reason": "it is long', 200)
    with pytest.raises(LlmError) as caught:
        quick().complete_json(tier_call(server, "    max_tokens: 200\n"), Verdict)
    assert caught.value.code is LlmErrorCode.LENGTH_LIMIT and server.count == 1
    said = str(caught.value)
    assert "200 tokens" in said and "max_tokens of the MEDIUM tier" in said
    assert "runtime-mapping.yaml" in said and "ran away" not in said


def test_a_second_cut_fails_with_the_size_not_a_retry_loop(server: FakeOpenAI) -> None:
    """Cut again with more room: LENGTH_LIMIT after two requests, no repair or further attempt."""
    server.default = length_cut('{"mode": "INITIAL_RUN", "reason": "it is long', 200)
    with pytest.raises(LlmError) as caught:
        quick().complete_json(tier_call(server, ""), Verdict)
    assert caught.value.code is LlmErrorCode.LENGTH_LIMIT
    assert "after 4096 tokens" in str(caught.value) and "(now 4096)" in str(caught.value)
    assert "ran away" not in str(caught.value)
    assert server.count == 2


def test_a_repeating_answer_fails_at_once(server: FakeOpenAI) -> None:
    """Repeated text to the token limit fails the step on the first answer."""
    loop = '{"mode": "INITIAL_RUN", "reason": "' + "the memo needs a plan. " * 120
    server.default = length_cut(loop, 200)
    with pytest.raises(LlmError) as caught:
        quick().complete_json(tier_call(server, ""), Verdict)
    assert caught.value.code is LlmErrorCode.RUNAWAY
    assert "repeats" in str(caught.value)
    assert server.count == 1


def test_a_pending_ledger_is_carried_into_the_run(server: FakeOpenAI, tmp_path: Path) -> None:
    """A call made before the run exists is charged to the run once it does, exactly once."""
    pending, runs = tmp_path / "pending", tmp_path / "runs"
    gateway = Gateway(runs_root=runs, pending_root=pending, sleep=lambda _: None)
    server.script(text('{"mode": "INITIAL_RUN", "reason": "a memo"}', 50, 9))
    gateway.complete_json(tier_call(server, "", pending_ledger="req.md"), Verdict)
    run = runs / "run-1"
    carry_pending(pending / "req.md", run)
    carry_pending(pending / "req.md", run)  # a repeated intake step charges nothing more
    totals = UsageLedger(run).totals()
    assert (totals.run_id, totals.calls, totals.prompt_tokens) == ("run-1", 1, 50)
    assert not (pending / "req.md").exists()
