"""What the model answers for each plan target: only what needs judgement (SPEC §10.3).

Ids, orders, run ids, statuses, timings and output paths are the code's (planner.model.bookkeeping),
so a model never types them. Each answer model ignores unknown keys (a model that still sends a
task_id or an output_path is not refused, and its values are not used), while the JSON schema
sent to the provider says `additionalProperties: false`. A field whose values come from a list of
the call (references, tool types, superseded ids) is an enum built per call: a value outside it
cannot be decoded when the provider follows the schema, and is refused with a message naming it
when the provider ignores the schema.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import GenericAlias
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
    create_model,
)

MAX_STAGES = 8
MAX_TASKS = 12
MAX_TOOL_TASKS = 8
MAX_INSTRUCTIONS = 12
INSTRUCTION_TYPE_SCHEMA = {"pattern": "^[A-Z][A-Z0-9_]*$", "maxLength": 32}

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
"""A text the model must write."""
Note = Annotated[str, StringConstraints(strip_whitespace=True)]
"""A text the model may leave empty."""


class Answer(BaseModel):
    """Base of a model's answer: unknown keys are ignored, and the schema forbids them."""

    model_config = ConfigDict(
        extra="ignore", frozen=True, json_schema_extra={"additionalProperties": False}
    )


class StageAnswer(Answer):
    """One stage: what it is called and what it produces for later work."""

    name: Text
    goal: Text


class StagesAnswer(Answer):
    """Answer to `stages:<phase_id>`, in execution order."""

    stages: list[StageAnswer] = Field(min_length=1, max_length=MAX_STAGES)


class TaskAnswer(Answer):
    """One task; `references` are numbers of the call's list (an enum per call)."""

    name: Text
    purpose: Text
    references: list[int] = Field(default_factory=list)
    file_name: Note = ""
    pre_tool_purpose: Note = ""
    post_tool_purpose: Note = ""


class TasksAnswer(Answer):
    """Answer to `tasks:<stage_id>`, in execution order."""

    tasks: list[TaskAnswer] = Field(min_length=1, max_length=MAX_TASKS)


class ToolTaskAnswer(Answer):
    """One tool task; `tool_type` is one of the mapping's (an enum per call)."""

    tool_type: str
    name: Text
    purpose: Text


class ToolTasksAnswer(Answer):
    """Answer to `pre_tool:<task_id>` / `post_tool:<task_id>`, in execution order."""

    tool_tasks: list[ToolTaskAnswer] = Field(min_length=1, max_length=MAX_TOOL_TASKS)


class InstructionAnswer(Answer):
    """One proposed instruction; `supersedes` holds ACTIVE past ids only (an enum per call)."""

    # The pattern is for the schema; validate_proposal explains a bad type to the model.
    instruction_type: Annotated[Text, Field(json_schema_extra=INSTRUCTION_TYPE_SCHEMA)]
    content: Text
    justification: Text
    supersedes: list[str] = Field(default_factory=list)


class ProposalAnswer(Answer):
    """Answer to `proposal` (made_offline is ours to set, never the model's)."""

    understanding: Text
    instructions: list[InstructionAnswer] = Field(min_length=1, max_length=MAX_INSTRUCTIONS)
    conflicts: list[Note] = Field(default_factory=list)


def choice(allowed: Sequence[Any], what: str, coerce: Callable[[Any], Any] | None = None) -> Any:
    """A type taking only `allowed` values: an enum in the schema, a named refusal otherwise."""
    values = list(allowed)
    kind = "integer" if all(isinstance(value, int) for value in values) else "string"
    listing = ", ".join(str(value) for value in values)

    def check(value: Any) -> Any:
        value = coerce(value) if coerce is not None else value
        if value not in values:
            raise ValueError(f"{what} {value!r} is not allowed; use one of: {listing}")
        return value

    return Annotated[
        Literal[tuple(values)],
        BeforeValidator(check),
        WithJsonSchema({"type": kind, "enum": values}),
    ]


def list_of(item: Any) -> Any:
    """The type `list[item]` of a type built at run time."""
    return GenericAlias(list, (item,))


def reference_number(paths: Sequence[str]) -> Callable[[Any], Any]:
    """Reads `"2"` as 2, and a listed path as its number (a model ignoring the schema)."""
    numbers = {path: number for number, path in enumerate(paths, start=1)}

    def coerce(value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            return int(text) if text.isdigit() else numbers.get(text, value)
        return value

    return coerce


def tasks_answer(references: Sequence[str], publishing: bool) -> type[TasksAnswer]:
    """The answer model of one tasks call: references are numbers 1..len(references)."""
    numbers = range(1, len(references) + 1)
    reference = choice(numbers, "reference", reference_number(references))
    fields: dict[str, Any] = {"references": (list_of(reference), Field(default_factory=list))}
    if publishing:
        # Only the publishing stage may hand files to the user.
        fields["deliverable"] = (bool, False)
    item = create_model("TaskAnswer", __base__=TaskAnswer, **fields)
    return create_model(
        "TasksAnswer",
        __base__=TasksAnswer,
        tasks=(list_of(item), Field(min_length=1, max_length=MAX_TASKS)),
    )


def tool_tasks_answer(tool_types: Sequence[str]) -> type[ToolTasksAnswer]:
    """The answer model of one tools call: tool_type is one of `tool_types`."""
    item = create_model(
        "ToolTaskAnswer", __base__=ToolTaskAnswer, tool_type=(choice(tool_types, "tool_type"), ...)
    )
    return create_model(
        "ToolTasksAnswer",
        __base__=ToolTasksAnswer,
        tool_tasks=(list_of(item), Field(min_length=1, max_length=MAX_TOOL_TASKS)),
    )


def _no_supersedes(value: Any) -> Any:
    raise ValueError(
        f"supersedes {value!r} is not allowed: no ACTIVE past instruction is known; "
        "leave supersedes empty"
    )


def proposal_answer(active: Sequence[str]) -> type[ProposalAnswer]:
    """The answer model of one proposal call: supersedes only the `active` past ids."""
    if active:
        supersedes: Any = (list_of(choice(active, "supersedes")), Field(default_factory=list))
    else:
        item = Annotated[str, BeforeValidator(_no_supersedes)]
        empty: Any = Field(default_factory=list, json_schema_extra={"maxItems": 0})
        supersedes = (list_of(item), empty)
    instruction = create_model(
        "InstructionAnswer", __base__=InstructionAnswer, supersedes=supersedes
    )
    return create_model(
        "ProposalAnswer",
        __base__=ProposalAnswer,
        instructions=(
            list_of(instruction),
            Field(min_length=1, max_length=MAX_INSTRUCTIONS),
        ),
    )
