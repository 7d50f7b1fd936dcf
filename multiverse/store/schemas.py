"""The seven tables: file name, title, row model, and the cell conversion of each (SPEC §3.2).

Also here: the lossless encoding of one table cell, GFM row splitting, and finding the first
top-level pipe table of a markdown file.
"""

from __future__ import annotations

import re
import string
import threading
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


_ESCAPED = {"\\": "\\\\", "|": "\\|", "<": "\\<"}
_PUNCTUATION = frozenset(string.punctuation)
_DECODE = re.compile(r"\\u\{([0-9a-fA-F]{1,6})\}|\\(.)|<br\s*/?>", re.IGNORECASE | re.DOTALL)
# Inside a value: the escaped characters, and the characters written as \u{hex}: every control
# (Unicode category Cc, \x00-\x1f and \x7f-\x9f), surrogate (Cs) and line or paragraph
# separator (Zl, Zp). Those are all the characters str.splitlines() breaks on; "\n" among them
# becomes <br> instead.
_INNER = re.compile(r"[\\|<\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
# Everything `encode_cell` would change: a value without any of it is written as it is.
_NEEDS_WORK = re.compile(r"[\\|<\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]|^\s|\s$")


def _code(char: str) -> str:
    return f"\\u{{{ord(char):x}}}"


def _encode_inner(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\n":
        return "<br>"
    return _ESCAPED.get(char) or _code(char)


def encode_cell(value: str) -> str:
    """Encode a value so that it survives a pipe-table row and decodes back exactly."""
    if not _NEEDS_WORK.search(value):
        return value
    head = tail = ""
    # Edge whitespace would be taken for padding: the first and last characters are coded.
    if value[0].isspace() and value[0] != "\n":
        head, value = _code(value[0]), value[1:]
    if value and value[-1].isspace() and value[-1] != "\n":
        value, tail = value[:-1], _code(value[-1])
    return head + _INNER.sub(_encode_inner, value) + tail


def _decode_match(match: re.Match[str]) -> str:
    hex_digits, escaped = match.group(1), match.group(2)
    if hex_digits is not None:
        code = int(hex_digits, 16)
        return chr(code) if code <= 0x10FFFF else match.group(0)
    if escaped is not None:
        # CommonMark: only ASCII punctuation can be escaped; "\p" stays as typed.
        return escaped if escaped in _PUNCTUATION else match.group(0)
    return "\n"


def decode_cell(raw: str) -> str:
    """Decode a cell's raw text (already stripped of its padding) into its value."""
    if "\\" not in raw and "<" not in raw:
        return raw
    return _DECODE.sub(_decode_match, raw)


def split_row(line: str) -> list[str]:
    """Split one table row into raw, stripped cells, as GitHub's parser does.

    Outer pipes are optional; a backslash escapes the next character, so ``\\|`` never splits
    (and ``\\\\|`` does). Empty cells are kept, unlike mistletoe's own splitter.
    """
    text = line.strip()
    cells: list[str] = []
    start = 0
    index = 0
    length = len(text)
    if text.startswith("|"):
        start = index = 1
    while index < length:
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == "|":
            cells.append(text[start:index].strip())
            start = index + 1
        index += 1
    tail = text[start:].strip()
    if tail or not text.endswith("|") or start == 0 or _ends_escaped(text):
        cells.append(tail)
    return cells


def _ends_escaped(text: str) -> bool:
    """True when the final ``|`` of the line is escaped (so it is content, not a border)."""
    backslashes = len(text) - 1 - len(text[:-1].rstrip("\\"))
    return backslashes % 2 == 1


# mistletoe keeps its token list in module state; swapping it is not thread-safe. Every other
# user of mistletoe (e.g. rendering markdown to HTML) must hold the same lock.
MISTLETOE_LOCK = threading.Lock()

_DELIMITER = re.compile(r"\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*")
# A prose line that cannot open a block which could contain or hide a table: it starts with a
# letter, digit or a few safe characters, and is not an ordered-list item.
_PLAIN = re.compile(r"[^\s>\-*+_=<`~|\[#\\\d]|\d+(?![.)](\s|$))|`(?!``)")
_HEADING = re.compile(r"#{1,6}(\s|$)")


def _is_plain(line: str) -> bool:
    text = line.rstrip("\r\n")
    if not text.strip():
        return True
    if "|" in text:
        return False
    return bool(_HEADING.match(text) or _PLAIN.match(text))


def find_simple_table(lines: list[str]) -> tuple[int, int] | None:
    """(start, count) when the file has the store's simple shape; None means "ask mistletoe"."""
    index = next((n for n, line in enumerate(lines) if line.startswith("|")), None)
    if index is None or not all(_is_plain(line) for line in lines[:index]):
        return None
    if index > 0 and lines[index - 1].strip():
        return None  # a table right under a paragraph line: leave that judgement to mistletoe
    if index + 1 >= len(lines):
        return None
    delimiter = lines[index + 1].rstrip("\r\n")
    if not _DELIMITER.fullmatch(delimiter):
        return None
    if len(split_row(delimiter)) != len(split_row(lines[index].rstrip("\r\n"))):
        return None
    end = index + 2
    while end < len(lines) and "|" in lines[end]:
        end += 1
    return index, end - index


def find_table_with_mistletoe(lines: list[str]) -> tuple[int, int] | None:
    """(start, count) of the first top-level table as mistletoe parses the file."""
    from mistletoe import block_token

    class TableBlock(block_token.Table):
        """A table that keeps its raw lines and skips inline parsing of the cells."""

        def __init__(self, match: tuple[list[str], int]) -> None:
            table_lines, start_line = match
            self.raw_lines = table_lines
            self.line_number = start_line
            self.children = []

    with MISTLETOE_LOCK:
        types = block_token._token_types
        position = types.index(block_token.Table)
        types[position] = TableBlock
        try:
            document = block_token.Document(lines)
        finally:
            types[position] = block_token.Table
    for child in document.children or ():
        if isinstance(child, TableBlock):
            return child.line_number - 1, len(child.raw_lines)
    return None


def find_table(lines: list[str]) -> tuple[int, int] | None:
    """(first line index, line count) of the first top-level table, or None."""
    return find_simple_table(lines) or find_table_with_mistletoe(lines)
