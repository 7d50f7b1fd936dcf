"""One plan call (SPEC §10.2, §10.4): prompt, JSON guard with repairs, escalation, PlanFailed.

The gateway's JSON guard sends an invalid answer back with its errors twice. A plan still invalid
after that is asked once more on the next tier up, when the agent card's escalation says so and
that tier is served by another model (the same model and server would only repeat the failure);
otherwise (or when that fails too) it is a PlanFailed carrying the errors and the last raw
answer. Any other failed call (budget, provider, timeout, an answer that loops or does not fit
in the tier's max_tokens) is a PlanFailed at once. Each call asks for about the tokens its
answer needs, never more than the tier allows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

import structlog
from pydantic import BaseModel

from multiverse.agent_package import NEXT_TIER, AgentCard, AgentPackage
from multiverse.config import Tier, TierConfig
from multiverse.gateway import (
    JsonGuardFailed,
    JsonResult,
    LlmCall,
    LlmError,
    ModelCalls,
    load_prompt,
)
from multiverse.roles import PlanFailed

PROMPTS_PACKAGE = "planner.prompts"


log = structlog.get_logger(__name__)

A = TypeVar("A", bound=BaseModel)
P = TypeVar("P", bound=BaseModel)
ESCALATE_ON = "validation_failed_after_repairs"


def digest(text: str) -> str:
    """A short, stable fingerprint of a text, for cache scopes and variants."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def escalation_tier(card: AgentCard, start: Tier) -> Tier | None:
    """The tier a call that started on `start` is retried on after failed repairs, if any."""
    escalation = card.escalation
    if escalation is None or escalation.on != ESCALATE_ON:
        return None
    if escalation.to == NEXT_TIER:
        return start.next_up()
    target = Tier(escalation.to)
    return None if target is start else target


def checker(
    convert: Callable[[A], P], validate: Callable[[P], list[str]]
) -> Callable[[A], list[str]]:
    """The JSON guard's check: the validation errors of the plan the answer converts into."""

    def check(answer: A) -> list[str]:
        return validate(convert(answer))

    return check


def same_server(first: TierConfig, second: TierConfig) -> bool:
    """Whether two tiers are the same model on the same server."""
    return (first.model, first.api_base) == (second.model, second.api_base)


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
        up = escalation_tier(card, start)
        if up is None or not self.serves(up):
            return [start]
        if same_server(self.tier_configs[start], self.tier_configs[up]):
            return [start]
        return [start, up]

    def messages(self, package: AgentPackage, job: PlanJob[A]) -> tuple[str, list[dict[str, str]]]:
        """The call's prompt_version and its messages: AGENT.md, then the rendered template."""
        template = load_prompt(PROMPTS_PACKAGE, job.template, self.prompts_dir)
        user = template.render(job.values)
        version = f"{package.prompt_version}+{template.tag}"
        return version, [
            {"role": "system", "content": package.prompt},
            {"role": "user", "content": user},
        ]

    def ask(self, package: AgentPackage, job: PlanJob[A]) -> A:
        """The validated answer of one plan call, escalated once if the card says so."""
        version, messages = self.messages(package, job)
        failed: JsonGuardFailed | None = None
        for tier in self.tiers(package.card, job.start):
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
            except JsonGuardFailed as error:
                failed = error
                log.warning("plan_answer_invalid", target=job.target, run_id=job.run_id,
                            tier=tier.value, errors=error.errors[:5])  # fmt: skip
                continue
            except LlmError as error:
                raise PlanFailed(job.target, [str(error)]) from error
            _log_made(job, tier, result)
            return result.value
        if failed is None:
            raise RuntimeError(f"plan {job.target}: no tier was tried")
        raise PlanFailed(job.target, failed.errors, raw_answer=failed.raw_answer)


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
