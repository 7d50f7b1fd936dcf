"""The seven tables: file name, title, row model, and the cell conversion of each (SPEC §3.2)."""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, TypeVar

from multiverse.models import (
    CatalogEntry,
    MajorStage,
    Phase,
    PhaseTemplate,
    ProcessRun,
    Row,
    Task,
    ToolTask,
    UserInstruction,
)

R = TypeVar("R", bound=Row)


def _allows_none(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return type(None) in typing.get_args(annotation)
    return False


def _is_list(annotation: Any) -> bool:
    return typing.get_origin(annotation) is list


@dataclass(frozen=True)
class TableSpec(Generic[R]):
    """How one table's rows map to a markdown file's cells."""

    filename: str
    title: str
    description: str
    model: type[R]
    columns: tuple[str, ...] = field(init=False)
    _nullable: frozenset[str] = field(init=False, repr=False)
    _lists: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        fields = self.model.model_fields
        object.__setattr__(self, "columns", tuple(fields))
        nullable = {name for name, info in fields.items() if _allows_none(info.annotation)}
        lists = {name for name, info in fields.items() if _is_list(info.annotation)}
        object.__setattr__(self, "_nullable", frozenset(nullable))
        object.__setattr__(self, "_lists", frozenset(lists))

    @property
    def key(self) -> str:
        """The key column."""
        return self.model.key_field

    def to_cells(self, row: R) -> list[str]:
        """A row's values as cell strings, in column order."""
        cells = []
        for name in self.columns:
            value = getattr(row, name)
            if value is None:
                cells.append("")
            elif isinstance(value, Enum):
                cells.append(str(value.value))
            elif isinstance(value, list):
                cells.append("\n".join(value))
            else:
                cells.append(str(value))
        return cells

    def from_cells(self, cells: list[str]) -> R:
        """Build (and validate) a row from its cell strings; raises pydantic's ValidationError."""
        data: dict[str, Any] = {}
        for name, value in zip(self.columns, cells, strict=True):
            if name in self._lists:
                data[name] = [item.strip() for item in value.split("\n") if item.strip()]
            elif value == "" and name in self._nullable:
                data[name] = None
            else:
                data[name] = value
        return self.model.model_validate(data)


PROCESS_RUNS = TableSpec(
    "process_runs.md",
    "Process runs",
    "Every run: its request, its status and where its attention is now.",
    ProcessRun,
)
USER_INSTRUCTIONS = TableSpec(
    "user_instructions.md",
    "User instructions",
    "Every confirmed instruction of every run, ACTIVE or SUPERSEDED.",
    UserInstruction,
)
KNOWLEDGE_CATALOG = TableSpec(
    "knowledge_base_catalog.md",
    "Knowledge base catalog",
    "Every known file (assets, guidelines, every output of every run) with a summary.",
    CatalogEntry,
)
PHASES = TableSpec("phases.md", "Phases", "The phases of this run.", Phase)
MAJOR_STAGES = TableSpec(
    "major_stages.md", "Major stages", "The planned stages of each phase.", MajorStage
)
TASKS = TableSpec("tasks.md", "Tasks", "The planned tasks of each stage.", Task)
TOOL_TASKS = TableSpec(
    "tool_tasks.md", "Tool tasks", "PRE and POST helper steps of the tasks.", ToolTask
)

PHASE_TEMPLATE = TableSpec(
    "default_phases.md", "Default phases", "The fixed four-phase method.", PhaseTemplate
)

GLOBAL_TABLES: tuple[TableSpec[Any], ...] = (PROCESS_RUNS, USER_INSTRUCTIONS, KNOWLEDGE_CATALOG)
RUN_TABLES: tuple[TableSpec[Any], ...] = (PHASES, MAJOR_STAGES, TASKS, TOOL_TASKS)
