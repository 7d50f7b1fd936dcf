"""Tests of the per-run usage ledger and budget."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from multiverse.errors import TableError
from multiverse.gateway import LlmAnswer, LlmError, LlmErrorCode
from multiverse.gateway.usage import (
    Budget,
    UsageLedger,
    UsageTotals,
    add_cache_hit,
    add_call,
    add_escalation,
    combined,
    over_budget,
)


def answer(prompt: int = 10, completion: int = 5, cost: float = 0.0) -> LlmAnswer:
    """A paid answer with the given usage."""
    return LlmAnswer(
        text="x",
        finish_reason="stop",
        model="m",
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost_usd=cost,
    )


def test_add_call_sums_totals_and_roles() -> None:
    """A call adds its tokens and cost to the run and to its role."""
    totals = add_call(UsageTotals(run_id="r"), "planner", answer(10, 5, 0.01))
    totals = add_call(totals, "executor", answer(1, 1, 0.02))
    assert (totals.calls, totals.prompt_tokens, totals.completion_tokens) == (2, 11, 6)
    assert totals.cost_usd == pytest.approx(0.03)
    assert totals.by_role["planner"].tokens == 15 and totals.by_role["executor"].calls == 1


def test_cache_hit_costs_nothing() -> None:
    """A cache hit is counted but adds no tokens."""
    totals = add_cache_hit(UsageTotals(run_id="r"), "planner")
    assert totals.cache_hits == 1 and totals.tokens == 0 and totals.calls == 0


def test_escalations_are_counted_per_role_and_carried_by_a_remote_steps_change() -> None:
    """An escalation counts for its role only; a worker's change (after less before) carries
    it back to the daemon's totals."""
    before = add_call(UsageTotals(run_id="r"), "executor", answer())
    after = add_escalation(add_call(before, "executor", answer()), "executor")
    assert after.by_role["executor"].escalations == 1 and after.calls == 2
    change = combined(after, before, sign=-1)
    assert change.by_role["executor"].escalations == 1 and change.calls == 1
    assert combined(before, change) == after


def test_over_budget_limits() -> None:
    """Reaching a limit blocks new calls; only passing it fails the call that did it."""
    totals = UsageTotals(run_id="r", prompt_tokens=60, completion_tokens=40, cost_usd=0.5)
    assert over_budget(totals, Budget(max_tokens_per_run=100), at_limit=False) is None
    assert "100 tokens" in str(over_budget(totals, Budget(max_tokens_per_run=100), at_limit=True))
    assert over_budget(totals, Budget(max_cost_per_run_usd=0.4), at_limit=False) is not None
    assert over_budget(totals, Budget(), at_limit=True) is None


def test_ledger_writes_usage_json(tmp_path: Path) -> None:
    """Totals land in runs/<run_id>/usage.json and read back."""
    run = tmp_path / "runs" / "run-20261121-000000-001"
    ledger = UsageLedger(run)
    ledger.record_call("planner", answer())
    ledger.record_cache_hit("planner")
    data = json.loads((run / "usage.json").read_text(encoding="utf-8"))
    assert data["run_id"] == "run-20261121-000000-001"
    assert (data["calls"], data["cache_hits"], data["prompt_tokens"]) == (1, 1, 10)
    assert UsageLedger(run).totals().completion_tokens == 5


def test_crossing_budget_raises_and_next_is_refused(tmp_path: Path) -> None:
    """The call crossing the budget raises BUDGET_EXCEEDED (recorded); then calls are refused."""
    ledger = UsageLedger(tmp_path / "run", Budget(max_tokens_per_run=20))
    ledger.ensure_within_budget()
    ledger.record_call("planner", answer(10, 5))
    with pytest.raises(LlmError) as crossed:
        ledger.record_call("planner", answer(10, 5))
    assert crossed.value.code is LlmErrorCode.BUDGET_EXCEEDED
    assert ledger.totals().tokens == 30
    with pytest.raises(LlmError, match="30 tokens of its budget of 20"):
        ledger.ensure_within_budget()


def test_cost_budget(tmp_path: Path) -> None:
    """A cost limit is enforced like a token limit."""
    ledger = UsageLedger(tmp_path / "run", Budget(max_cost_per_run_usd=0.05))
    with pytest.raises(LlmError) as crossed:
        ledger.record_call("executor", answer(cost=0.06))
    assert crossed.value.code is LlmErrorCode.BUDGET_EXCEEDED


def test_broken_usage_file_is_reported(tmp_path: Path) -> None:
    """A hand-broken usage.json is a TableError naming the file, never silently reset."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "usage.json").write_text("{oops", encoding="utf-8")
    with pytest.raises(TableError, match=r"usage\.json"):
        UsageLedger(run).record_call("planner", answer())
    assert (run / "usage.json").read_text(encoding="utf-8") == "{oops"


def test_concurrent_updates_lose_nothing(tmp_path: Path) -> None:
    """Updates from many threads at once are all counted (the lock serialises them)."""
    run = tmp_path / "run"

    def worker() -> None:
        ledger = UsageLedger(run)
        for _ in range(10):
            ledger.record_call("executor", answer(1, 1))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert UsageLedger(run).totals().calls == 40
