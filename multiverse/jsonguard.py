"""The JSON guard's pure half: loose parse, validation into errors, the repair message.

Models wrap JSON in prose and code fences, or leave a trailing comma; the guard is tolerant of
that, and turns every other fault into a list of errors the model is shown (SPEC §10.4).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from multiverse.llm import ChatMessage

T = TypeVar("T", bound=BaseModel)

FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\n(.*?)```", re.DOTALL)
TRAILING_COMMA = re.compile(r",(\s*[}\]])")
MAX_ERRORS_SHOWN = 20


class LooseJsonError(ValueError):
    """The text holds no parseable JSON value."""


@dataclass(frozen=True)
class Verdict(Generic[T]):
    """The outcome of checking one answer: a value, or the errors to show the model."""

    value: T | None = None
    errors: list[str] = field(default_factory=list)


def _candidates(text: str) -> list[str]:
    stripped = text.strip()
    found = [stripped]
    found.extend(match.group(1).strip() for match in FENCE.finditer(text))
    cuts = []
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = stripped.find(opener), stripped.rfind(closer)
        if 0 <= start < end:
            cuts.append((start, stripped[start : end + 1]))
    # The cut that starts first is the outermost value.
    found.extend(cut for _, cut in sorted(cuts))
    return found


def loose_parse(text: str) -> Any:
    """Parse the JSON in `text`: as is, inside a code fence, or cut to the outermost {…}/[…]."""
    candidates = _candidates(text)
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    # Last resort: a trailing comma, the most common slip of small models.
    for candidate in candidates:
        try:
            return json.loads(TRAILING_COMMA.sub(r"\1", candidate))
        except ValueError:
            continue
    if not text.strip():
        raise LooseJsonError("the answer is empty; a JSON value was expected")
    try:
        json.loads(candidates[-1])
    except ValueError as exc:
        raise LooseJsonError(f"the answer is not valid JSON: {exc}") from None
    raise LooseJsonError("the answer is not valid JSON")


def _format_validation(error: ValidationError) -> list[str]:
    lines = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "(root)"
        lines.append(f"{where}: {item['msg']}")
    return lines


def judge(text: str, schema: type[T], check: Callable[[T], list[str]] | None = None) -> Verdict[T]:
    """Parse, validate against `schema`, then run the semantic `check`; collect every error."""
    try:
        data = loose_parse(text)
    except LooseJsonError as exc:
        return Verdict(errors=[str(exc)])
    try:
        value = schema.model_validate(data)
    except ValidationError as exc:
        return Verdict(errors=_format_validation(exc))
    problems = check(value) if check is not None else []
    if problems:
        return Verdict(errors=list(problems))
    return Verdict(value=value)


def repair_messages(answer: str, errors: list[str]) -> list[ChatMessage]:
    """The two messages appended for a repair: the model's answer, then the errors to fix."""
    shown = errors[:MAX_ERRORS_SHOWN]
    more = len(errors) - len(shown)
    listing = "\n".join(f"- {error}" for error in shown)
    if more > 0:
        listing += f"\n- … and {more} more"
    request = (
        "Your previous answer could not be used. Errors:\n"
        f"{listing}\n\n"
        "Answer again with the complete, corrected JSON only: no prose, no code fence."
    )
    return [{"role": "assistant", "content": answer}, {"role": "user", "content": request}]
