"""Tool calls a model wrote as text, recognised (pure).

Small models served without native tool calling (llama.cpp's llama-server with most chat
templates) write their calls in the answer's text: a JSON object in a ```json fence or bare,
a list of them, or Qwen's `<tool_call>{...}</tool_call>`. Shapes seen:
`{"name": ..., "arguments": {...}}`, `{"tool": ..., "args"|"parameters"|"arguments": ...}`,
`{"function": {"name": ..., "arguments": ...}}` and `{"tool_calls": [...]}`. Only an object
naming a known tool is a call: the final result JSON (`{"status": "COMPLETED", ...}`) is not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from typing import Any

from multiverse.llm import ToolCall

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.S)
_FENCED = re.compile(
    r"^[ \t]*(`{3,})[ \t]*(?:json|tool_call|tool|javascript)?[ \t]*\n(.*?)\n[ \t]*\1",
    re.S | re.M | re.I,
)
NAME_KEYS = ("name", "tool", "tool_name", "function_name")
ARGUMENT_KEYS = ("arguments", "args", "parameters", "input", "params")
_DECODER = json.JSONDecoder()


def _values(text: str) -> Iterator[Any]:
    """Every JSON value in the text: inside tags, else in fences, else bare."""
    tagged = [match.group(1) for match in _TAGGED.finditer(text)]
    fenced = [match.group(2) for match in _FENCED.finditer(text)]
    chunks = tagged or fenced
    if chunks:
        for chunk in chunks:
            yield from _decoded(chunk)
        return
    yield from _decoded(text)


def _decoded(chunk: str) -> Iterator[Any]:
    """The JSON values found in a chunk, scanning from each `{` or `[`."""
    index = 0
    while True:
        starts = [i for i in (chunk.find("{", index), chunk.find("[", index)) if i >= 0]
        if not starts:
            return
        start = min(starts)
        try:
            value, end = _DECODER.raw_decode(chunk, start)
        except ValueError:
            index = start + 1
            continue
        yield value
        index = end


def _name_and_arguments(item: dict[str, Any]) -> tuple[Any, Any]:
    function = item.get("function")
    if isinstance(function, dict):
        return function.get("name"), function.get("arguments", function.get("parameters"))
    name = next((item[key] for key in NAME_KEYS if key in item), None)
    arguments = next((item[key] for key in ARGUMENT_KEYS if key in item), None)
    return name, arguments


def _call(item: dict[str, Any], known: Collection[str], number: int) -> ToolCall | None:
    name, arguments = _name_and_arguments(item)
    if not isinstance(name, str) or name not in known:
        return None
    problem = None
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError as error:
            problem, arguments = f"tool arguments are not valid JSON: {error}", {}
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        problem, arguments = "tool arguments are not a JSON object", {}
    return ToolCall(id=f"text_call_{number}", name=name, arguments=arguments,
                    arguments_error=problem)  # fmt: skip


def _items(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, list):
        for item in value:
            yield from _items(item)
    elif isinstance(value, dict):
        calls = value.get("tool_calls")
        if isinstance(calls, list):
            yield from _items(calls)
        else:
            yield value


def text_tool_calls(text: str, known: Collection[str]) -> list[ToolCall]:
    """The calls of known tools written in `text`, in order; none when it holds no such call."""
    calls: list[ToolCall] = []
    for value in _values(text):
        for item in _items(value):
            call = _call(item, known, len(calls))
            if call is not None:
                calls.append(call)
    return calls
