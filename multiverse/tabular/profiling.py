"""A table's profile: each column's role, kind and unit, its time axis, and its shape.

`analyse` keeps what the profile was computed from (the numbers, each row's period), so a chart,
a lookup or a fact reuses the very reading the proposal's preview was made from.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from multiverse.tabular.cells import CellNumber, Numbers, parse_number, read_numbers
from multiverse.tabular.columns import (
    AGGREGATION,
    Definition,
    category_or_text,
    find_definitions,
    identifier_name,
    identifies_rows,
    kind_of_unit,
    measure_kind,
    measure_unit,
    prose_units,
    says_counts,
    unit_words_at_end,
)
from multiverse.tabular.models import ColumnProfile, Kind, TableProfile, TimeAxis, WideGroup
from multiverse.tabular.reading import Table, home_relative, read_table
from multiverse.tabular.timeaxis import (
    Found,
    RowTimes,
    WideTime,
    calendar_parts,
    category_group,
    detect,
    time_columns,
)

if TYPE_CHECKING:
    import pandas as pd

MAX_CATEGORY_VALUES = 500  # every country of the world: a filter names only values kept here
_EXAMPLES = 5


@dataclass
class Analysis:
    """A table, its profile and the readings behind it."""

    table: Table
    profile: TableProfile
    numbers: dict[str, Numbers]  # the numeric columns
    readings: dict[str, Numbers]  # every column, read once
    times: RowTimes | None  # each row's period (None: no time axis in the rows)
    wide_time: WideTime | None = None  # periods named by columns
    definitions: dict[str, Definition] = field(default_factory=dict)
    # Each column's cells as a list, made at the first `cell` of it: a series' points each
    # look up one cell, and a pandas lookup costs a hundred times a list's.
    _texts: dict[str, list[object]] = field(default_factory=dict, repr=False, compare=False)

    def cell(self, column: str, row: int) -> tuple[str, CellNumber | None]:
        """A cell as written and its number, read the way its column writes numbers."""
        texts = self._texts.get(column)
        if texts is None:
            texts = self._texts[column] = self.table.cells(column).tolist()
        text = str(texts[row])
        reading = self.readings.get(column)
        return text, parse_number(text, decimal_comma=bool(reading and reading.decimal_comma))


def profile(path: Path, *, root: Path, descriptions: Sequence[str] = (),
            sheet: str | None = None) -> TableProfile:
    """Profile a table of the home: columns, time axis, shape, categories and a summary."""
    return analysed(path, root=root, sheet=sheet, descriptions=descriptions).profile


# The last analyses, each kept for the thread that made it, by the table's bytes: a step computing
# a dozen facts and charts of one table read and analysed it a dozen times. Never shared between
# threads (pandas objects are not made to be read from several at once); keyed by content, so a
# table changed in any way, however fast, is read again. Bounded for the whole process: the
# files kept total at most 16 MB (an analysis takes about ten times its file), none over 4 MB.
_KEPT: OrderedDict[tuple[object, ...], tuple[int, Analysis]] = OrderedDict()
_KEPT_GUARD = threading.Lock()
_KEPT_BYTES = 16 * 1024 * 1024
_KEPT_FILE_BYTES = 4 * 1024 * 1024
_kept_bytes = 0


def analysed(path: Path, *, root: Path, sheet: str | None = None,
             descriptions: Sequence[str] = ()) -> Analysis:
    """A table of the home read and analysed, or this thread's analysis of the same bytes."""
    global _kept_bytes
    absolute, _file = home_relative(path, root)
    try:
        info = absolute.stat()
        data = (absolute.read_bytes() if stat.S_ISREG(info.st_mode)
                and info.st_size <= _KEPT_FILE_BYTES else None)  # fmt: skip
    except OSError:
        data = None  # read_table says why
    if data is None:
        return analyse(read_table(path, root=root, sheet=sheet), descriptions)
    key = (threading.get_ident(), os.fspath(absolute), os.fspath(root), sheet,
           tuple(descriptions), hashlib.blake2b(data, digest_size=16).digest())  # fmt: skip
    with _KEPT_GUARD:
        kept = _KEPT.get(key)
        if kept is not None:
            _KEPT.move_to_end(key)
            return kept[1]
    # Analysed from the very bytes hashed: a change after they were read is never kept under them.
    result = analyse(read_table(path, root=root, sheet=sheet, data=data), descriptions)
    with _KEPT_GUARD:
        if key not in _KEPT:
            _KEPT[key] = (len(data), result)
            _kept_bytes += len(data)
        while _kept_bytes > _KEPT_BYTES:
            _, (size, _analysis) = _KEPT.popitem(last=False)
            _kept_bytes -= size
    return result


def analyse(table: Table, descriptions: Sequence[str] = ()) -> Analysis:
    """A table's profile and the readings behind it."""
    cells = {name: table.cells(name) for name in table.columns}
    definitions = find_definitions(descriptions, table.columns)
    spoken = prose_units(descriptions, [c for c in table.columns if c not in definitions])
    read = {name: read_numbers(column) for name, column in cells.items()}
    numbers = {name: n for name, n in read.items() if n.numeric}
    named = {name for name in table.columns if identifier_name(name)}
    found = detect(read, named)
    time_names = set(found.axis.columns) if found else set()
    restated = calendar_parts(read, found)
    counted = says_counts(descriptions)
    # Dates are distinct in every row too: codes are looked for once the time is known.
    identifiers = named | {name for name in table.columns if name not in time_names
                           and identifies_rows(name, cells[name], read[name])}
    notes = list(table.notes)
    # An empty column named by a period is still one of the periods of a wide table.
    candidates = [n for n in table.columns if n not in identifiers and n not in time_names
                  and (n in numbers or read[n].filled == 0)]
    wide_time = time_columns(candidates, found)
    members = set(wide_time.columns) if wide_time else set()
    axis = wide_time.axis if wide_time else (found.axis if found else None)
    if axis is not None and restated:
        axis = axis.model_copy(update={"restated": [n for n in table.columns if n in restated]})
    columns: list[ColumnProfile] = []
    remarks: dict[str, list[str]] = {}
    for name in table.columns:
        role = ("identifier" if name in identifiers else "time" if name in time_names
                else "category" if name in restated
                else "measure" if name in numbers or name in members
                else category_or_text(read[name]))
        column, remarks[name] = _column(name, role, cells[name], read[name], definitions.get(name),
                                        counted)
        if column.role == "measure" and column.unit is None and name in spoken:
            column = column.model_copy(update={"unit": spoken[name]})
            kind = kind_of_unit(spoken[name])
            if column.kind == "other" and kind is not None:
                # Prose that gives the unit decides a kind the column's own words left open.
                column = column.model_copy(update={"kind": kind, "aggregation": AGGREGATION[kind]})
                remarks[name] = [r for r in remarks[name] if not r.startswith("aggregation of")]
        columns.append(column)
    wide = _wide_group(wide_time, columns, found, definitions)
    notes += _notes(table.columns, remarks, wide)
    shape = _shape(columns, wide, found)
    categories = {c.name: read[c.name].distinct[:MAX_CATEGORY_VALUES]
                  for c in columns if c.role == "category"}
    result = TableProfile(
        file=table.file, sheet=table.sheet, format=table.kind, rows=table.rows, columns=columns,
        time=axis, shape=shape, wide=wide, categories=categories, notes=notes,
    )
    return Analysis(table, result, numbers, read, found.times if found else None, wide_time,
                    definitions)


def _notes(names: list[str], remarks: dict[str, list[str]], wide: WideGroup | None) -> list[str]:
    """The columns' notes; a wide group's members speak once, as a group."""
    notes = [r for name in names if wide is None or name not in wide.columns
             for r in remarks[name]]
    if wide is not None:
        first, last = wide.columns[0], wide.columns[-1]
        what = "periods" if wide.axis == "time" else "categories"
        notes.append(f"{len(wide.columns)} columns ({first} … {last}) read as {what} of one "
                     f"measure (a wide table)")
        if any(r.startswith("aggregation of") for n in wide.columns for r in remarks[n]):
            notes.append(f"aggregation of the values in {first} … {last} assumed "
                         f"{wide.aggregation}: their kind is not stated")
    return notes


def _wide_group(wide_time: WideTime | None, columns: list[ColumnProfile], found: Found | None,
                definitions: dict[str, Definition]) -> WideGroup | None:
    """The columns that are periods or categories of one measure, if the table has them."""
    if wide_time is not None:
        members = wide_time.columns
    else:
        measures = [c for c in columns if c.role == "measure"]
        members = category_group(measures, bool(found) or any(
            c.role == "category" for c in columns), definitions) or _named_by_values(
            measures, columns)
    if not members:
        return None
    first = next(c for c in columns if c.name == members[0])
    kinds = {c.kind for c in columns if c.name in members}
    kind: Kind = first.kind if len(kinds) == 1 and first.kind else "other"
    aggregation = first.aggregation if len(kinds) == 1 and first.aggregation else "mean"
    return WideGroup(columns=members, axis="time" if wide_time else "category",
                     name="time" if wide_time else "series", label="value", kind=kind,
                     aggregation=aggregation, unit=first.unit)


_TOTAL = re.compile(r"(?:total|sum|all|overall)\b", re.IGNORECASE)


def _named_by_values(measures: list[ColumnProfile], columns: list[ColumnProfile]) -> list[str]:
    """Measure columns named by the values of a category column: categories of one measure
    (an election's `Coderre, Bergeron, Joly` beside a `winner` column holding those names)."""
    names = {c.name for c in measures}
    for column in columns:
        values = set(column.examples)
        if column.role != "category" or column.distinct != len(values) or len(values) < 2:
            continue  # every value must be seen (a column of few values shows them all)
        if values <= names:  # the named columns, and their like that never won
            kinds = {(c.kind, c.unit) for c in measures if c.name in values}
            return [c.name for c in measures if c.name in values or (
                (c.kind, c.unit) in kinds and not _TOTAL.match(c.name))]
    return []


def _shape(columns: list[ColumnProfile], wide: WideGroup | None,
           found: Found | None) -> Literal["long", "wide", "single"]:
    """`wide` (a measure spread over columns), `long` (categories repeat periods), or `single`."""
    if wide is not None:
        return "wide"
    has_categories = any(c.role == "category" for c in columns)
    if found is not None and has_categories and found.axis.periods < int(found.times.valid.sum()):
        return "long"
    return "single"


def _label_of_name(name: str) -> str:
    """A header read as words, without a unit it ends with (`revenue_eur` → `revenue`: the
    unit is said beside the figure)."""
    words = name.replace("_", " ").split()
    unit = unit_words_at_end(words)
    if 0 < unit < len(words):
        words = words[:-unit]
    return " ".join(words) or name


def _column(name: str, role: str, cells: pd.Series, numbers: Numbers,
            definition: Definition | None, counted: bool) -> tuple[ColumnProfile, list[str]]:
    """The profile of one column, and the notes it gives the table."""
    notes: list[str] = []
    distinct = numbers.distinct
    described = definition is not None and definition.label and role != "time"
    label = definition.label if described and definition else _label_of_name(name)
    base: dict[str, object] = {
        "name": name, "role": role, "label": label, "distinct": len(distinct),
        "missing": int(len(numbers.codes) - numbers.filled), "examples": distinct[:_EXAMPLES],
    }
    if role in ("measure", "time") and numbers.numeric:
        values = numbers.values.dropna()
        base.update(minimum=float(values.min()), maximum=float(values.max()))
    if role == "measure":
        kind, aggregation, decided = measure_kind(name, definition, numbers, numbers.values,
                                                    counted=counted)
        base.update(kind=kind, aggregation=aggregation, decimals=numbers.decimals,
                    unit=measure_unit(name, definition, numbers))
        base["missing"] = int(len(cells) - numbers.parsed)
        if not decided:
            notes.append(f"aggregation of {name} assumed {aggregation}: its kind is not stated")
        if numbers.filled > numbers.parsed:
            notes.append(f"{name}: {numbers.filled - numbers.parsed} cells that are not numbers "
                         f"read as missing")
        if numbers.decimal_comma:
            notes.append(f"{name}: decimals written with a comma")
    return ColumnProfile.model_validate(base), notes


__all__ = ["Analysis", "TimeAxis", "analyse", "profile"]
