"""The JSON schema a structured answer is decoded with (`response_format` of type json_schema).

Pydantic writes nested models as `$ref`s into `$defs`; servers that turn a schema into a grammar
(llama.cpp, Ollama) differ in how much of that they follow, so the schema is sent inlined.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

DROPPED = ("title",)


def _inline(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen:  # a recursive model cannot be inlined: keep the schema open there
            return {}
        return _inline(defs[name], defs, (*seen, name))
    return {
        key: _inline(value, defs, seen)
        for key, value in node.items()
        if key not in DROPPED and key != "$defs"
    }


def answer_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s JSON schema with every `$ref` inlined and titles dropped."""
    schema = model.model_json_schema()
    inlined = _inline(schema, schema.get("$defs", {}), ())
    return inlined if isinstance(inlined, dict) else {}
