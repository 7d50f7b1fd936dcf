"""Plain data of a model call (SPEC §10.4): the call, the answer, the retry policy, the errors,
the JSON schema a structured answer is decoded with, the JSON guard's pure half, and the prompt
templates every model-backed role fills (one kind, whatever the role). What a cut answer becomes
is multiverse.gateway.stream.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from multiverse.config import ProcessSpec
from multiverse.errors import MultiverseError

ChatMessage = dict[str, Any]
"""One chat message in OpenAI format: {"role": ..., "content": ...}."""

T = TypeVar("T", bound=BaseModel)
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class LlmData(BaseModel):
    """Base of the call data: strict, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolSpec(LlmData):
    """A tool offered to the model: its name, what it does, its JSON-schema parameters."""

    name: str = Field(min_length=1)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ToolCall(LlmData):
    """A tool the model asked for, under its original (unsanitised) name."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    arguments_error: str | None = None


class LlmCall(LlmData):
    """One model call and everything that identifies it for the cache and the ledger."""

    role: str
    agent_version: str
    prompt_version: str
    variant: str = "default"
    scope: str
    run_id: str | None = None
    # Charged to this pending ledger when the call belongs to no run yet (intake's mode call).
    pending_ledger: str | None = None
    tier: str = "MEDIUM"
    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    messages: list[ChatMessage]
    tools: list[ToolSpec] = Field(default_factory=list)
    max_tokens: int = Field(default=1024, ge=1)
    # The tier's max_tokens: the most a cut answer asked again may be given (None: no ceiling).
    tier_max_tokens: int | None = Field(default=None, ge=1)
    # A text answer cut by the limit is continued up to this many times (0: returned cut).
    continuations: int = Field(default=0, ge=0)
    # The whole time the call may take, retries included (RetryPolicy may set a shorter one).
    timeout_seconds: float = Field(default=60.0, gt=0)
    sampling: dict[str, float | int] = Field(default_factory=dict)
    extra_body: dict[str, Any] = Field(default_factory=dict)
    stop: list[str] = Field(default_factory=list)
    # A text answer read as a stream and stopped where it starts writing again what it wrote
    # (multiverse.gateway.stream): finish reason `repeat`.
    stop_repeats: bool = False
    # With stop_repeats: also closed at the first paragraph's end past this many words (the
    # most the length asked allows): finish reason `enough`.
    stop_at_words: int | None = Field(default=None, ge=1)
    # With stop_repeats: also closed at the end of a table's row past this many (a working text
    # copies no table out): finish reason `table`.
    stop_at_rows: int | None = Field(default=None, ge=1)
    json_mode: bool = False
    # For complete_json: send the answer's JSON schema as response_format (auto/on/off).
    structured_output: str = "auto"
    # A process tier: the answer is the stdout of this command, not a provider's (SPEC §11).
    process: ProcessSpec | None = None


class LlmAnswer(LlmData):
    """What a call produced, with its cost and how it was obtained."""

    text: str
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str
    model: str
    prompt_tokens: int = 0
    # Of prompt_tokens, those the provider's prompt cache served (not our cache: `cached`).
    cached_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cached: bool = False
    # The calls whose answers were joined into this one (a cut answer continued: more than 1).
    parts: int = 1
    latency_ms: float = 0.0
    attempts: int = 1
    # Decoded with the answer's JSON schema (response_format json_schema).
    constrained: bool = False


@dataclass(frozen=True)
class JsonResult(Generic[T]):
    """A validated JSON answer: the value, the raw text, and whether repairs were needed."""

    value: T
    raw: str
    used_repair: bool
    repair_attempts: int
    answer: LlmAnswer


class LlmErrorCode(StrEnum):
    """Why a model call failed."""

    TRANSIENT_EXHAUSTED = "TRANSIENT_EXHAUSTED"
    TIMEOUT = "TIMEOUT"
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
    PROVIDER_ERROR = "PROVIDER_ERROR"
    INVALID_JSON = "INVALID_JSON"
    # An answer that loops; LENGTH_LIMIT: one that did not fit in the room the tier allows.
    RUNAWAY = "RUNAWAY"
    LENGTH_LIMIT = "LENGTH_LIMIT"
    # A process tier's command (SPEC §11): exit 1-127, death by a signal, silence too long.
    PROCESS_EXIT = "PROCESS_EXIT"
    SIGNAL_EXIT = "SIGNAL_EXIT"
    NO_OUTPUT = "NO_OUTPUT"


class LlmError(MultiverseError):
    """A model call that failed; `code` says why. Messages never carry a key."""

    def __init__(self, code: LlmErrorCode, message: str) -> None:
        self.code = code
        self.detail = message
        super().__init__(f"{code.value}: {message}")


class JsonGuardFailed(LlmError):
    """The model's answer stayed invalid after every repair (a FAILED signal)."""

    def __init__(self, raw_answer: str, errors: list[str], attempts: int) -> None:
        self.raw_answer = raw_answer
        self.errors = errors
        self.attempts = attempts
        summary = "; ".join(errors[:5])
        super().__init__(
            LlmErrorCode.INVALID_JSON, f"answer invalid after {attempts} attempts: {summary}"
        )


class RetryPolicy(LlmData):
    """Bounded retries of transient faults: attempts, exponential backoff, a total deadline."""

    max_attempts: int = Field(default=3, ge=1)
    base_delay: float = Field(default=0.5, ge=0)
    max_delay: float = Field(default=8.0, ge=0)
    # None: a call's deadline is its own timeout_seconds (the tier's), whatever its size.
    total_deadline: float | None = Field(default=None, gt=0)
    jitter: float = Field(default=0.25, ge=0, le=1)

    def deadline(self, call: LlmCall) -> float:
        """Seconds the whole call may take, retries included."""
        return self.total_deadline if self.total_deadline is not None else call.timeout_seconds

    def backoff(self, attempt: int, unit: float) -> float:
        """Delay after failed attempt `attempt` (1-based); `unit` in [0, 1) draws the jitter."""
        raw = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return min(self.max_delay, max(0.0, raw * (1 + self.jitter * (2 * unit - 1))))


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (seconds or an HTTP date); None if absent."""
    if value is None or not value.strip():
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def sanitize_tool_names(names: list[str]) -> dict[str, str]:
    """Map each original tool name to a unique provider-safe name (^[a-zA-Z0-9_-]{1,64}$)."""
    safe: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        base = re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64] or "tool"
        candidate, number = base, 1
        while candidate in taken:
            number += 1
            suffix = f"_{number}"
            candidate = base[: 64 - len(suffix)] + suffix
        taken.add(candidate)
        safe[name] = candidate
    return safe


def json_schema_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI `response_format` asking for answers that validate against `schema`."""
    safe = re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64] or "answer"
    return {"type": "json_schema", "json_schema": {"name": safe, "schema": schema}}


@dataclass(frozen=True)
class Attempt:
    """What one attempt of a call sends beyond the call itself."""

    api_key: str | None
    max_tokens: int
    timeout: float
    response_format: dict[str, Any] | None = None


def openai_request(call: LlmCall, names: dict[str, str], attempt: Attempt) -> dict[str, Any]:
    """The keyword arguments of litellm.completion for one attempt of `call`."""
    kwargs: dict[str, Any] = {
        "model": call.model,
        "messages": renamed_tool_calls(call.messages, names) if names else call.messages,
        "max_tokens": attempt.max_tokens,
        **call.sampling,
        "timeout": attempt.timeout,
        "max_retries": 0,  # the OpenAI client would retry on its own; we own the loop
    }
    if call.api_base:
        kwargs["api_base"] = call.api_base
    if attempt.api_key:
        kwargs["api_key"] = attempt.api_key
    if call.stop:
        kwargs["stop"] = list(call.stop)
    if call.extra_body:
        kwargs["extra_body"] = dict(call.extra_body)
    if attempt.response_format is not None:
        kwargs["response_format"] = attempt.response_format
    elif call.json_mode:
        kwargs["response_format"] = {"type": "json_object"}
    if call.tools:
        kwargs["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": names[tool.name],
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            }
            for tool in call.tools
        ]
        # litellm 1.10x imports its MCP bridge (needing the optional `mcp` package) whenever
        # tools are given; this internal flag, never sent to the provider, skips that path.
        kwargs["_skip_mcp_handler"] = True
    return kwargs


def renamed_tool_calls(messages: list[dict[str, Any]], names: dict[str, str]) -> list[Any]:
    """Earlier tool calls in the conversation, renamed as the provider knows them."""
    result: list[Any] = []
    for message in messages:
        calls = message.get("tool_calls")
        if calls:
            renamed = []
            for item in calls:
                function = dict(item.get("function", {}))
                function["name"] = names.get(function.get("name", ""), function.get("name"))
                renamed.append({**item, "function": function})
            message = {**message, "tool_calls": renamed}
        result.append(message)
    return result


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


_PROMPT_HEADER = re.compile(r"\A<!--\s*prompt_version:\s*([^\s>]+)\s*-->[ \t]*\r?\n")


class PromptError(RuntimeError):
    """A prompt template that cannot be loaded or rendered: our own bug, never the model's."""


@dataclass(frozen=True)
class PromptTemplate:
    """A role's message template: its name, the version it declares, and its text."""

    name: str
    version: str
    body: str

    @property
    def tag(self) -> str:
        """`<name>-<version>.<hash>`, the part of a call's prompt_version (and so of its cache
        key) the template adds: an edit of the text asks again even if its version was not
        raised."""
        digest = hashlib.sha256(self.body.encode("utf-8")).hexdigest()[:8]
        return f"{self.name}-{self.version}.{digest}"

    def render(self, values: Mapping[str, str] | None = None, /, **named: str) -> str:
        """The text with every `$name` filled; a missing value raises PromptError."""
        try:
            return string.Template(self.body).substitute({**(values or {}), **named})
        except KeyError as error:
            raise PromptError(
                f"prompt template {self.name!r} needs a value for ${error.args[0]}"
            ) from None
        except ValueError as error:
            raise PromptError(f"prompt template {self.name!r} is malformed: {error}") from None


def parse_prompt(name: str, text: str) -> PromptTemplate:
    """A template from its file text; the first line must declare its prompt_version."""
    match = _PROMPT_HEADER.match(text)
    if match is None:
        raise PromptError(
            f"prompt template {name!r} must start with a line <!-- prompt_version: X -->"
        )
    return PromptTemplate(name=name, version=match.group(1), body=text[match.end() :])


def load_prompt(package: str, name: str, folder: Path | None = None) -> PromptTemplate:
    """The template `<name>.md` shipped in `package` (e.g. `planner.prompts`), or read from
    `folder` instead when given."""
    file_name = name if name.endswith(".md") else f"{name}.md"
    try:
        if folder is None:
            text = resources.files(package).joinpath(file_name).read_text("utf-8")
        else:
            text = (folder / file_name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise PromptError(f"prompt template {file_name} cannot be read: {error}") from None
    return parse_prompt(file_name.removesuffix(".md"), text)
