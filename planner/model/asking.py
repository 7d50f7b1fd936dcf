"""One plan call (SPEC §10.2, §10.4): prompt, JSON guard with repairs, escalation, PlanFailed.

The gateway's JSON guard sends an invalid answer back with its errors twice. A plan still invalid
after that, or an answer that ran away, is asked once more on the next tier up, when the agent
card's escalation says so and that tier is served by another model (the same model and server
would only repeat the failure; `multiverse.agent_package.tiers_to_try`); the escalation is
logged and counted in the run's usage. Otherwise (or when that fails too) it is a PlanFailed
carrying the errors and the last raw answer. Any other failed call (budget, provider, timeout,
an answer that does not fit in the tier's max_tokens) is a PlanFailed at once. Each call asks
for about the tokens its answer needs, never more than the tier allows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

import structlog
from pydantic import BaseModel

from multiverse.agent_package import AgentCard, AgentPackage, tiers_to_try
from multiverse.config import Tier, TierConfig
from multiverse.gateway import (
    JsonGuardFailed,
    JsonResult,
    LlmCall,
    LlmError,
    ModelCalls,
    capability_failure,
    load_prompt,
)
from multiverse.roles import PlanFailed
from multiverse.spec import with_prefix

PROMPTS_PACKAGE = "planner.prompts"


log = structlog.get_logger(__name__)

A = TypeVar("A", bound=BaseModel)
P = TypeVar("P", bound=BaseModel)


def digest(text: str) -> str:
    """A short, stable fingerprint of a text, for cache scopes and variants."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def checker(
    convert: Callable[[A], P], validate: Callable[[P], list[str]]
) -> Callable[[A], list[str]]:
    """The JSON guard's check: the validation errors of the plan the answer converts into."""

    def check(answer: A) -> list[str]:
        return validate(convert(answer))

    return check


@dataclass(frozen=True)
class PlanJob(Generic[A]):
    """One plan call: what to ask, how to check the answer, and where it belongs."""

    target: str
    template: str
    values: dict[str, str]
    schema: type[A]
    check: Callable[[A], list[str]] | None
    start: Tier
    scope: str
    # About the tokens the answer needs; the tier's max_tokens caps it.
    tokens: int
    run_id: str | None = None
    pending_ledger: str | None = None
    variant: str = "default"
    # The run's prefix (multiverse.spec.run_prefix), first in the system message; "" for the
    # calls before a run has one (the mode and the spec, whose prompts hold the request).
    prefix: str = ""


class Asker:
    """Makes plan calls through the gateway on the model-backed tiers."""

    def __init__(
        self,
        gateway: ModelCalls,
        tier_configs: Mapping[Tier, TierConfig],
        prompts_dir: Path | None = None,
    ) -> None:
        self.gateway = gateway
        self.tier_configs = dict(tier_configs)
        self.prompts_dir = prompts_dir

    def serves(self, tier: Tier) -> bool:
        """Whether a model serves `tier` here."""
        return tier in self.tier_configs

    def tiers(self, card: AgentCard, start: Tier) -> list[Tier]:
        """The start tier, then the card's escalation tier when another model serves it."""
        return tiers_to_try(card, start, self.tier_configs)

    def messages(self, package: AgentPackage, job: PlanJob[A]) -> tuple[str, list[dict[str, str]]]:
        """The call's prompt_version and its messages: the run's prefix and AGENT.md, then the
        rendered template."""
        template = load_prompt(PROMPTS_PACKAGE, job.template, self.prompts_dir)
        user = template.render(job.values)
        version = f"{package.prompt_version}+{template.tag}"
        return version, [
            {"role": "system", "content": with_prefix(job.prefix, package.prompt)},
            {"role": "user", "content": user},
        ]

    def ask(self, package: AgentPackage, job: PlanJob[A]) -> A:
        """The validated answer of one plan call, escalated once if the card says so."""
        version, messages = self.messages(package, job)
        failed: LlmError | None = None
        for tier in self.tiers(package.card, job.start):
            if failed is not None:
                self.gateway.escalated(package.name, job.start.value, tier.value, str(failed),
                                       job.run_id, job.pending_ledger)  # fmt: skip
            config = self.tier_configs[tier]
            call = LlmCall(
                role=package.name,
                agent_version=package.agent_version,
                prompt_version=version,
                variant=job.variant,
                scope=job.scope,
                run_id=job.run_id,
                pending_ledger=job.pending_ledger,
                tier=tier.value,
                **config.call_fields(),
                messages=messages,
                max_tokens=config.answer_tokens(job.tokens),
            )
            try:
                result = self.gateway.complete_json(call, job.schema, job.check)
            except LlmError as error:
                if not capability_failure(error):
                    raise PlanFailed(job.target, [str(error)]) from error
                failed = error
                errors = error.errors if isinstance(error, JsonGuardFailed) else [str(error)]
                log.warning("plan_answer_invalid", target=job.target, run_id=job.run_id,
                            tier=tier.value, errors=errors[:5])  # fmt: skip
                continue
            _log_made(job, tier, result)
            return result.value
        if isinstance(failed, JsonGuardFailed):
            raise PlanFailed(job.target, failed.errors, raw_answer=failed.raw_answer)
        if failed is None:
            raise RuntimeError(f"plan {job.target}: no tier was tried")
        raise PlanFailed(job.target, [str(failed)]) from failed


def _log_made(job: PlanJob[A], tier: Tier, result: JsonResult[A]) -> None:
    log.info(
        "plan_made",
        target=job.target,
        run_id=job.run_id,
        engine="model",
        tier=tier.value,
        model=result.answer.model,
        cached=result.answer.cached,
        used_repair=result.used_repair,
        repair_attempts=result.repair_attempts,
    )
