"""What finished model calls leave behind: the per-run usage ledger and budget, totals in
`runs/<run_id>/usage.json` (SPEC §10.4), and each role's escalations to a higher tier (§10.2).

A call's prompt tokens are all it sent; `cached_prompt_tokens` are those the provider's own
prompt cache served (OpenAI's `cached_tokens`, Anthropic's cache reads, llama-server's `cache_n`).
An answer replayed from our disk cache is a cache hit: it sent nothing and is counted apart.
A usage.json written before a field existed reads with that field at zero.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock
from pydantic import Field, ValidationError

from multiverse.atomic import atomic_write_text
from multiverse.errors import TableError
from multiverse.gateway.calls import LlmAnswer, LlmData, LlmError, LlmErrorCode

USAGE_FILE = "usage.json"


class Budget(LlmData):
    """A run's limits; None is unlimited."""

    max_tokens_per_run: int | None = Field(default=None, ge=0)
    max_cost_per_run_usd: float | None = Field(default=None, ge=0)


class RoleUsage(LlmData):
    """What one role spent in a run."""

    calls: int = 0
    cache_hits: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    # Work the role retried once on a higher tier (its calls there are counted above).
    escalations: int = 0
    # Of its prompt tokens, those the provider's prompt cache served (0 in older files).
    cached_prompt_tokens: int = 0


class UsageTotals(LlmData):
    """A run's totals of model calls, as kept in usage.json."""

    run_id: str
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    # Of prompt_tokens, those the provider's prompt cache served (0 in older files).
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    by_role: dict[str, RoleUsage] = Field(default_factory=dict)

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens


def add_call(totals: UsageTotals, role: str, answer: LlmAnswer) -> UsageTotals:
    """The totals after one paid call (pure)."""
    before = totals.by_role.get(role, RoleUsage())
    tokens = answer.prompt_tokens + answer.completion_tokens
    mine = before.model_copy(
        update={
            "calls": before.calls + 1,
            "tokens": before.tokens + tokens,
            "cached_prompt_tokens": before.cached_prompt_tokens + answer.cached_tokens,
            "cost_usd": before.cost_usd + answer.cost_usd,
        }
    )
    return totals.model_copy(
        update={
            "calls": totals.calls + 1,
            "prompt_tokens": totals.prompt_tokens + answer.prompt_tokens,
            "cached_prompt_tokens": totals.cached_prompt_tokens + answer.cached_tokens,
            "completion_tokens": totals.completion_tokens + answer.completion_tokens,
            "cost_usd": totals.cost_usd + answer.cost_usd,
            "by_role": {**totals.by_role, role: mine},
        }
    )


def add_cache_hit(totals: UsageTotals, role: str) -> UsageTotals:
    """The totals after one call served from the cache (pure; it cost nothing)."""
    before = totals.by_role.get(role, RoleUsage())
    mine = before.model_copy(update={"cache_hits": before.cache_hits + 1})
    return totals.model_copy(
        update={"cache_hits": totals.cache_hits + 1, "by_role": {**totals.by_role, role: mine}}
    )


def add_escalation(totals: UsageTotals, role: str) -> UsageTotals:
    """The totals after the role's work was retried on a higher tier (pure)."""
    before = totals.by_role.get(role, RoleUsage())
    mine = before.model_copy(update={"escalations": before.escalations + 1})
    return totals.model_copy(update={"by_role": {**totals.by_role, role: mine}})


def combined(totals: UsageTotals, change: UsageTotals, sign: int = 1) -> UsageTotals:
    """`totals` with `change` added (sign 1) or taken away (sign -1), role by role (pure): how a
    remote step's usage is told (its totals after, less its totals before) and then added."""
    roles = {}
    for role in {*totals.by_role, *change.by_role}:
        mine, theirs = totals.by_role.get(role, RoleUsage()), change.by_role.get(role, RoleUsage())
        roles[role] = RoleUsage(
            calls=mine.calls + sign * theirs.calls,
            cache_hits=mine.cache_hits + sign * theirs.cache_hits,
            tokens=mine.tokens + sign * theirs.tokens,
            cost_usd=mine.cost_usd + sign * theirs.cost_usd,
            escalations=mine.escalations + sign * theirs.escalations,
            cached_prompt_tokens=mine.cached_prompt_tokens + sign * theirs.cached_prompt_tokens,
        )
    return totals.model_copy(
        update={
            "calls": totals.calls + sign * change.calls,
            "cache_hits": totals.cache_hits + sign * change.cache_hits,
            "prompt_tokens": totals.prompt_tokens + sign * change.prompt_tokens,
            "cached_prompt_tokens": (
                totals.cached_prompt_tokens + sign * change.cached_prompt_tokens
            ),
            "completion_tokens": totals.completion_tokens + sign * change.completion_tokens,
            "cost_usd": totals.cost_usd + sign * change.cost_usd,
            "by_role": {role: usage for role, usage in roles.items() if usage != RoleUsage()},
        }
    )


def over_budget(totals: UsageTotals, budget: Budget, *, at_limit: bool) -> str | None:
    """Why the totals break the budget, or None; `at_limit` also counts reaching it exactly."""
    tokens, cost = totals.tokens, totals.cost_usd
    limit_tokens, limit_cost = budget.max_tokens_per_run, budget.max_cost_per_run_usd
    if limit_tokens is not None and (
        tokens > limit_tokens or (at_limit and tokens >= limit_tokens)
    ):
        return f"run {totals.run_id} used {tokens} tokens of its budget of {limit_tokens}"
    if limit_cost is not None and (cost > limit_cost or (at_limit and cost >= limit_cost)):
        return f"run {totals.run_id} cost ${cost:.4f} of its budget of ${limit_cost:.4f}"
    return None


class UsageLedger:
    """The usage.json of one run, updated under a cross-process lock."""

    def __init__(self, run_folder: Path, budget: Budget | None = None) -> None:
        self.path = run_folder / USAGE_FILE
        self.run_id = run_folder.name
        self.budget = budget or Budget()
        self._lock = FileLock(str(run_folder / f".{USAGE_FILE}.lock"))

    def totals(self) -> UsageTotals:
        """The run's totals so far (zero if nothing was recorded)."""
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return UsageTotals(run_id=self.run_id)
        try:
            return UsageTotals.model_validate(json.loads(raw))
        except (ValueError, ValidationError) as exc:
            raise TableError(self.path, None, f"unreadable usage totals: {exc}") from None

    def ensure_within_budget(self) -> None:
        """Refuse a new call when the run has already used its budget."""
        reason = over_budget(self.totals(), self.budget, at_limit=True)
        if reason is not None:
            raise LlmError(LlmErrorCode.BUDGET_EXCEEDED, reason)

    def record_call(self, role: str, answer: LlmAnswer) -> UsageTotals:
        """Add a paid call; raises BUDGET_EXCEEDED if it took the run over its budget."""
        totals = self._update(lambda current: add_call(current, role, answer))
        reason = over_budget(totals, self.budget, at_limit=False)
        if reason is not None:
            raise LlmError(LlmErrorCode.BUDGET_EXCEEDED, reason)
        return totals

    def record_cache_hit(self, role: str) -> UsageTotals:
        """Count a call served from the cache."""
        return self._update(lambda current: add_cache_hit(current, role))

    def record_escalation(self, role: str) -> UsageTotals:
        """Count the role's work retried on a higher tier."""
        return self._update(lambda current: add_escalation(current, role))

    def add(self, change: UsageTotals) -> UsageTotals:
        """Add what calls made elsewhere (a remote worker) spent for this run."""
        return self._update(lambda current: combined(current, change))

    def _update(self, change: Callable[[UsageTotals], UsageTotals]) -> UsageTotals:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            totals = change(self.totals())
            atomic_write_text(self.path, totals.model_dump_json(indent=2) + "\n")
        return totals


def carry_pending(pending: Path, run_folder: Path) -> None:
    """Charge a new run with what was spent for it before it existed (its mode decision), once.

    The pending totals become the run's first usage.json; a crash in between is safe: a run that
    already has usage.json was charged before (nothing is spent for a run before it exists).
    """
    source = pending / USAGE_FILE
    target = run_folder / USAGE_FILE
    if source.is_file() and not target.exists():
        totals = UsageLedger(pending).totals().model_copy(update={"run_id": run_folder.name})
        run_folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, totals.model_dump_json(indent=2) + "\n")
    shutil.rmtree(pending, ignore_errors=True)
