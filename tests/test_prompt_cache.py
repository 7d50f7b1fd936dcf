"""The provider's prompt cache, measured per call: what the server reports (OpenAI-style
`cached_tokens`, llama-server's `timings.cache_n`) reaches the answer, usage.json and the log,
through litellm and a real loopback server; a replay from our own cache is not counted."""

from __future__ import annotations

import json
from pathlib import Path

from structlog.testing import capture_logs

from multiverse.gateway import Gateway, LlmCache, UsageLedger
from multiverse.gateway.calls import LlmCall, RetryPolicy
from multiverse.gateway.usage import UsageTotals, combined

from fake_openai import FakeOpenAI, llama_timings, text

RUN = "run-20261127-000000-001"


def call(server: FakeOpenAI, scope: str = "s", role: str = "planner") -> LlmCall:
    """A keyless call of `role` to the fake server, charged to RUN."""
    return LlmCall(
        role=role, agent_version="1", prompt_version="p", scope=scope, run_id=RUN,
        model="openai/local-model", api_base=server.base_url,
        messages=[{"role": "user", "content": "Write."}], max_tokens=64,
    )  # fmt: skip


def gateway(tmp_path: Path, cache: bool = False) -> Gateway:
    """A gateway charging runs under tmp_path/runs, never waiting."""
    return Gateway(
        runs_root=tmp_path / "runs",
        cache=LlmCache(tmp_path / "cache") if cache else None,
        retry=RetryPolicy(max_attempts=1),
        sleep=lambda _: None,
    )


def usage(tmp_path: Path) -> dict[str, object]:
    """The run's usage.json."""
    data: dict[str, object] = json.loads((tmp_path / "runs" / RUN / "usage.json").read_text())
    return data


def test_openai_cached_tokens_reach_the_answer_usage_and_log(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """usage.prompt_tokens_details.cached_tokens is the call's cached_tokens, in every record."""
    fake_openai.script(text("a", prompt_tokens=1000, cached_tokens=768))
    with capture_logs() as events:
        answer = gateway(tmp_path).complete(call(fake_openai))
    assert (answer.prompt_tokens, answer.cached_tokens) == (1000, 768)
    totals = usage(tmp_path)
    assert (totals["prompt_tokens"], totals["cached_prompt_tokens"]) == (1000, 768)
    assert totals["by_role"]["planner"]["cached_prompt_tokens"] == 768  # type: ignore[index]
    (event,) = [e for e in events if e["event"] == "llm_call"]
    assert (event["prompt_tokens"], event["cached_tokens"]) == (1000, 768)


def test_llama_server_timings_cache_n_is_the_cached_figure(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """A llama-server answer without prompt_tokens_details: its `timings.cache_n` is counted."""
    fake_openai.script(
        text("a", prompt_tokens=900, timings=llama_timings(cache_n=850, prompt_n=50)),
        text("b", prompt_tokens=120, timings=llama_timings(cache_n=0, prompt_n=120)),
    )
    with capture_logs() as events:
        first = gateway(tmp_path).complete(call(fake_openai, "one", role="executor"))
        gateway(tmp_path).complete(call(fake_openai, "two"))
    assert first.cached_tokens == 850
    totals = usage(tmp_path)
    assert (totals["prompt_tokens"], totals["cached_prompt_tokens"]) == (1020, 850)
    by_role = totals["by_role"]
    assert by_role["executor"]["cached_prompt_tokens"] == 850  # type: ignore[index]
    assert by_role["planner"]["cached_prompt_tokens"] == 0  # type: ignore[index]
    assert [e["cached_tokens"] for e in events if e["event"] == "llm_call"] == [850, 0]


def test_a_stream_closed_early_reports_the_cache_of_a_llama_server_that_sent_timings(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """A stream the gateway closes at the words asked gets no usage from the server: a server
    that has sent llama-server's `timings` once is asked for them in every chunk
    (`timings_per_token`), and the stopped answer counts its `cache_n` and prompt tokens as the
    server reported them; a server that never sent them is never asked (another may refuse a
    field it does not know)."""
    long = "".join(f"Paragraph {n} says what the figures show.\n\n" for n in range(40))
    timings = llama_timings(cache_n=4000, prompt_n=500)
    fake_openai.script(
        text(long, prompt_tokens=4500),  # no timings yet: an OpenAI-like server, as far as known
        text("{}", prompt_tokens=900, timings=llama_timings(cache_n=0, prompt_n=900)),
        text(long, prompt_tokens=4500, timings=timings),
    )
    written = call(fake_openai, "write", role="executor").model_copy(
        update={"stop_repeats": True, "stop_at_words": 30, "max_tokens": 2000})
    first = gateway(tmp_path).complete(written)
    gateway(tmp_path).complete(call(fake_openai, "json"))  # its answer carries `timings`
    second = gateway(tmp_path).complete(written.model_copy(update={"scope": "write-again"}))
    bodies = fake_openai.requests
    assert "timings_per_token" not in bodies[0] and "timings_per_token" not in bodies[1]
    assert bodies[2]["timings_per_token"] is True
    assert (first.finish_reason, second.finish_reason) == ("enough", "enough")
    assert first.cached_tokens == 0
    assert (second.cached_tokens, second.prompt_tokens) == (4000, 4500)
    assert 0 < second.completion_tokens < 40  # the chunks read before the stream was closed
    assert usage(tmp_path)["cached_prompt_tokens"] == 4000


def test_a_provider_that_reports_nothing_counts_zero(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """No cache figure in the response: 0 cached tokens, the prompt tokens as reported."""
    fake_openai.script(text("a", prompt_tokens=40))
    answer = gateway(tmp_path).complete(call(fake_openai))
    assert (answer.prompt_tokens, answer.cached_tokens) == (40, 0)
    assert usage(tmp_path)["cached_prompt_tokens"] == 0


def test_a_replay_from_our_cache_is_no_provider_cache_hit(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """An answer served from the disk cache is a cache hit, with no cached prompt tokens."""
    fake_openai.script(text("a", prompt_tokens=500, cached_tokens=400))
    with capture_logs() as events:
        gateway(tmp_path, cache=True).complete(call(fake_openai))
        replay = gateway(tmp_path, cache=True).complete(call(fake_openai))
    assert replay.cached and fake_openai.count == 1
    totals = usage(tmp_path)
    assert (totals["calls"], totals["cache_hits"], totals["cached_prompt_tokens"]) == (1, 1, 400)
    logged = [(e["cache_hit"], e["cached_tokens"]) for e in events if e["event"] == "llm_call"]
    assert logged == [(False, 400), (True, 0)]


def test_an_older_usage_file_reads_with_no_cached_tokens(tmp_path: Path) -> None:
    """usage.json written before cached prompt tokens were kept reads as 0 of them."""
    run = tmp_path / "runs" / RUN
    run.mkdir(parents=True)
    role = {"calls": 2, "cache_hits": 0, "tokens": 39, "cost_usd": 0.0}
    old = {"run_id": RUN, "calls": 2, "cache_hits": 0, "prompt_tokens": 30,
           "completion_tokens": 9, "cost_usd": 0.0, "by_role": {"planner": role}}  # fmt: skip
    (run / "usage.json").write_text(json.dumps(old), encoding="utf-8")
    totals = UsageLedger(run).totals()
    assert totals.cached_prompt_tokens == 0 and totals.by_role["planner"].cached_prompt_tokens == 0


def test_a_remote_steps_cached_tokens_are_added_and_taken_away() -> None:
    """Usage told by a remote worker carries its cached prompt tokens, role by role."""
    before = UsageTotals(run_id="r", prompt_tokens=10, cached_prompt_tokens=4)
    change = UsageTotals.model_validate({
        "run_id": "r", "calls": 1, "prompt_tokens": 100, "cached_prompt_tokens": 60,
        "by_role": {"executor": {"calls": 1, "tokens": 110, "cached_prompt_tokens": 60}},
    })  # fmt: skip
    after = combined(before, change)
    assert after.cached_prompt_tokens == 64 and after.by_role["executor"].cached_prompt_tokens == 60
    assert combined(after, change, sign=-1) == before
