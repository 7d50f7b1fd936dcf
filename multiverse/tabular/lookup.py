"""One cell of a table picked by selectors, quoted as written, with its line; or the nearest.

A time selector matches a period in any of its forms (`2017` a year column or a yearly date,
`2017Q3` / `Q3 2017` year + quarter columns, `March 2017` / `2017-03` a month); a category
selector matches a value ignoring case, then by its words (`renewables` → `Renewables`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from multiverse.tabular.cells import RANK, Moment, key_of, label_of, numbers_in, parse_label
from multiverse.tabular.dataset import (
    Unanswerable,
    find_column,
    frame_times,
    is_time,
    label_columns,
    load,
    long_rows,
    matching_values,
    plain,
)
from multiverse.tabular.models import (
    Citation,
    ComputeQuery,
    Fact,
    LookupAnswer,
    LookupQuery,
    NearestCell,
)
from multiverse.tabular.profiling import Analysis

if TYPE_CHECKING:
    import pandas as pd

MAX_NEAREST = 3


def lookup(query: LookupQuery, *, root: Path, descriptions: Sequence[str] = ()) -> LookupAnswer:
    """The cell the selectors pick in a column, as written, with its number, unit and line."""
    return lookup_in(load(query.file, query.sheet, root, descriptions), query)


def lookup_in(analysis: Analysis, query: LookupQuery) -> LookupAnswer:
    """A lookup in an analysed table."""
    try:
        measures = _columns(analysis, query.column)
        frame = long_rows(analysis, measures)
        moment, when = _time_selector(analysis, query.selectors)
        others = {k: v for k, v in query.selectors.items() if k not in when}
        by_label = _by_labels(analysis, frame, others)
    except Unanswerable as problem:
        return LookupAnswer(query=query, found=False, note=problem.reason)
    frame["_grain"] = frame.attrs.get("grain") or "year"
    in_time = _in_moment(frame, moment) if moment is not None else None
    rows = frame[by_label & in_time] if in_time is not None else frame[by_label]
    rows = rows[rows["_value"].notna()]
    if len(rows) == 1:
        return _answer(analysis, query, rows.iloc[0], others)
    if len(rows) > 1:
        note = (f"{len(rows)} cells match; a selector for "
                f"{_missing_selector(analysis, query)} picks one")
        return LookupAnswer(query=query, found=False, note=note,
                            nearest=_cells(analysis, rows.head(MAX_NEAREST), query))
    nearest = _nearest(analysis, frame, by_label, in_time, moment, query)
    return LookupAnswer(query=query, found=False, nearest=nearest,
                        note="no cell matches all the selectors")


def _columns(analysis: Analysis, name: str) -> list[str]:
    """The columns a lookup reads: one, or a wide table's period columns melted."""
    wide = analysis.profile.wide
    if wide is not None and plain(name) in (plain(wide.name), plain(wide.label), "value", "values"):
        return list(wide.columns)
    column = find_column(analysis, name)
    if column is None:
        columns = ", ".join(analysis.table.columns)
        raise Unanswerable(f"{analysis.table.file} has no column {name!r} (its columns: {columns})")
    return [column]


def _time_selector(analysis: Analysis, selectors: dict[str, str]) -> tuple[Moment | None, set[str]]:
    """The period the time selectors name together, and which selectors they were."""
    axis = analysis.profile.time
    keys = [k for k in selectors if is_time(analysis, k)]
    if axis is None or not keys:
        return None, set()
    parts = [selectors[k] for k in sorted(keys, key=lambda k: _position(axis.columns, k))]
    text = " ".join(parts)
    if "quarter" in axis.form and len(parts) == 2 and parts[1].strip().isdigit():
        text = f"{parts[0]}Q{parts[1].strip()}"  # year 2017 and quarter 3
    elif "month" in axis.form and len(parts) >= 2 and parts[1].strip().isdigit():
        text = "-".join(p.strip().zfill(2) for p in parts)
    moment = (parse_label(text) or parse_label(text.replace(" ", "-"))
              or parse_label(" ".join(reversed(parts))))  # `2017` + `March`: March 2017
    if moment is None:
        raise Unanswerable(f"{text!r} is not a period (e.g. {axis.first} or {axis.last})")
    return moment, set(keys)


def _position(columns: list[str], key: str) -> int:
    """Where a time selector's column sits in the axis (a year before its quarter)."""
    lowered = [plain(c) for c in columns]
    return lowered.index(plain(key)) if plain(key) in lowered else -1


def _in_moment(frame: pd.DataFrame, moment: Moment) -> pd.Series:
    """Long rows within the period a moment names (none when it is finer than the data)."""
    import pandas as pd

    grain = frame.attrs.get("grain") or "year"
    at = "day" if moment.grain == "second" else moment.grain
    if RANK[at] > RANK[grain]:
        return pd.Series(False, index=frame.index)
    keys = frame_times(frame, grain).keys(at)
    return pd.Series((keys == key_of(moment, at)) & frame["_t"].to_numpy(dtype=bool),
                     index=frame.index)


def _by_labels(analysis: Analysis, frame: pd.DataFrame, selectors: dict[str, str]) -> pd.Series:
    """Long rows whose label columns match the category selectors."""
    import pandas as pd

    keep = pd.Series(True, index=frame.index)
    wide = analysis.profile.wide
    for key, wanted in selectors.items():
        if wide is not None and wide.axis == "category" and plain(key) == plain(wide.name):
            column = "_source"
        else:
            found = find_column(analysis, key)
            if found is None or found not in frame.columns:
                columns = ", ".join(["time", *label_columns(analysis)])
                raise Unanswerable(f"{analysis.table.file} has no column {key!r} to select by "
                                   f"(its selectors: {columns})")
            column = found
        present = [str(v) for v in frame[column].unique()]
        keep &= frame[column].isin(matching_values(wanted, present))
    return keep


def _answer(analysis: Analysis, query: LookupQuery, row: pd.Series,
            categories: dict[str, str]) -> LookupAnswer:
    """The answer of the one matching cell."""
    source = str(row["_source"])
    text, number = analysis.cell(source, int(row["_row"]))
    column = analysis.profile.column(source)
    wide = analysis.profile.wide
    grouped = wide is not None and source in wide.columns and wide.axis == "time"
    unit = wide.unit if grouped and wide is not None else column.unit if column else None
    label = wide.label if grouped and wide is not None else column.label if column else source
    line = int(row["_line"])
    where: dict[str, str] = {}
    for key in categories:
        name = find_column(analysis, key)
        where[key] = str(row[name] if name is not None and name in row.index else row["_source"])
    return LookupAnswer(
        query=query, found=True, text=text, number=number.value if number else None, unit=unit,
        label=label, decimals=number.decimals if number else None, where=where,
        period=_row_period(row) if bool(row["_t"]) else None,
        citation=Citation(file=analysis.table.file, sheet=analysis.table.sheet, first=line,
                          last=line, rows=1),
    )


def _row_period(row: pd.Series) -> str:
    """A long row's period label at the data's grain."""
    grain = str(row.get("_grain", "year"))
    moment = Moment(grain, "", int(row["_y"]), int(row["_m"]), int(row["_d"]), int(row["_s"]))
    return label_of(grain, key_of(moment, grain))


def _missing_selector(analysis: Analysis, query: LookupQuery) -> str:
    """What to add to a lookup that matches several cells."""
    named = {plain(k) for k in query.selectors}
    missing = [c for c in label_columns(analysis) if plain(c) not in named]
    if analysis.profile.time is not None and not any(is_time(analysis, k) for k in query.selectors):
        missing.insert(0, "time")
    return " or ".join(missing[:2]) or "a finer period"


def _nearest(analysis: Analysis, frame: pd.DataFrame, by_label: pd.Series,
             in_time: pd.Series | None, moment: Moment | None,
             query: LookupQuery) -> list[NearestCell]:
    """Cells near a missing one: the same category in other periods, the same period in other
    categories."""
    filled = frame["_value"].notna()
    if moment is not None and in_time is not None:
        same_label = frame[by_label & filled & frame["_t"].astype(bool)]
        if len(same_label):
            grain = frame.attrs.get("grain") or "year"
            at = moment.grain if RANK.get(moment.grain, 9) <= RANK[grain] else grain
            target = key_of(moment, at)
            distance = (frame_times(same_label, grain).keys(at) - target).__abs__()
            return _cells(analysis, same_label.assign(_distance=distance).sort_values(
                ["_distance", "_order"]).head(MAX_NEAREST), query)
        return _cells(analysis, frame[in_time & filled].head(MAX_NEAREST), query)
    return _cells(analysis, frame[filled].head(MAX_NEAREST), query)


def _cells(analysis: Analysis, rows: pd.DataFrame, query: LookupQuery) -> list[NearestCell]:
    """Cells with the selectors that pick each."""
    grain = rows.attrs.get("grain") or "year"
    time_key = next((k for k in query.selectors if is_time(analysis, k)), "time")
    cells: list[NearestCell] = []
    labels = [c for c in label_columns(analysis) if c in rows.columns]
    for _, row in rows.iterrows():
        selectors = {c: str(row[c]) for c in labels if str(row[c])}
        if bool(row["_t"]):
            moment = Moment(grain, "", int(row["_y"]), int(row["_m"]), int(row["_d"]),
                            int(row["_s"]))
            selectors[time_key] = label_of(grain, key_of(moment, grain))
        if analysis.profile.wide is not None and analysis.profile.wide.axis == "category":
            selectors[analysis.profile.wide.name] = str(row["_source"])
        text, number = analysis.cell(str(row["_source"]), int(row["_row"]))
        cells.append(NearestCell(selectors=selectors, text=text,
                                 number=number.value if number else None, line=int(row["_line"])))
    return cells


def table_fact(analysis: Analysis, query: ComputeQuery) -> Fact:
    """A fact of the table's make-up: how many different values a column holds, or its
    columns (their names are the fact's label); Unanswerable for a column it lacks."""
    table = analysis.table
    lines = table._lines
    if query.kind == "columns":
        citation = Citation(file=table.file, sheet=table.sheet, first=1, last=1, rows=1)
        wide = analysis.profile.wide
        names = [c for c in table.columns if wide is None or c not in wide.columns[1:-1]]
        if wide is not None and len(wide.columns) > 2:  # a wide group said as one range
            at = names.index(wide.columns[0])
            names[at:at + 2] = [f"{wide.columns[0]} … {wide.columns[-1]}"]
        fact = Fact(kind="columns", measure="", label=", ".join(names),
                    value=len(table.columns), period="", citation=citation, decimals=0)
        return fact.model_copy(update={"figures": numbers_in(fact.sentence("en"))})
    column = find_column(analysis, query.measure)
    if column is None:
        raise Unanswerable(f"{table.file} has no column {query.measure!r} (its columns: "
                           f"{', '.join(table.columns)})", column=query.measure)
    if query.filters or query.start or query.end:
        raise Unanswerable("different values are counted over the whole table, not some rows")
    cells = table.cells(column).astype(str).str.strip()
    filled = [index for index, text in enumerate(cells) if text and text.lower() != "nan"]
    if not filled:
        raise Unanswerable(f"{column!r} in {table.file} holds no values")
    profile = analysis.profile.column(column)
    citation = Citation(file=table.file, sheet=table.sheet, first=lines[filled[0]],
                        last=lines[filled[-1]], rows=len(filled))
    fact = Fact(kind="distinct", measure=column, label=profile.label if profile else column,
                value=cells.iloc[filled].nunique(), period="", citation=citation, decimals=0)
    return fact.model_copy(update={"figures": numbers_in(fact.sentence("en"))})
