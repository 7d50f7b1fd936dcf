"""Test doubles shared by the tests: real implementations of the project's interfaces, scripted.

`ScriptedGateway` is the gateway's interface (`multiverse.gateway.ModelCalls`: `complete`,
`complete_json` and `escalated`) with a queue of answers and the history of the calls it was given;
`RecordingSleep` is an injected sleep that returns at once and remembers what it was asked to
wait. For the litellm path itself, tests use `fake_openai` (a loopback server) instead.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel

from multiverse.gateway import JsonGuardFailed, JsonResult, LlmAnswer, LlmCall
from multiverse.gateway.calls import judge, repair_messages
from multiverse.gateway.gateway import MAX_REPAIRS

T = TypeVar("T", bound=BaseModel)
Scripted = LlmAnswer | str | tuple[str, str]  # an answer, a text, or (text, finish_reason)


class ScriptedGateway:
    """A gateway answering each call with the next scripted answer; `calls` is the history."""

    def __init__(self, *answers: Scripted) -> None:
        self.answers: deque[Scripted] = deque(answers)
        self.calls: list[LlmCall] = []
        self.escalations: list[tuple[str, str, str]] = []  # (role, from tier, to tier)

    def complete(self, call: LlmCall) -> LlmAnswer:
        """The next scripted answer (a text alone finishes with `stop`)."""
        self.calls.append(call)
        if not self.answers:
            raise AssertionError(f"no scripted answer left for call {len(self.calls)}")
        answer = self.answers.popleft()
        if isinstance(answer, LlmAnswer):
            return answer
        text, finish = (answer, "stop") if isinstance(answer, str) else answer
        return LlmAnswer(text=text, finish_reason=finish, model=call.model)

    def complete_json(
        self, call: LlmCall, schema: type[T], check: Callable[[T], list[str]] | None = None
    ) -> JsonResult[T]:
        """The next scripted answer validated against `schema`; an invalid one is sent back
        for repair (the next answer) up to the gateway's number of repairs, as it does."""
        attempt = call
        for repairs in range(MAX_REPAIRS + 1):
            answer = self.complete(attempt)
            verdict = judge(answer.text, schema, check)
            if verdict.value is not None:
                return JsonResult(verdict.value, answer.text, repairs > 0, repairs, answer)
            messages = [*attempt.messages, *repair_messages(answer.text, verdict.errors)]
            attempt = attempt.model_copy(update={"messages": messages})
        raise JsonGuardFailed(answer.text, verdict.errors, MAX_REPAIRS + 1)

    def escalated(
        self,
        role: str,
        from_tier: str,
        to_tier: str,
        reason: str,
        run_id: str | None = None,
        pending_ledger: str | None = None,
    ) -> None:
        """Remember the escalation."""
        self.escalations.append((role, from_tier, to_tier))


class RecordingSleep:
    """A sleep that returns at once and remembers what it was asked to wait."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
