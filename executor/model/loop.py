"""The bounded tool-calling loop of the sdk adapter (SPEC §11): model turn, tool calls, repeat.

Each turn is one gateway call (scope `<run_id>:<task_id>:turn<n>`, so a restarted daemon is
served every finished turn from the cache). Every tool call goes through the registry, which
never raises: a refusal or a tool's error is handed back to the model as the tool's result.
A model error (LlmError) is not caught here: the role turns it into a FAILED signal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from executor.tools.base import ToolResult
from executor.tools.registry import ToolRegistry
from multiverse.llm import ChatMessage, LlmAnswer, LlmCall, ToolCall, ToolSpec

log = structlog.get_logger(__name__)


class Completer(Protocol):
    """What the loop needs of the gateway."""

    def complete(self, call: LlmCall) -> LlmAnswer:
        """One answer to one call; raises LlmError when the call fails."""
        ...


@dataclass(frozen=True)
class ToolStep:
    """One tool call of one turn and how it went."""

    turn: int
    name: str
    ok: bool
    error: str | None = None


@dataclass(frozen=True)
class LoopOutcome:
    """How the loop ended: the model's last text, whether it finished, what its tools did."""

    finished: bool
    text: str
    turns: int
    steps: list[ToolStep] = field(default_factory=list)


def tool_specs(registry: ToolRegistry) -> list[ToolSpec]:
    """The registry's OpenAI schemas as the gateway's ToolSpecs."""
    specs = []
    for schema in registry.schemas():
        function = schema["function"]
        specs.append(
            ToolSpec(
                name=function["name"],
                description=function.get("description", ""),
                parameters=function.get("parameters") or {"type": "object", "properties": {}},
            )
        )
    return specs


def tool_message(call_id: str, result: ToolResult) -> ChatMessage:
    """The tool's result as the model reads it: its output, or `ERROR: …` (with any output)."""
    if result.ok:
        content = result.output or "(no output)"
    else:
        content = f"ERROR: {result.error or 'the tool failed'}"
        if result.output:
            content += "\n" + result.output
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def assistant_message(answer: LlmAnswer) -> ChatMessage:
    """The model's turn, as it goes back into the conversation (original tool names)."""
    return {
        "role": "assistant",
        "content": answer.text or None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": json.dumps(call.arguments, ensure_ascii=False),
                },
            }
            for call in answer.tool_calls
        ],
    }


def run_call(registry: ToolRegistry, call: ToolCall) -> ToolResult:
    """Run one tool call; arguments the gateway could not parse are an error for the model."""
    if call.arguments_error is not None:
        return ToolResult.failure(f"{call.name}: {call.arguments_error}")
    return registry.call(call.name, call.arguments)


def run_tool_loop(
    gateway: Completer,
    first: LlmCall,
    registry: ToolRegistry,
    max_turns: int,
    scope: str,
) -> LoopOutcome:
    """Turns until the model answers without tool calls, or `max_turns` calls were made."""
    messages = list(first.messages)
    tools = tool_specs(registry)
    steps: list[ToolStep] = []
    text = ""
    for turn in range(1, max_turns + 1):
        call = first.model_copy(
            update={"messages": list(messages), "tools": tools, "scope": f"{scope}:turn{turn}"}
        )
        answer = gateway.complete(call)
        text = answer.text
        if not answer.tool_calls:
            return LoopOutcome(finished=True, text=text, turns=turn, steps=steps)
        messages.append(assistant_message(answer))
        for tool_call in answer.tool_calls:
            result = run_call(registry, tool_call)
            steps.append(ToolStep(turn, tool_call.name, result.ok, result.error))
            messages.append(tool_message(tool_call.id, result))
        log.info(
            "executor_turn",
            run_id=first.run_id,
            scope=call.scope,
            tool_calls=len(answer.tool_calls),
            failed=sum(1 for step in steps if step.turn == turn and not step.ok),
        )
    return LoopOutcome(finished=False, text=text, turns=max_turns, steps=steps)
